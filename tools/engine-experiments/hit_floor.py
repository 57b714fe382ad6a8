"""Where a warm piece's time goes: the piece loop's work over precomputed pieces, in steps.

One 1M slice of ``bench-engine-targets``' corpus, encoded twice first (every piece cached),
then, P50 of 7 calls each:

- ``pretokenize``: the automaton alone over the slice (``rules.pretokenize_range``);
- ``walk``: the loop over the pieces reading only their byte lengths (the floor of any loop);
- ``short map``: + each short piece's key, hash and short-map lookup (no prefetch), one-byte
  pieces from ``byte_ids`` -- what a single-token piece needs, and nothing for the others;
- ``short map, prefetch 8 ahead``: the same with the map's row requested 8 pieces ahead;
- ``encode_range``: the engine's piece loop, IDs only (pre-tokenizer included);
- ``encode_ids``: the whole one-thread call (UTF-8, decode, literals, copy out);

then ``encode_range`` with and without prefetch hints (``rules.make`` without
``prefetch_row``), alternated, warm and after a 512 MB sweep.

Usage: ``.venv/bin/python tools/engine-experiments/hit_floor.py [NAME] [KIND]``.
"""

import sys
import time

import numba
import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu as C
from toktier.engine import jit as J
from toktier.engine import rules as R
from toktier.registry import load
from toktier.textcheck import utf8_array

piece_words = C.RULES.piece_words
piece_hash = C.RULES.piece_hash
short_lookup = C.RULES.short_lookup
pretokenize_range = C.RULES.pretokenize_range
encode_range = C.RULES.encode_range
prefetch_row = J.prefetch_row
CACHE_MAX_BYTES = R.CACHE_MAX_BYTES
encode_range_no_hints = R.make(numba.njit(nogil=True, _nrt=False), None, J.Atomics,
                               J.load_word).encode_range  # fmt: skip


@numba.njit(nogil=True)
def walk(ends, np_, char_start, u8, bt, out):
    ps = 0
    for q in range(np_):
        pe = ends[q]
        out[q] = char_start[pe] - char_start[ps]
        ps = pe
    return np_


# The lookup is written out in both loops below: as a function of its own (even with
# inline="always") the loop ran ~20x slower here, which would measure the call, not the probe.
@numba.njit(nogil=True)
def short_map(ends, np_, char_start, u8, bt, out):
    ps = 0
    misses = 0
    for q in range(np_):
        pe = ends[q]
        b0 = char_start[ps]
        length = char_start[pe] - b0
        t = -2
        if length == 1:
            t = bt.byte_ids[u8[b0]]
        elif length <= CACHE_MAX_BYTES:
            lw, w0, w1 = piece_words(u8, b0, b0 + length)
            t = short_lookup(bt.smap, lw, w0, w1, piece_hash(lw, w0, w1))
        if t < 0:
            misses += 1
        out[q] = t
        ps = pe
    return misses


@numba.njit(nogil=True)
def short_map_prefetch(ends, np_, char_start, u8, bt, out):
    ps = 0
    misses = 0
    for q in range(np_):
        if q + 8 < np_:
            b = char_start[ends[q + 7]]
            n8 = char_start[ends[q + 8]] - b
            if n8 >= 2 and n8 <= CACHE_MAX_BYTES:
                lw, w0, w1 = piece_words(u8, b, b + n8)
                prefetch_row(bt.smap, piece_hash(lw, w0, w1) & (bt.smap.shape[0] - 1))
        pe = ends[q]
        b0 = char_start[ps]
        length = char_start[pe] - b0
        t = -2
        if length == 1:
            t = bt.byte_ids[u8[b0]]
        elif length <= CACHE_MAX_BYTES:
            lw, w0, w1 = piece_words(u8, b0, b0 + length)
            t = short_lookup(bt.smap, lw, w0, w1, piece_hash(lw, w0, w1))
        if t < 0:
            misses += 1
        out[q] = t
        ps = pe
    return misses


@numba.njit(nogil=True)
def pretokenize(cps, fl, fold, n, family, bt, ends):
    return pretokenize_range(cps, fl, fold, 0, n, family, bt, ends, 0)


@numba.njit(nogil=True)
def pieces(n, cps, fl, fold, family, u8, char_start, ls, le, lid, bt, ends, sym, rank, nxt, prv,
           heap, cache, lcache, out, ring):  # fmt: skip
    return encode_range(0, n, cps, fl, fold, family, u8, char_start, ls, le, lid, 0, 0, bt, ends,
                        sym, rank, nxt, prv, heap, cache, lcache, out, out, out, 0, False, ring,
                        False)  # fmt: skip


@numba.njit(nogil=True)
def pieces_no_hints(n, cps, fl, fold, family, u8, char_start, ls, le, lid, bt, ends, sym, rank,
                    nxt, prv, heap, cache, lcache, out, ring):  # fmt: skip
    return encode_range_no_hints(0, n, cps, fl, fold, family, u8, char_start, ls, le, lid, 0, 0,
                                 bt, ends, sym, rank, nxt, prv, heap, cache, lcache, out, out, out,
                                 0, False, ring, False)  # fmt: skip


def p50_ms(fn, *args, reps=7):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn(*args)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times)), out


def warm_slice(name: str, kind: str):
    """(engine, text): a new engine and the 1M slice these tools time, encoded twice
    (every piece cached)."""
    eng = C.CpuEngine(load(name))
    text = slices(corpora()[kind], 1_000_000, 8)[3]
    eng.encode_ids(text, threads=1)
    eng.encode_ids(text, threads=1)
    return eng, text


def piece_ends(eng, u8):
    """(prepared text, piece ends, piece count): ``u8`` decoded as the engine does and cut by
    its pre-tokenizer over the whole text."""
    p = eng.prepare(u8)
    t = eng.tables
    ends = np.empty(p.n + 1, np.int64)
    np_ = pretokenize(p.cps, p.fl, t.fold, p.n, t.family_code, eng.bpe, ends)
    return p, ends, np_


def main(name: str, kind: str) -> None:
    eng, text = warm_slice(name, kind)
    u8 = utf8_array(text)
    p = eng.prepare(u8)
    if p.nlit:
        raise SystemExit("this slice holds added-token literals: pick another")
    t, bt, n = eng.tables, eng.bpe, p.n
    ends = np.empty(n + 1, np.int64)
    np_ = pretokenize(p.cps, p.fl, t.fold, n, t.family_code, bt, ends)
    out = np.empty(n + 1, np.int64)
    cache, lcache = eng._cache()
    scratch = [np.empty(u8.size + 1, np.int64) for _ in range(4)]
    scratch.append(np.empty(3 * u8.size + 3, np.int64))
    ring = np.empty(C.RING_WORDS, np.int64)
    args = (n, p.cps, p.fl, t.fold, t.family_code, u8, p.char_start, p.ls, p.le, p.lid, bt, ends,
            *scratch, cache, lcache, out, ring)  # fmt: skip
    print(f"{name} {kind}: {n:,} characters, {np_:,} pieces (warm: every piece cached)")
    ms, _ = p50_ms(pretokenize, p.cps, p.fl, t.fold, n, t.family_code, bt, ends)
    print(f"  pretokenize                   {ms:6.2f} ms")
    for label, fn in (("walk", walk), ("short map", short_map),
                      ("short map, prefetch 8 ahead", short_map_prefetch)):  # fmt: skip
        ms, misses = p50_ms(fn, ends, np_, p.char_start, u8, bt, out)
        print(f"  {label:29s} {ms:6.2f} ms  {ms * 1e6 / np_:5.1f} ns/piece"
              + ("" if fn is walk else f"  ({misses:,} pieces the map does not answer)"))
    ms, _ = p50_ms(pieces, *args)
    print(f"  encode_range (IDs only)       {ms:6.2f} ms  (pretokenize included)")
    ms, _ = p50_ms(lambda: eng.encode_ids(text, threads=1))
    print(f"  encode_ids, 1 thread          {ms:6.2f} ms")
    pieces_no_hints(*args)
    junk = np.ones(64 << 20, np.int64)  # 512 MB
    for label, sweep in (("warm", False), ("after a 512 MB sweep", True)):
        res = {"hints": [], "no hints": []}
        for i in range(10):
            order = (("hints", pieces), ("no hints", pieces_no_hints))
            for k, fn in order if i % 2 else order[::-1]:
                if sweep:
                    junk += 1
                t0 = time.perf_counter()
                fn(*args)
                res[k].append((time.perf_counter() - t0) * 1e3)
        print(f"  encode_range {label}: " + ", ".join(
            f"{k} {np.median(v):.2f} ms" for k, v in res.items()))  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "llama3",
         sys.argv[2] if len(sys.argv) > 2 else "code")  # fmt: skip
