"""The warm piece loop's parts, each alone (not a change): where a warm engine's time goes,
set against Gigatoken's warm encode (``gigatoken_warm.py``: 1.2-2.6x faster than toktier's
on every cell, while the never-seen pieces cost both about the same -- so the warm path, not
the fresh pieces' merges, is what issue #12's code cells wait on).

On ``hit_floor``'s warm 1M slice (every piece cached), P50 of 9 calls each:

- the pre-tokenizer as the engine runs it; the automaton's steps (pair reads, single reads,
  single reads with flags) counted and timed without the boundary stores; its chain of pair
  reads alone (no stores, no single steps: a floor, not a pre-tokenizer); the class loads alone;
- the piece loop's parts: walking the pieces, their exact keys and hashes alone (stored), the
  short-map lookups alone over those stored keys (with and without the row requested 8
  pieces ahead), and ``hit_floor``'s loop doing both per piece.

Usage: ``.venv/bin/python tools/engine-experiments/warm_path_parts.py [NAME]``.
"""

import sys

import numba
import numpy as np

sys.path.insert(0, "tools/engine-experiments")
import hit_floor as H

from toktier.textcheck import utf8_array

piece_words, piece_hash, short_lookup = H.piece_words, H.piece_hash, H.short_lookup
CMB = H.CACHE_MAX_BYTES
prefetch_row = H.prefetch_row


@numba.njit(nogil=True)
def dfa_steps(cps, classes, table, pairs, lo, hi):
    """The automaton's walk without its stores: (pair steps, single steps, flagged singles)."""
    st = 0
    i = lo
    fast = slow = flagged = 0
    while i < hi:
        if i + 1 < hi:
            y = pairs[np.uint64(st) + (np.uint64(classes[cps[i]]) << np.uint64(5))
                      + np.uint64(classes[cps[i + 1]])]  # fmt: skip
            if (y & 4) == 0:
                fast += 1
                st = y & ~7
                i += 2
                continue
        slow += 1
        x = table[(st >> 5) + classes[cps[i]]]
        if x & 30:
            flagged += 1
        st = (x & ~31) << 5
        i += 1
    return fast, slow, flagged


@numba.njit(nogil=True)
def pair_chain(cps, classes, pairs, lo, hi):
    """Only the chain of pair reads (wrong pieces; the floor of a two-character automaton)."""
    st = 0
    i = lo
    acc = 0
    while i + 1 < hi:
        y = pairs[np.uint64(st) + (np.uint64(classes[cps[i]]) << np.uint64(5))
                  + np.uint64(classes[cps[i + 1]])]  # fmt: skip
        acc += y & 1
        st = y & ~7
        i += 2
    return acc


@numba.njit(nogil=True)
def class_loads(cps, classes, lo, hi):
    acc = 0
    for i in range(lo, hi):
        acc += classes[cps[i]]
    return acc


@numba.njit(nogil=True)
def keys_only(ends, np_, char_start, u8, hs, kw):
    """Each short piece's exact key and hash, stored (no table read)."""
    ps = 0
    acc = 0
    for q in range(np_):
        pe = ends[q]
        b0 = char_start[ps]
        length = char_start[pe] - b0
        if length >= 2 and length <= CMB:
            lw, w0, w1 = piece_words(u8, b0, b0 + length)
            h = piece_hash(lw, w0, w1)
            hs[q] = h
            kw[3 * q] = lw
            kw[3 * q + 1] = w0
            kw[3 * q + 2] = w1
            acc ^= h
        else:
            hs[q] = -1
        ps = pe
    return acc


@numba.njit(nogil=True)
def lookups_only(np_, bt, out, hs, kw, ahead):
    """The short-map lookups over stored keys (rows requested 8 pieces ahead if ``ahead``)."""
    miss = 0
    for q in range(np_):
        if ahead and hs[q + 8] >= 0:
            prefetch_row(bt.smap, hs[q + 8] & (bt.smap.shape[0] - 1))
        h = hs[q]
        if h >= 0:
            t = short_lookup(bt.smap, kw[3 * q], kw[3 * q + 1], kw[3 * q + 2], h)
            out[q] = t
            if t < 0:
                miss += 1
    return miss


def main(name: str) -> None:
    eng, text = H.warm_slice(name, "code")
    u8 = utf8_array(text)
    p, ends, np_ = H.piece_ends(eng, u8)
    t, bt, n = eng.tables, eng.bpe, p.n
    fast, slow, flagged = dfa_steps(u8, bt.pre_classes, bt.pre_table, bt.pre_pairs, 0, n)
    print(f"{name} code: {n:,} characters, {np_:,} pieces; automaton steps: {fast:,} pairs, "
          f"{slow:,} single ({slow / (fast + slow):.1%}; {flagged:,} with flags)")  # fmt: skip
    out = np.empty(n + 1, np.int64)
    hs = np.full(np_ + 9, -1, np.int64)
    kw = np.zeros(3 * np_ + 30, np.int64)
    rows = (
        ("pre-tokenizer (the engine's)", n, H.pretokenize,
         (p.cps, p.fl, t.fold, n, t.family_code, bt, ends)),
        ("automaton steps, no stores", n, dfa_steps,
         (u8, bt.pre_classes, bt.pre_table, bt.pre_pairs, 0, n)),
        ("pair-read chain alone", n, pair_chain, (u8, bt.pre_classes, bt.pre_pairs, 0, n)),
        ("class loads alone", n, class_loads, (u8, bt.pre_classes, 0, n)),
        ("walk the pieces", np_, H.walk, (ends, np_, p.char_start, u8, bt, out)),
        ("keys + hashes alone", np_, keys_only, (ends, np_, p.char_start, u8, hs, kw)),
        ("lookups alone, rows 8 ahead", np_, lookups_only, (np_, bt, out, hs, kw, True)),
        ("lookups alone, no requests", np_, lookups_only, (np_, bt, out, hs, kw, False)),
        ("keys + lookups per piece", np_, H.short_map_prefetch,
         (ends, np_, p.char_start, u8, bt, out)),
    )  # fmt: skip
    for label, count, fn, args in rows:
        fn(*args)
        ms, _ = H.p50_ms(fn, *args, reps=9)
        unit = "char" if count == n else "piece"
        print(f"  {label:30s} {ms:6.2f} ms  {ms * 1e6 / count:5.2f} ns/{unit}")
    ms, _ = H.p50_ms(lambda: eng.encode_ids(text, threads=1), reps=9)
    print(f"  {'encode_ids, 1 thread':30s} {ms:6.2f} ms  {ms * 1e6 / np_:5.2f} ns/piece")
    touched = np.unique(hs[:np_][hs[:np_] >= 0] & (bt.smap.shape[0] - 1))
    print(f"  short-map rows read: {touched.size:,} distinct ({bt.smap.nbytes / 1e6:.1f} MB map)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "llama3")
