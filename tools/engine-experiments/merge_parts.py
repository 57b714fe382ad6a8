"""Where a fresh piece's merge time goes: the start (``merge_init``: byte symbols, up-front
pair merges and the first pairs' codes) against the whole ``merges_only``, over the distinct
multi-token pieces of 2..24 bytes of 1M characters (``fresh_piece_set``), best of 5 after a
64 MB cache sweep and best of 5 without one, and the merge steps those pieces take.  Run from the repository root:
``.venv/bin/python tools/engine-experiments/merge_parts.py NAME [multi|code]``.
"""

import sys

import numba
import numpy as np
from fresh_piece_set import distinct_multi_pieces, seq_all

from toktier.engine import cpu

R = cpu.RULES
premerged_start = R.premerged_start


@numba.njit(cache=False, nogil=True, _nrt=False)
def init_all(u8, starts, ends, bt, sym, rank):
    """Only the start of each piece's merges: the symbols left for the merge loop, summed."""
    total = 0
    for p in range(starts.size):
        b0, b1 = starts[p], ends[p]
        if bt.pm_index.size > 1:
            total += premerged_start(u8, b0, b1, bt, sym, rank)
        else:
            for k in range(b1 - b0 - 1):
                rank[k] = bt.byte_pairs[(int(u8[b0 + k]) << 8) | int(u8[b0 + k + 1])]
            total += b1 - b0
    return total


def main(name: str, kind: str = "multi") -> None:
    import time

    ps = distinct_multi_pieces(name, kind)
    sym, rank, nxt, prv, heap = ps.scratch
    big = np.ones(64 << 20, np.uint8)

    def best(fn, sweep=True):
        t = []
        for _ in range(5):
            if sweep:
                big[::64] += 1
            t0 = time.perf_counter()
            out = fn()
            t.append(time.perf_counter() - t0)
        return 1e3 * min(t), out

    ms_init, syms = best(lambda: init_all(ps.u8, ps.st, ps.en, ps.bt, sym, rank))
    ms_all, n_tok = best(lambda: seq_all(ps.u8, ps.st, ps.en, ps.bt, sym, rank, nxt, prv, heap,
                                         ps.out, ps.offs))  # fmt: skip
    hot_init, _ = best(lambda: init_all(ps.u8, ps.st, ps.en, ps.bt, sym, rank), False)
    hot_all, _ = best(lambda: seq_all(ps.u8, ps.st, ps.en, ps.bt, sym, rank, nxt, prv, heap,
                                      ps.out, ps.offs), False)  # fmt: skip
    steps = syms - n_tok
    n = ps.st.size
    print(f"{name} {kind}: {n} distinct multi-token pieces, {np.mean(ps.en - ps.st):.1f} bytes, "
          f"{syms / n:.2f} symbols after the start, {n_tok / n:.2f} tokens: {steps / n:.2f} merge "
          f"steps a piece")
    print(f"  start only {ms_init:.2f} ms ({1e6 * ms_init / n:.0f} ns a piece); whole merges "
          f"{ms_all:.2f} ms ({1e6 * ms_all / n:.0f} ns a piece; steps "
          f"{1e6 * (ms_all - ms_init) / max(steps, 1):.0f} ns each), after a 64 MB sweep")
    print(f"  again at once: start {hot_init:.2f} ms, whole {hot_all:.2f} ms (steps "
          f"{1e6 * (hot_all - hot_init) / max(steps, 1):.0f} ns each)")


if __name__ == "__main__":
    main(*sys.argv[1:3])
