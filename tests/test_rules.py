"""One algorithm source (issue #12): the rules the CPU engine and the GPU kernels share.

The class-bit constants the rules test against must be the probed tables' own
bits; the shared rule functions behave as specified on the CPU (their device
build runs under the simulator in ``tests/cudasim``); and both engines really
call the one copy in ``rules.py`` instead of a copy of their own.
"""

from __future__ import annotations

import numpy as np
import pytest

from toktier.engine import cpu, rules
from toktier.families import classes


def test_class_bits_are_the_probed_tables_bits():
    names = {
        "L": "B_L", "N": "B_N", "M": "B_M", "Lu": "B_LU", "Lt": "B_LT", "Ll": "B_LL",
        "Lm": "B_LM", "Lo": "B_LO", "P": "B_P", "S": "B_S", "WS": "B_WS",
    }  # fmt: skip
    assert set(names) == set(classes.CLASS_BITS)
    for cls, const in names.items():
        assert getattr(rules, const) == classes.CLASS_BITS[cls][0], cls
    assert rules.NFC_UNSAFE == classes.NFC_UNSAFE


def test_gpu_constants_are_the_rules_constants():
    from toktier.engine import gpu

    assert gpu.NFC_UNSAFE == rules.NFC_UNSAFE == classes.NFC_UNSAFE
    assert gpu.NO_RANK == rules.NO_RANK


def test_both_engines_call_the_shared_rules():
    """The CPU's cut predicate and the GPU's stage and BPE kernels use ``rules``' functions."""
    from toktier.engine.gpu import bpe, device, stages

    assert cpu._certified_cut is cpu.RULES.cut_ok
    assert cpu.utf8_decode is cpu.RULES.utf8_decode
    for module, names in (
        (stages, ["cut_ok", "decode_at", "literal_at", "pretokenize_segment", "token_chars"]),
        (bpe, ["bpe_merge", "merge_link", "pair_code", "vocab_lookup"]),
    ):
        for name in names:
            assert getattr(module, name) is getattr(device.DEVICE, name), (module, name)
    assert cpu.bpe_merge is cpu.RULES.bpe_merge  # the GPU's thread-per-piece BPE is this one
    assert device.BpeTables is rules.BpeTables
    assert not hasattr(bpe, "_warp_min_sim")  # the simulator runs the shuffle reduction


def test_decode_at_decodes_every_utf8_length():
    text = "a\u00e9\u4e2d\U0001f600z\u07ff\u0800\uffff\U00010000\U0010ffff"
    u8 = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    b, got = 0, []
    while b < u8.size:
        cp, k = cpu.RULES.decode_at(u8, b)
        got.append(cp)
        b += k
    assert got == [ord(c) for c in text]
    cps = np.empty(u8.size, np.uint32)
    starts = np.empty(u8.size + 1, np.int64)
    n = cpu.RULES.utf8_decode(u8, cps, starts)
    assert cps[:n].tolist() == got and starts[n] == u8.size


def test_cut_ok_edges_insides_and_pairs():
    cps = np.array([97, 98, 0x301, 99], dtype=np.uint32)
    fl = np.array([1, 1, classes.NFC_UNSAFE, 1], dtype=np.uint16)
    class_of = np.zeros(0x110000, dtype=np.uint8)
    class_of[99] = 1
    stable = np.array([[False, True], [True, True]])
    ok = cpu.RULES.cut_ok
    assert ok(0, 4, False, True, cps, fl, class_of, stable, False)  # the text's ends
    assert ok(4, 4, False, True, cps, fl, class_of, stable, False)
    assert not ok(1, 4, False, False, cps, fl, class_of, stable, False)  # unstable pair (0, 0)
    assert ok(1, 4, True, False, cps, fl, class_of, stable, False)  # a literal edge
    assert not ok(3, 4, False, True, cps, fl, class_of, stable, False)  # inside a literal
    assert ok(3, 4, False, False, cps, fl, class_of, stable, False)  # stable pair (0, 1)
    assert not ok(3, 4, False, False, cps, fl, class_of, stable, True)  # NFC-unsafe neighbour


def test_token_chars_lifts_byte_spans_to_characters():
    text = "a\u4e2db"  # bytes: a | 3 bytes | b
    starts = np.array([0, 1, 4, 5], dtype=np.int64)
    spans, ci, cj, b = [], 0, 0, 0
    for nbytes in (2, 1, 2):  # "a" + a first byte, a middle byte, the last byte + "b"
        last = b + nbytes - 1
        ci, cj = cpu.RULES.token_chars(starts, b, last, ci, cj)
        spans.append((ci, cj + 1))
        b = last + 1
    assert spans == [(0, 2), (1, 2), (1, 3)] and len(text) == 3


@pytest.mark.parametrize("k", [0, 1, 2])
def test_merge_link_splices_the_list(k):
    sym = np.array([10, 11, 12, 13], dtype=np.int64)
    nxt = np.array([1, 2, 3, -1], dtype=np.int64)
    prv = np.array([-1, 0, 1, 2], dtype=np.int64)
    nj = cpu.RULES.merge_link(sym, nxt, prv, k, 99)
    assert sym[k] == 99 and sym[k + 1] == -1 and nxt[k] == nj
    assert nj == (k + 2 if k + 2 < 4 else -1)
    if nj >= 0:
        assert prv[nj] == k


def test_a_constant_argument_compiles_no_literal_specialization():
    """``jit.unliteral``: a callee called with constants from compiled code is compiled for
    the plain types, once, and answers as before."""
    import numba
    from numba.core import types

    from toktier.engine import jit

    plain = jit.unliteral(numba.njit)(lambda x, flag: x + 1 if flag else x - 1)
    literal = numba.njit(lambda x, flag: x + 1 if flag else x - 1)

    @numba.njit
    def calls(f):
        return f(0, True) + f(5, False) + f(7, True)

    assert calls(plain) == calls(literal) == 1 + 4 + 8
    assert [any(isinstance(a, types.Literal) for a in sig) for sig in plain.signatures] == [False]
    assert any(isinstance(a, types.Literal) for sig in literal.signatures for a in sig)


def test_the_engine_and_planner_kernels_compile_no_literal_specialization():
    """The rules (``cpu.RULES``) and the repair planner's kernels (``engine.splice``) are
    compiled for plain argument types when compiled code calls them with constants, as the
    piece loop (``shared_tail``'s ``dmax`` and ``slash``) and the planner (a search from
    ``0``) do.  The caller here is compiled fresh in this process, so its callees are typed
    here whatever the on-disk cache holds (a kernel loaded from the cache types nothing)."""
    import numba
    from numba.core import types

    from toktier.engine import splice

    shared_tail, cl_next, lower_bound = (
        cpu.RULES.shared_tail, cpu.RULES.cl_next, splice.lower_bound
    )  # fmt: skip

    @numba.njit(cache=False)
    def calls(cps, fl, keys):
        a = shared_tail(cps, fl, 0, 4, 3, 0, False) + shared_tail(cps, fl, 1, 4, 1, 7, True)
        b = cl_next(cps, fl, cps, 0, 4, 3, False)
        return a + b + lower_bound(keys, 0, 4, 3)

    cps = np.array([49, 50, 32, 97], dtype=np.uint32)
    fl = np.zeros(4, dtype=np.uint16)
    calls(cps, fl, np.arange(4, dtype=np.int64))
    for fn in (shared_tail, cl_next, lower_bound):
        assert fn.signatures, fn
        for sig in fn.signatures:
            assert not any(isinstance(a, types.Literal) for a in sig), (fn, sig)
