"""Fresh-piece merges, two ideas measured and not kept (results/runs/engine-ab/fresh-merges.txt).

1. K interleaved lanes: each lane merges one piece
after a merge it prefetches the rows of
   the two new pairs and the next lane runs, so the lookups of K pieces overlap.
2. No pair filter: every pair lookup probes the merge table directly.

Both against the engine's own one-piece-at-a-time merges (``merges_only``) over the distinct
multi-token pieces of 2..24 bytes of 1M characters of pycountry's catalogs
outputs checked
identical.  Usage: ``.venv/bin/python tools/engine-experiments/merge_lanes.py [NAME]``.
"""

import sys

import numba
import numpy as np
from fresh_piece_set import MAXL, best_of, distinct_multi_pieces, seq_all

from toktier.engine import cpu
from toktier.engine import rules as R
from toktier.engine.jit import prefetch_row

pair_code = cpu.pair_code
NO_PAIR = R.NO_PAIR
PGB = R.PRIO_GROUP_BITS
EMPTY = R.EMPTY_KEY


@numba.njit(inline="always")
def _mtok(bt, code):
    if bt.direct:
        return code >> (32 + PGB)
    return bt.merged[code >> 32]


@numba.njit(inline="always")
def _pf(bt, left, right):
    key = (int(left) << 18) | int(right)
    prod = key * 0x9E3779B1
    mt = bt.merges
    prefetch_row(mt, (prod >> 20) & (mt.shape[0] - 1))
    pf = bt.pair_filter
    b = (prod >> 40) & (pf.shape[0] * 64 - 1)
    prefetch_row(pf, b >> 6)


@numba.njit(cache=False, nogil=True, _nrt=False)
def lanes_all(u8, starts, ends, bt, K, sym, rank, nl, pend, piece, out_tok, out_len):
    """sym/rank: [K, MAXL]; pieces of <= MAXL bytes; out_tok[p, :] tokens of piece p."""
    npieces = starts.size
    nextp = 0
    active = 0
    for k in range(K):
        piece[k] = -1
    while True:
        for k in range(K):
            if piece[k] < 0:  # load the next piece into lane k
                if nextp >= npieces:
                    continue
                p = nextp
                nextp += 1
                b0 = starts[p]
                L = ends[p] - b0
                for j in range(L):
                    sym[k, j] = bt.byte_ids[u8[b0 + j]]
                for j in range(L - 1):
                    rank[k, j] = bt.byte_pairs[(int(u8[b0 + j]) << 8) | int(u8[b0 + j + 1])]
                nl[k] = L
                pend[k] = -1
                piece[k] = p
                active += 1
            n = nl[k]
            best = pend[k]
            if best >= 0:  # the rows asked for last round are (likely) in cache now
                if best + 1 < n:
                    rank[k, best] = pair_code(bt, sym[k, best], sym[k, best + 1])
                else:
                    rank[k, best] = NO_PAIR
                if best > 0:
                    rank[k, best - 1] = pair_code(bt, sym[k, best - 1], sym[k, best])
            low = NO_PAIR
            if n > 1:
                low = rank[k, 0]
                for j in range(1, n - 1):
                    low = min(low, rank[k, j] | j)
            if low >= NO_PAIR:  # lane done
                p = piece[k]
                for j in range(n):
                    out_tok[p, j] = sym[k, j]
                out_len[p] = n
                piece[k] = -1
                active -= 1
                continue
            best = low & 0xFFFFFFFF
            sym[k, best] = _mtok(bt, rank[k, best])
            for j in range(best + 1, n - 1):
                sym[k, j] = sym[k, j + 1]
                rank[k, j] = rank[k, j + 1]
            n -= 1
            nl[k] = n
            pend[k] = best
            if best + 1 < n:
                _pf(bt, sym[k, best], sym[k, best + 1])
            if best > 0:
                _pf(bt, sym[k, best - 1], sym[k, best])
        if active == 0 and nextp >= npieces:
            break


@numba.njit(inline="always")
def pc_nofilter(bt, left, right):
    key = (int(left) << 18) | int(right)
    prod = key * 0x9E3779B1
    mt = bt.merges
    mask = mt.shape[0] - 1
    h = (prod >> 20) & mask
    while True:
        s = mt[h]
        if s == EMPTY:
            return NO_PAIR
        if (s >> 27) == key:
            return (s & 0x7FFFFFF) << 32
        h = (h + 1) & mask


@numba.njit(cache=False, nogil=True, _nrt=False)
def seq_variant(u8, starts, ends, bt, sym, rank, out, offs, variant):
    n_out = 0
    for p in range(starts.size):
        offs[p] = n_out
        b0 = starts[p]
        L = ends[p] - b0
        for k in range(L):
            sym[k] = bt.byte_ids[u8[b0 + k]]
        for k in range(L - 1):
            rank[k] = bt.byte_pairs[(int(u8[b0 + k]) << 8) | int(u8[b0 + k + 1])]
        n = L
        while n > 1:
            low = rank[0]
            for k in range(1, n - 1):
                low = min(low, rank[k] | k)
            if low >= NO_PAIR:
                break
            best = low & 0xFFFFFFFF
            sym[best] = _mtok(bt, rank[best])
            for k in range(best + 1, n - 1):
                sym[k] = sym[k + 1]
                rank[k] = rank[k + 1]
            n -= 1
            if variant == 0:
                rank[best] = pair_code(bt, sym[best], sym[best + 1]) if best + 1 < n else NO_PAIR
                if best > 0:
                    rank[best - 1] = pair_code(bt, sym[best - 1], sym[best])
            else:
                rank[best] = pc_nofilter(bt, sym[best], sym[best + 1]) if best + 1 < n else NO_PAIR
                if best > 0:
                    rank[best - 1] = pc_nofilter(bt, sym[best - 1], sym[best])
        for k in range(n):
            out[n_out + k] = sym[k]
        n_out += n
    offs[starts.size] = n_out
    return n_out


name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
u8, st, en, bt, (sym, rank, nxt, prv, heap), out, offs = distinct_multi_pieces(name, "multi")
print(
    f"{name}: {st.size} distinct multi-token pieces of 2..{MAXL} bytes (mean {np.mean(en - st):.1f} bytes)"
)


ms_seq = best_of(lambda: seq_all(u8, st, en, bt, sym, rank, nxt, prv, heap, out, offs))
ref_off = offs[: st.size + 1].copy()
ref = out[: ref_off[-1]].copy()
for K in (1, 2, 4, 8):
    S = np.empty((K, MAXL), np.int64)
    RK = np.empty((K, MAXL), np.int64)
    nl = np.empty(K, np.int64)
    pend = np.empty(K, np.int64)
    piece = np.empty(K, np.int64)
    ot = np.zeros((st.size, MAXL), np.int64)
    ol = np.zeros(st.size, np.int64)
    ms = best_of(lambda a=(K, S, RK, nl, pend, piece, ot, ol): lanes_all(u8, st, en, bt, *a))
    got = np.concatenate([ot[p, : ol[p]] for p in range(st.size)])
    same = np.array_equal(got, ref) and np.array_equal(np.cumsum(np.r_[0, ol]), ref_off)
    print(
        f"  K={K}: {ms:.2f} ms vs sequential {ms_seq:.2f} ms ({ms_seq / ms:.2f}x), identical: {same}"
    )

o2 = np.empty_like(out)
of2 = np.empty_like(offs)
for v in (0, 1, 0, 1):
    ms = best_of(lambda v=v: seq_variant(u8, st, en, bt, sym, rank, o2, of2, v))
    same = np.array_equal(o2[: of2[st.size]], ref) and np.array_equal(of2[: st.size + 1], ref_off)
    label = "with the pair filter" if v == 0 else "no pair filter"
    print(f"  one at a time, {label}: {ms:.2f} ms, identical: {same}")
