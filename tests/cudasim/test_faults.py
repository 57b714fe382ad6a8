"""The checks can fail: break the chain on purpose and the reference comparison catches it.

Each fault replaces one device function or kernel where the chain looks it up
(module globals; the simulator resolves them at every call): the boundary
predicate, the merge order of the warp/block BPE, the span lifting.  Also: a
tokenizer the engine has no rules for (WordPiece) is refused.
"""

from __future__ import annotations

import pytest
from numba import cuda

import toktier
from toktier.engine import gpu
from toktier.engine.gpu import bpe, stages
from toktier.engine.tables import EngineUnsupported

from .checks import check_ids, check_split

TEXT = "Hello world, it's " + "x" * 40 + " done  \n \u4e2d\u6587\U0001f600\u0434\u043e"


@cuda.jit
def k_cut_everywhere(meta, cps, fl, text, lmark, cut):
    for p in range(cuda.grid(1), meta[gpu.M_N], cuda.gridsize(1)):
        cut[p] = 1


_real_warp_min = bpe.warp_min


def highest_rank_first(best):
    r = _real_warp_min(-best if best != gpu.NONE_KEY else gpu.NONE_KEY)
    return r if r == gpu.NONE_KEY else -r


def span_ends_at_first_byte(char_start, b, last, ci, cj):
    """Like ``rules.token_chars``, but a token's span ends at its first byte's character."""
    while char_start[ci + 1] <= b:
        ci += 1
    return ci, ci


FAULTS = {
    "predicate": (stages, "k_cuts", k_cut_everywhere),
    "merge order": (bpe, "warp_min", highest_rank_first),
    "spans": (stages, "token_chars", span_ends_at_first_byte),
}


def _check(eng):
    tok = eng.tokenizer
    ids, s, e = eng.encode(TEXT)
    check_ids(tok, TEXT, ids, s, e, "faults")
    ((s, e),) = eng.split_batch([TEXT])
    check_split(tok, TEXT, s, e)


def test_unbroken_chain_passes(engine):
    _check(engine("llama3"))


@pytest.mark.parametrize("fault", list(FAULTS))
def test_broken_chain_is_caught(fault, engine, monkeypatch):
    module, attr, broken = FAULTS[fault]
    monkeypatch.setattr(module, attr, broken)
    with pytest.raises(AssertionError):
        _check(engine("llama3"))


def test_tokenizer_without_rules_is_refused():
    with pytest.raises(EngineUnsupported):
        gpu.GpuEngine(toktier.load("bert-uncased"))  # WordPiece: no engine rules
