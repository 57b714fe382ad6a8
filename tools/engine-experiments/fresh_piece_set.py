"""What the fresh-merge experiments share: the distinct multi-token pieces of a text, the
engine's own merge loop over them, and a best-of timer that flushes the core's caches first.

``merge_lanes.py`` and ``pair_memo.py`` import it (run them from the repository root).
"""

import time
from typing import NamedTuple

import numba
import numpy as np

from toktier import load
from toktier.bench.engine_profile import _pretokenize_all
from toktier.campaigns import corpus
from toktier.engine import cpu

MAXL = 24  # bytes: the longest piece kept (the engine's small-piece merge loop)
merges_only = cpu.RULES.merges_only


def over_pieces(merge, nrt=False):
    """A compiled loop of ``merge`` (``merges_only``'s signature) over every piece, one at a
    time, ``offs`` its outputs' starts.  Without NRT by default, as the rules: inlined into a
    function compiled with NRT, ``merges_only`` loses a third of its speed
    (``results/runs/engine-ab/merge-calls.txt``)."""

    @numba.njit(cache=False, nogil=True, _nrt=nrt)
    def run(u8, starts, ends, bt, sym, rank, nxt, prv, heap, out, offs):
        n = 0
        for p in range(starts.size):
            offs[p] = n
            n = merge(u8, starts[p], ends[p], bt, sym, rank, nxt, prv, heap, out, n)
        offs[starts.size] = n
        return n

    return run


seq_all = over_pieces(merges_only)  # the engine's merges_only over every piece


class PieceSet(NamedTuple):
    u8: np.ndarray  # the text's UTF-8
    st: np.ndarray  # byte start of each distinct multi-token piece
    en: np.ndarray  # ... and its end
    bt: object  # the engine's BPE tables
    scratch: tuple  # sym, rank, nxt, prv, heap for merges_only
    out: np.ndarray  # room for every piece's tokens
    offs: np.ndarray  # room for their starts


def piece_bounds(eng, u8: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Byte (starts, ends) of the pieces the engine's pre-tokenizer cuts the UTF-8 ``u8`` into."""
    t = eng.tables
    cps = np.empty(u8.size, np.uint32)
    cs = np.empty(u8.size + 1, np.int64)
    fl = np.empty(u8.size, np.uint16)
    n = cpu._prepare(u8, t.bits, cps, cs, fl)
    ends = np.empty(n + 1, np.int64)
    e = ends[: _pretokenize_all(cps, fl, t.fold, t.family_code, n, ends, eng.bpe)]
    return cs[np.concatenate([[0], e[:-1]])], cs[e]


def first_of_each(u8: np.ndarray, bs: np.ndarray, be: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Indices of the pieces ``mask`` selects, each distinct piece's first occurrence only."""
    seen, idx = set(), []
    for i in np.flatnonzero(mask):
        key = bytes(u8[bs[i] : be[i]])
        if key not in seen:
            seen.add(key)
            idx.append(i)
    return np.array(idx, dtype=np.int64)


def distinct_multi_pieces(name: str, text_kind: str = "multi", chars: int = 1_000_000) -> PieceSet:
    """The distinct pieces of 2..MAXL bytes that merge into 2+ tokens, in ``chars`` characters
    of pycountry's catalogs (``multi``) or CPython's stdlib (``code``): what an empty piece
    cache merges once each (single-token pieces dropped: the short-piece map answers them)."""
    eng = cpu.engine_for(load(name))
    bt = eng.bpe
    docs = corpus.pycountry_documents() if text_kind == "multi" else corpus.stdlib_documents()
    u8 = np.frombuffer("".join(docs)[:chars].encode(), np.uint8)
    bs, be = piece_bounds(eng, u8)
    lengths = be - bs
    idx = first_of_each(u8, bs, be, (lengths >= 2) & (lengths <= MAXL))
    scratch = (*(np.empty(4096, np.int64) for _ in range(4)), np.empty(3 * 4096, np.int64))
    st, en = bs[idx].astype(np.int64), be[idx].astype(np.int64)
    out = np.empty(int(lengths[idx].sum()) + 16, np.int64)
    offs = np.empty(st.size + 1, np.int64)
    seq_all(u8, st, en, bt, *scratch, out, offs)
    multi = np.diff(offs) > 1
    return PieceSet(u8, st[multi], en[multi], bt, scratch, out, offs)


_junk = np.ones(64 << 20, np.uint8)


def best_of(f, r=5) -> float:
    """Best of ``r`` calls of ``f``, in ms, each after a 64 MB sweep (tables out of the core's
    caches, as fresh text meets them)."""
    b = 1e9
    for _ in range(r):
        _junk[::64] += 1
        t0 = time.perf_counter()
        f()
        b = min(b, time.perf_counter() - t0)
    return b * 1e3
