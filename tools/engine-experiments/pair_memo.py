"""Fresh-piece merges with a pair memo: measured and not kept (results/runs/engine-ab/pair-memo.txt).

A direct-mapped memo of 8,192 recent pair lookups ((left, right) -> code, keyed by the
exact pair) in front of the engine's pair filter and merge table, against the engine's own
merge loop, over the distinct multi-token pieces of 2..24 bytes of 1M characters (each merged
once, as an empty piece cache meets them); outputs checked identical.
Usage: ``.venv/bin/python tools/engine-experiments/pair_memo.py [NAME] [multi|code]``.
"""

import sys

import numba
import numpy as np
from fresh_piece_set import MAXL, best_of, distinct_multi_pieces, seq_all

from toktier.engine import cpu
from toktier.engine import rules as R

pair_code = cpu.pair_code
NO_PAIR = R.NO_PAIR
PGB = R.PRIO_GROUP_BITS


@numba.njit(inline="always")
def _mtok(bt, code):
    if bt.direct:
        return code >> (32 + PGB)
    return bt.merged[code >> 32]


MEMO_BITS = 13


@numba.njit(inline="always")
def pc_memo(bt, left, right, mkeys, mvals):
    key = (int(left) << 18) | int(right)
    s = ((key * 0x9E3779B1) >> 7) & ((1 << MEMO_BITS) - 1)
    if mkeys[s] == key:
        return mvals[s]
    c = pair_code(bt, left, right)
    mkeys[s] = key
    mvals[s] = c
    return c


@numba.njit(cache=False, nogil=True)
def seq_memo(u8, starts, ends, bt, sym, rank, out, offs, mkeys, mvals):
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
            rank[best] = (
                pc_memo(bt, sym[best], sym[best + 1], mkeys, mvals) if best + 1 < n else NO_PAIR
            )
            if best > 0:
                rank[best - 1] = pc_memo(bt, sym[best - 1], sym[best], mkeys, mvals)
        for k in range(n):
            out[n_out + k] = sym[k]
        n_out += n
    offs[starts.size] = n_out
    return n_out


name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
kind = sys.argv[2] if len(sys.argv) > 2 else "multi"
u8, st, en, bt, (sym, rank, nxt, prv, heap), out, offs = distinct_multi_pieces(name, kind)
print(
    f"{name}: {st.size} distinct multi-token pieces of 2..{MAXL} bytes (mean {np.mean(en - st):.1f} bytes)"
)


ms_seq = best_of(lambda: seq_all(u8, st, en, bt, sym, rank, nxt, prv, heap, out, offs))
ref_off = offs[: st.size + 1].copy()
ref = out[: ref_off[-1]].copy()

o2 = np.empty_like(out)
of2 = np.empty_like(offs)
mk = np.full(1 << MEMO_BITS, -1, np.int64)
mv = np.empty(1 << MEMO_BITS, np.int64)
for _rep in range(3):
    for v in (0, 2):
        if v == 0:
            ms = best_of(lambda: seq_all(u8, st, en, bt, sym, rank, nxt, prv, heap, o2, of2))
        else:

            def f():
                mk[:] = -1
                seq_memo(u8, st, en, bt, sym, rank, o2, of2, mk, mv)

            ms = best_of(f)
        same = np.array_equal(o2[: of2[st.size]], ref) and np.array_equal(
            of2[: st.size + 1], ref_off
        )
        print(f"  {'engine loop' if v == 0 else 'pair memo'}: {ms:.2f} ms identical {same}")
