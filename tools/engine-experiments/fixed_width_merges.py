"""A merge loop without data-dependent loop lengths, measured against the engine's (not kept:
``results/runs/engine-ab/merge-batch.txt``, second part).

``merge_small`` scans ``n - 1`` codes for the lowest and shifts the symbols after the merged
pair left, loops whose lengths change every step (branch mispredictions at their exits).
Here a piece of at most 16 symbols keeps 16 codes, the unused ones ``NO_PAIR``: every step
takes the minimum of all 16 and shifts with a per-position select over all 16 -- the same
lowest-rank-leftmost choice, so the same tokens (checked).  Over the distinct multi-token
pieces of 2..16 bytes of 1M characters (``fresh_piece_set``), alternated, best of 5 after a
64 MB sweep.  Run from the repository root:
``.venv/bin/python tools/engine-experiments/fixed_width_merges.py NAME [multi|code]``.
"""

import sys
import time

import numba
import numpy as np
from fresh_piece_set import distinct_multi_pieces, seq_all

from toktier.engine import cpu
from toktier.engine import rules as R

premerged_start = cpu.RULES.premerged_start
merged_token = cpu.RULES.merged_token
pair_code = cpu.RULES.pair_code
NO_PAIR = R.NO_PAIR
W = 16


@numba.njit(cache=False, nogil=True, _nrt=False)
def fixed_loop(u8, starts, ends, bt, sym, rank, out, offs):
    n_out = 0
    for p in range(starts.size):
        offs[p] = n_out
        n = premerged_start(u8, starts[p], ends[p], bt, sym, rank)
        for k in range(n - 1, W + 1):
            rank[k] = NO_PAIR
        sym[W] = 0
        while n > 1:
            low = rank[0]
            for k in range(1, W):
                low = min(low, rank[k] | k)
            if low >= NO_PAIR:
                break
            best = low & 0xFFFFFFFF
            sym[best] = merged_token(bt, rank[best])
            for k in range(W):
                if k > best:
                    sym[k] = sym[k + 1]
                    rank[k] = rank[k + 1]
            n -= 1
            if best + 1 < n:
                rank[best] = pair_code(bt, sym[best], sym[best + 1])
            else:
                rank[best] = NO_PAIR
            if best > 0:
                rank[best - 1] = pair_code(bt, sym[best - 1], sym[best])
        for k in range(n):
            out[n_out + k] = sym[k]
        n_out += n
    offs[starts.size] = n_out
    return n_out


def main(name: str, kind: str = "multi") -> None:
    ps = distinct_multi_pieces(name, kind)
    keep = (ps.en - ps.st) <= W
    st, en = ps.st[keep], ps.en[keep]
    sym, rank, nxt, prv, heap = ps.scratch
    big = np.ones(64 << 20, np.uint8)
    o1, f1 = np.empty_like(ps.out), np.empty(st.size + 1, np.int64)
    o2, f2 = np.empty_like(ps.out), np.empty(st.size + 1, np.int64)
    runs = {"engine": lambda: seq_all(ps.u8, st, en, ps.bt, sym, rank, nxt, prv, heap, o1, f1),
            "fixed width": lambda: fixed_loop(ps.u8, st, en, ps.bt, sym, rank, o2, f2)}
    times = {k: [] for k in runs}
    for r in range(10):
        for k in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
            big[::64] += 1
            t0 = time.perf_counter()
            runs[k]()
            times[k].append(time.perf_counter() - t0)
    same = np.array_equal(f1, f2) and np.array_equal(o1[: f1[-1]], o2[: f2[-1]])
    a, b = (1e3 * min(times[k]) for k in runs)
    print(f"{name} {kind}: {st.size} pieces of 2..{W} bytes: engine {a:.2f} ms, fixed width "
          f"{b:.2f} ms ({b / a:.3f}x), identical: {same}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
