"""What a fresh short piece's piece-cache store costs beside its merges (measured 2026-11-30,
not a change; ``results/runs/engine-ab/merge-calls.txt``).

Over the distinct multi-token pieces of 2..16 bytes of 1M characters (``fresh_piece_set``),
after a 64 MB sweep, best of 5, ns a piece: the merges (``merges_only``), the keys alone
(``piece_words`` + ``piece_hash``), and the engine's ``cache_store`` of each piece's tokens
into an empty cache of the engine's size (two compare-and-swaps take the 2-way set, the
rows are written, two release stores publish them), once without and once with each row
requested 8 pieces ahead, as ``encode_range`` requests it.

Run from the repository root: ``.venv/bin/python tools/engine-experiments/store_cost.py NAME
[multi|code]``.
"""

import sys
import time

import fresh_piece_set as F
import numba

from toktier.engine import cpu

R = cpu.RULES
piece_words, piece_hash, cache_store = R.piece_words, R.piece_hash, R.cache_store
prefetch_row = cpu._jit.prefetch_row
SHORT = cpu._rules.CACHE_MAX_BYTES


@numba.njit(cache=False, nogil=True, _nrt=False)
def store_all(u8, st, en, out, offs, cache, nbytes, ahead):
    for p in range(st.size):
        q = p + 8
        if ahead and q < st.size and en[q] - st[q] <= SHORT:
            lw, w0, w1 = piece_words(u8, st[q], en[q])
            a = (piece_hash(lw, w0, w1) << 1) & (cache.shape[0] - 1)
            prefetch_row(cache, a)
            prefetch_row(cache, a + 1)
        if en[p] - st[p] > SHORT:
            continue
        lw, w0, w1 = piece_words(u8, st[p], en[p])
        cache_store(cache, piece_hash(lw, w0, w1), lw, w0, w1, out, offs[p], offs[p + 1], nbytes)


@numba.njit(cache=False, nogil=True, _nrt=False)
def keys_all(u8, st, en):
    s = 0
    for p in range(st.size):
        if en[p] - st[p] <= SHORT:
            lw, w0, w1 = piece_words(u8, st[p], en[p])
            s += piece_hash(lw, w0, w1)
    return s


def main():
    name = sys.argv[1]
    kind = sys.argv[2] if len(sys.argv) > 2 else "multi"
    ps = F.distinct_multi_pieces(name, kind)
    args = (ps.u8, ps.st, ps.en, ps.bt, *ps.scratch)
    cache = cpu._aligned_zeros((cpu.CACHE_SLOTS, cpu.CACHE_COLS))
    n = ps.st.size
    print(
        f"{name} {kind}: {n:,} pieces; cache {cache.nbytes / 2**20:.0f} MiB; ns a piece, after a sweep"
    )
    for rnd in range(3):
        merges = F.best_of(lambda: F.seq_all(*args, ps.out, ps.offs))
        keys = F.best_of(lambda: keys_all(ps.u8, ps.st, ps.en))
        stores = {}
        for ahead in (False, True):
            best = 1e9
            for _ in range(5):
                cache.fill(0)
                F._junk[::64] += 1
                t0 = time.perf_counter()
                store_all(ps.u8, ps.st, ps.en, ps.out, ps.offs, cache, ps.bt.nbytes, ahead)
                best = min(best, time.perf_counter() - t0)
            stores[ahead] = best * 1e3
        print(f"  round {rnd}: merges {merges / n * 1e6:.0f}, keys {keys / n * 1e6:.0f}, "
              f"keys + stores {stores[False] / n * 1e6:.0f}, "
              f"with rows requested 8 ahead {stores[True] / n * 1e6:.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
