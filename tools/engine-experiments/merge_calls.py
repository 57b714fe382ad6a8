"""What numba's calls between the rules cost a fresh piece's merges (2026-11-30; led to the
engine's inlined ``merges_only`` / ``merge_small``, ``results/runs/engine-ab/merge-calls.txt``).

Before, ``merges_only`` and ``merge_small`` were real calls (LLVM did not inline them), each
copying every field of the ``BpeTables`` tuple onto the stack (~110 pushes; ``inspect_asm``).
Over the distinct multi-token pieces of 1M characters (``fresh_piece_set``), alternated, best
of 5 after a 64 MB cache sweep and again at once, ns a piece, outputs checked identical:

- ``calls``: the rules compiled as before (no ``jit_inline``), from a loop without NRT;
- ``inlined``: the engine's ``merges_only`` as ``cpu.RULES`` now compiles it (inlined into
  the loop, which has no NRT, as the rules that call it have none);
- ``inlined, NRT caller``: the same inlined into a loop compiled with NRT (numba's default):
  the gain is lost there;
- ``all inlined``: every rule compiled ``inline="always"``;
- ``slim``: ``merge_small`` and ``pair_code`` restated to take only the three arrays they read,
  still called: fewer arguments alone do not give the gain.

Run from the repository root: ``.venv/bin/python tools/engine-experiments/merge_calls.py NAME
[multi|code]``.
"""

import sys
import time

import fresh_piece_set as F
import numba
import numpy as np

from toktier.engine import jit as J
from toktier.engine import rules as R
from toktier.engine.cpu import RULES

NO_PAIR, EMPTY_KEY, PGB, SMALL = R.NO_PAIR, R.EMPTY_KEY, R.PRIO_GROUP_BITS, R.SMALL_PIECE
prefetch_row = J.prefetch_row
premerged_start, merge_large = RULES.premerged_start, RULES.merge_large
jit = numba.njit(cache=False, nogil=True, _nrt=False)
_PLAIN = J.unliteral(numba.njit(cache=False, nogil=True, _nrt=False))
_INLINE = J.unliteral(numba.njit(cache=False, nogil=True, _nrt=False, inline="always"))
CALLS = R.make(_PLAIN, J.prefetch_row, J.Atomics, J.load_word)  # the rules before
ALL_INLINE = R.make(_INLINE, J.prefetch_row, J.Atomics, J.load_word)


@jit
def pair_code_slim(mt, pf, left, right):
    """``rules.pair_code`` on the merge table and filter alone."""
    key = (int(left) << 18) | int(right)
    prod = key * 0x9E3779B1
    mask = mt.shape[0] - 1
    h = (prod >> 20) & mask
    prefetch_row(mt, h)
    b = (prod >> 40) & (pf.shape[0] * 64 - 1)
    if (pf[b >> 6] >> (b & 63)) & 1 == 0:
        return NO_PAIR
    while True:
        s = mt[h]
        if s == EMPTY_KEY:
            return NO_PAIR
        if (s >> 27) == key:
            return (s & 0x7FFFFFF) << 32
        h = (h + 1) & mask


@jit
def merge_small_slim(sym, rank, n, mt, pf, merged, direct):
    """``rules.merge_small`` with the three arrays it reads instead of the whole tuple."""
    while n > 1:
        low = rank[0]
        for k in range(1, n - 1):
            low = min(low, rank[k] | k)
        if low >= NO_PAIR:
            break
        best = low & 0xFFFFFFFF
        code = rank[best]
        sym[best] = code >> (32 + PGB) if direct else merged[code >> 32]
        for k in range(best + 1, n - 1):
            sym[k] = sym[k + 1]
            rank[k] = rank[k + 1]
        n -= 1
        if best + 1 < n:
            rank[best] = pair_code_slim(mt, pf, sym[best], sym[best + 1])
        else:
            rank[best] = NO_PAIR
        if best > 0:
            rank[best - 1] = pair_code_slim(mt, pf, sym[best - 1], sym[best])
    return n


@jit
def merges_slim(u8, b0, b1, bt, sym, rank, nxt, prv, heap, out, n_out):
    length = premerged_start(u8, b0, b1, bt, sym, rank)
    if length <= SMALL:
        m = merge_small_slim(sym, rank, length, bt.merges, bt.pair_filter, bt.merged, bt.direct)
    else:
        m = merge_large(sym, rank, nxt, prv, heap, length, bt)
    for k in range(m):
        out[n_out + k] = sym[k]
    return n_out + m


def main():
    name = sys.argv[1]
    kind = sys.argv[2] if len(sys.argv) > 2 else "multi"
    if kind not in ("multi", "code"):
        raise SystemExit("KIND is multi or code")
    ps = F.distinct_multi_pieces(name, kind)
    if not ps.bt.pm_index.size > 1:
        raise SystemExit(f"{name}: no up-front pair merges; merges_slim assumes them")
    args = (ps.u8, ps.st, ps.en, ps.bt, *ps.scratch)
    over_pieces = F.over_pieces
    arms = {
        "calls": over_pieces(CALLS.merges_only),
        "inlined": over_pieces(RULES.merges_only),
        "inlined, NRT caller": over_pieces(RULES.merges_only, nrt=True),
        "all inlined": over_pieces(ALL_INLINE.merges_only),
        "slim": over_pieces(merges_slim),
    }
    outs = {}
    for arm, f in arms.items():
        out, offs = ps.out.copy(), ps.offs.copy()
        f(*args, out, offs)
        outs[arm] = (out, offs)
    ref_out, ref_offs = outs["calls"]
    for arm, (out, offs) in outs.items():
        if not (
            np.array_equal(offs, ref_offs) and np.array_equal(out[: offs[-1]], ref_out[: offs[-1]])
        ):
            raise SystemExit(f"{arm}: different tokens")
    n = ps.st.size
    print(f"{name} {kind}: {n:,} distinct multi-token pieces, best of 5, ns a piece")

    def hot(f, out, offs):
        best = 1e9
        for _ in range(5):
            t0 = time.perf_counter()
            f(*args, out, offs)
            best = min(best, time.perf_counter() - t0)
        return best * 1e3

    order = list(arms)
    for rnd in range(4):
        swept, warm = {}, {}
        for arm in order:
            out, offs = outs[arm]
            swept[arm] = F.best_of(lambda f=arms[arm], o=out, of=offs: f(*args, o, of))
            warm[arm] = hot(arms[arm], out, offs)
        order = order[1:] + order[:1]
        line = " | ".join(f"{a} {swept[a] / n * 1e6:.0f} / {warm[a] / n * 1e6:.0f}" for a in arms)
        print(f"  round {rnd} (after a sweep / again): {line}")


if __name__ == "__main__":
    main()
