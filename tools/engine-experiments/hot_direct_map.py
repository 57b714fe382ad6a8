"""A direct-mapped table of short single-token pieces keyed by one word (measured, not built).

Pieces of 2..7 bytes (73% of a 1M slice of stdlib code) have an exact key in one word (bytes
and length); a 16-byte entry (key, id) per slot, slot = one multiply of the key, so a hit skips
the three-round hash and the 8 MB short-map row.  Timed against ``hit_floor``'s per-piece loop
(key, hash and short-map lookup, the row requested 8 pieces ahead) on ``hit_floor``'s warm
slice, alternated, P50 of 9; outputs asserted equal.  Tables: the vocabulary's lowest ids first
(what a build could ship), and an oracle filled with this very slice's most frequent pieces
(an upper bound for any adaptive table of that size).
Usage: ``.venv/bin/python tools/engine-experiments/hot_direct_map.py [NAME]``.
"""

import sys
import time
from collections import Counter

import numba
import numpy as np

sys.path.insert(0, "tools/engine-experiments")
import hit_floor as H

from toktier.engine.jit import load_word
from toktier.textcheck import utf8_array

piece_words, piece_hash, short_lookup = H.piece_words, H.piece_hash, H.short_lookup
CMB = H.CACHE_MAX_BYTES
prefetch_row = H.prefetch_row
GOLDEN = 0x9E3779B97F4A7C15
M64 = (1 << 64) - 1


def slot(key: int, bits: int) -> int:
    return ((key * GOLDEN) & M64) >> (64 - bits)


def table_of(entries, bits: int) -> np.ndarray:
    """(key, id) pairs into a direct-mapped table, the first of each slot kept."""
    hot = np.zeros(2 << bits, np.int64)
    for key, tid in entries:
        s = slot(key, bits)
        if hot[2 * s] == 0:
            hot[2 * s] = key
            hot[2 * s + 1] = tid
    return hot


@numba.njit(nogil=True)
def hot_loop(ends, np_, char_start, u8, bt, out, hot, bits):
    ps = 0
    misses = 0
    for q in range(np_):
        if q + 8 < np_:  # only pieces the table cannot hold get their short-map row requested
            b = char_start[ends[q + 7]]
            n8 = char_start[ends[q + 8]] - b
            if n8 > 7 and n8 <= CMB:
                lw, w0, w1 = piece_words(u8, b, b + n8)
                prefetch_row(bt.smap, piece_hash(lw, w0, w1) & (bt.smap.shape[0] - 1))
        pe = ends[q]
        b0 = char_start[ps]
        length = char_start[pe] - b0
        t = -2
        if length == 1:
            t = bt.byte_ids[u8[b0]]
        elif length <= 7 and b0 + 8 <= u8.size:
            key = (load_word(u8, b0) & ((1 << (8 * length)) - 1)) | (length << 56)
            s = np.uint64(key * -7046029254386353131) >> np.uint64(64 - bits)  # GOLDEN, signed
            if hot[2 * s] == key:
                t = hot[2 * s + 1]
            else:
                lw, w0, w1 = piece_words(u8, b0, b0 + length)
                t = short_lookup(bt.smap, lw, w0, w1, piece_hash(lw, w0, w1))
        elif length <= CMB:
            lw, w0, w1 = piece_words(u8, b0, b0 + length)
            t = short_lookup(bt.smap, lw, w0, w1, piece_hash(lw, w0, w1))
        if t < 0:
            misses += 1
        out[q] = t
        ps = pe
    return misses


def main(name: str) -> None:
    eng, text = H.warm_slice(name, "code")
    u8 = utf8_array(text)
    p, ends, np_ = H.piece_ends(eng, u8)
    bt, n = eng.bpe, p.n
    out = np.empty(n + 1, np.int64)
    out2 = np.empty(n + 1, np.int64)
    H.short_map_prefetch(ends, np_, p.char_start, u8, bt, out)
    lens = np.diff(np.concatenate([[0], p.char_start[ends[:np_]]]))
    starts = np.concatenate([[0], p.char_start[ends[: np_ - 1]]])
    print(f"{name} code: {np_:,} pieces; 1 byte {np.mean(lens == 1):.1%}, 2..7 bytes "
          f"{np.mean((lens >= 2) & (lens <= 7)):.1%}, 8..16 bytes "
          f"{np.mean((lens > 7) & (lens <= 16)):.1%}")  # fmt: skip
    rows = bt.smap[bt.smap[:, 0] != 0]
    rows = rows[np.argsort(rows[:, 3], kind="stable")]
    vocab = [(w0 | (lw << 56), tid) for lw, w0, _, tid in rows.tolist() if lw <= 7]
    seen = Counter()
    for b0, ln, tid in zip(starts.tolist(), lens.tolist(), out[:np_].tolist(), strict=True):
        if 2 <= ln <= 7 and tid >= 0:
            seen[(int.from_bytes(bytes(u8[b0 : b0 + ln]), "little") | (ln << 56), tid)] += 1
    oracle = [k for k, _ in seen.most_common()]
    for label, entries in (("lowest ids", vocab), ("oracle", oracle)):
        for bits in (10, 12, 14):
            hot = table_of(entries, bits)
            hot_loop(ends, np_, p.char_start, u8, bt, out2, hot, bits)
            if not (out2[:np_] == out[:np_]).all():
                raise SystemExit("the direct-mapped loop differs from the short map")
            res = {"short map": [], "direct-mapped first": []}
            for _ in range(9):
                for key, fn, args in (
                    ("short map", H.short_map_prefetch, (ends, np_, p.char_start, u8, bt, out)),
                    ("direct-mapped first", hot_loop,
                     (ends, np_, p.char_start, u8, bt, out2, hot, bits)),
                ):  # fmt: skip
                    t0 = time.perf_counter()
                    fn(*args)
                    res[key].append((time.perf_counter() - t0) * 1e3)
            held = {int(k) for k in hot[0::2] if k}
            covered = sum(c for (key, _), c in seen.items() if key in held)
            a, b = np.median(res["short map"]), np.median(res["direct-mapped first"])
            print(f"  {label:10s} {2 << bits >> 7:4d} KB: answers {covered / np_:5.1%} of pieces; "
                  f"short map {a:5.2f} ms, direct-mapped first {b:5.2f} ms ({b / a:.2f}x)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "llama3")
