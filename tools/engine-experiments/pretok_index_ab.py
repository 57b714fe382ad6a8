"""The automaton's pair index, unsigned (``rules.dfa_segment``) against signed, and its floor.

numba adds a negative-index wraparound (a compare and a select) to every array read whose
index is a signed integer LLVM cannot prove non-negative.  In ``dfa_segment`` that read is
the chain of the loop (the next state comes out of it and indexes the next read), so the
select sits on the critical path.  This tool times, in one process, alternated, on one 1M
slice of ``bench-engine-targets``' corpus (the pieces compared equal first):

- ``library``: ``rules.dfa_segment`` as compiled for the CPU (unsigned index);
- ``signed``: the same loop with the index built from ``int`` (the code before 2026-11-30);
- ``chain only``: the pair reads and the state alone (no boundaries, no slow steps): the
  latency floor of the chain;
- ``no chain``: the same reads from a fixed state: what the reads cost without the chain.

Usage: ``.venv/bin/python tools/engine-experiments/pretok_index_ab.py [NAME] [KIND]``.
"""

import sys
import time

import numba
import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu as C
from toktier.registry import load
from toktier.textcheck import utf8_array

dfa_segment = C.RULES.dfa_segment
boundaries_behind = C.RULES.boundaries_behind


@numba.njit(nogil=True)
def library(cps, fl, fold, family, classes, table, pairs, hi, ends):
    return dfa_segment(cps, fl, fold, family, classes, table, pairs, 0, hi, ends, 0)


@numba.njit(nogil=True)
def signed(cps, fl, fold, family, classes, table, pairs, hi, ends):
    """``dfa_segment``'s loop with a signed pair index (no DEFER: the cl100k lineage)."""
    n = 0
    st = 0
    i = 0
    while i < hi:
        if i + 1 < hi:
            y = pairs[int(st) + (int(classes[cps[i]]) << 5) + int(classes[cps[i + 1]])]
            if (y & 4) == 0:
                ends[n] = i
                n += y & 1
                ends[n] = i + 1
                n += (y >> 1) & 1
                st = y & ~7
                i += 2
                continue
        x = table[(st >> 5) + classes[cps[i]]]
        if x & 30:
            n = boundaries_behind(cps, x, i, ends, n)
        ends[n] = i
        n += x & 1
        st = (x & ~31) << 5
        i += 1
    if (hi > 0 and n == 0) or (n > 0 and ends[n - 1] < hi):
        n = boundaries_behind(cps, table[(st >> 5) + 31], hi, ends, n)
        ends[n] = hi
        n += 1
    return n


@numba.njit(nogil=True)
def pair_reads(cps, classes, pairs, hi, chained):
    """The pair reads alone: each from the state the previous one gave (``chained``), or all
    from one fixed state (the same reads without the chain)."""
    st = 0 if chained else 1024
    i = 0
    acc = 0
    while i + 1 < hi:
        y = pairs[np.uint64(st) + (np.uint64(classes[cps[i]]) << np.uint64(5))
                  + np.uint64(classes[cps[i + 1]])]  # fmt: skip
        acc += y & 3
        if chained:
            st = y & ~7
        i += 2
    return acc


def main(name: str, kind: str) -> None:
    eng = C.CpuEngine(load(name))
    text = slices(corpora()[kind], 1_000_000, 8)[3]
    p = eng.prepare(utf8_array(text))
    t, bt = eng.tables, eng.bpe
    if bt.pre_pairs.size <= 1:
        raise SystemExit(f"{name} has no automaton")
    a, b = np.empty(p.n + 2, np.int64), np.empty(p.n + 2, np.int64)
    args = (p.cps, p.fl, t.fold, t.family_code, bt.pre_classes, bt.pre_table, bt.pre_pairs, p.n)
    na, nb = library(*args, a), signed(*args, b)
    if name not in ("llama3", "qwen3", "qwen3.6", "cl100k"):
        print("(the signed copy has no DEFER branch: pieces compared only where it has none)")
    elif na != nb or not np.array_equal(a[:na], b[:nb]):
        raise SystemExit("the two loops' pieces differ")
    fns = {
        "library (unsigned)": lambda: library(*args, a),
        "signed": lambda: signed(*args, b),
        "chain only": lambda: pair_reads(p.cps, bt.pre_classes, bt.pre_pairs, p.n, True),
        "no chain": lambda: pair_reads(p.cps, bt.pre_classes, bt.pre_pairs, p.n, False),
    }
    res = {k: [] for k in fns}
    for r in range(21):
        for k, f in list(fns.items()) if r % 2 else list(fns.items())[::-1]:
            t0 = time.perf_counter()
            f()
            res[k].append((time.perf_counter() - t0) * 1e3)
    print(f"{name} {kind}: {p.n:,} characters, {na:,} pieces; P50 of 21, alternated")
    for k, v in res.items():
        print(f"  {k:20s} {np.median(v):6.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "llama3",
         sys.argv[2] if len(sys.argv) > 2 else "code")  # fmt: skip
