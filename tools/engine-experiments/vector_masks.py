"""Can numba run a pre-tokenizer's character classes 32 bytes at a time?  (Measured, not built:
the groundwork for the warm path issue #12's code cells need, ``gigatoken_warm.py``.)

``range_mask32`` is an ``@intrinsic`` (``engine.jit.range_mask32``, first written here) emitting
LLVM vector IR: one unaligned load of 32 bytes, two unsigned compares against splatted bounds,
their ``and``, and the <32 x i1> bitcast to an integer -- which LLVM lowers to
``vpcmpeqb``/``vpmovmskb``-style code on AVX2.  ``cttz`` is ``llvm.cttz``
(``engine.ascii_pretok.cttz``).  On a 1M slice of stdlib code (its ASCII bytes):

- the letter mask of every 32-byte block, popcounted (classification alone);
- the end of every maximal ASCII-letter run, enumerated from the masks with ``cttz`` (a run
  that reaches a block's end continues if the next block's first byte is a letter);
- the same run ends from a scalar loop over a 256-entry class table (the branchy way).

Both enumerations are checked equal.  For scale: the engine's automaton pre-tokenizer takes
~2.4-3.1 ns a character on this text, its chain of pair reads alone ~1.5
(``warm_path_parts.py``).  A letter run is only one of the cl100k pattern's cases; this bounds
what vector classes could give a pre-tokenizer, it is not one.
Usage: ``.venv/bin/python tools/engine-experiments/vector_masks.py``.
"""

import time

import numba
import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.engine.ascii_pretok import cttz
from toktier.engine.jit import range_mask32

LANES = 32


@numba.njit(nogil=True)
def letter_mask(u8, i):
    return range_mask32(u8, i, 65, 90) | range_mask32(u8, i, 97, 122)


@numba.njit(nogil=True)
def letters_popcount(u8):
    total = 0
    for i in range(0, u8.size - LANES + 1, LANES):
        x = letter_mask(u8, i)
        x = x - ((x >> 1) & 0x55555555)
        x = (x & 0x33333333) + ((x >> 2) & 0x33333333)
        x = (x + (x >> 4)) & 0x0F0F0F0F
        total += ((x * 0x01010101) & 0xFFFFFFFF) >> 24
    return total


@numba.njit(nogil=True)
def vector_run_ends(u8, ends):
    """The end of every letter run in ``u8[:blocks * 32]`` (a run ends at bit j when bit j is
    set and bit j + 1 is not; bit 32 is the next block's first byte)."""
    k = 0
    last = u8.size - LANES
    for i in range(0, last + 1, LANES):
        m = letter_mask(u8, i)
        follow = 0
        if i + LANES <= last:
            b = u8[i + LANES]
            follow = 1 if (65 <= b <= 90) or (97 <= b <= 122) else 0
        e = m & ~((m >> 1) | (follow << (LANES - 1)))
        while e:
            ends[k] = i + cttz(e) + 1
            k += 1
            e &= e - 1
    return k


@numba.njit(nogil=True)
def scalar_run_ends(u8, n, cls, ends):
    k = 0
    inrun = False
    for i in range(n):
        letter = cls[u8[i]] == 1
        if inrun and not letter:
            ends[k] = i
            k += 1
        inrun = letter
    if inrun:
        ends[k] = n
        k += 1
    return k


def p50_ms(fn, *args, reps: int = 15) -> float:
    fn(*args)
    out = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn(*args)
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return float(np.median(out))


def main() -> None:
    text = slices(corpora()["code"], 1_000_000, 8)[3].encode("ascii", "ignore")
    u8 = np.frombuffer(text, np.uint8).copy()
    n = (u8.size // LANES) * LANES
    cls = np.zeros(256, np.uint8)
    cls[65:91] = 1
    cls[97:123] = 1
    a, b = np.empty(n, np.int64), np.empty(n, np.int64)
    ka, kb = vector_run_ends(u8, a), scalar_run_ends(u8, n, cls, b)
    if ka != kb or not np.array_equal(a[:ka], b[:kb]):
        raise SystemExit(f"run ends differ: {ka} vector, {kb} scalar")
    if letters_popcount(u8) != int(cls[u8[:n]].sum()):
        raise SystemExit("letter counts differ")
    print(f"{n:,} bytes of stdlib code (ASCII), {ka:,} letter runs (both ways equal); P50 of 15")
    for label, fn, args in (
        ("letter masks + popcount (vector)", letters_popcount, (u8,)),
        ("letter-run ends (vector masks, cttz)", vector_run_ends, (u8, a)),
        ("letter-run ends (scalar class table)", scalar_run_ends, (u8, n, cls, b)),
    ):  # fmt: skip
        ms = p50_ms(fn, *args)
        print(f"  {label:38s} {ms:6.3f} ms  {ms * 1e6 / n:5.2f} ns/byte")


if __name__ == "__main__":
    main()
