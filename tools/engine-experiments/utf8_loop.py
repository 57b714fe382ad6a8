"""Tried 2026-11-27 and not kept: a compiled UTF-8 encoder over a str's code units.

CPython encodes a non-ASCII str one character at a time (~1-1.4 ns per character on a
megabyte of Python sources with a single non-Latin-1 character in it, against 0.05 ms when
the same text is all ASCII). This times a numba length pass and write pass over the UCS-2
code units (the str's storage; read here from a UTF-16 copy) against ``str.encode`` on
1M-character slices of ``bench-engine-targets``' corpora. Result on the 2-vCPU Intel VM:
no gain (code 1.72 vs 1.73 ms, multilingual 2.39 vs 2.62 ms; an earlier version reading the
str's storage directly through numba's unicode model: the same), so ``str.encode`` stays.
Usage: ``.venv/bin/python tools/engine-experiments/utf8_loop.py``.
"""

import timeit

import numpy as np
from numba import njit

from toktier.bench import engine_targets as E


@njit(nogil=True, fastmath=True)
def utf8_length(a):
    """(UTF-8 length of the UCS-2 units ``a``, surrogates seen)."""
    e1 = 0
    e2 = 0
    bad = 0
    for i in range(a.size):
        c = a[i]
        e1 += c >= 0x80
        e2 += c >= 0x800
        bad += (c & 0xF800) == 0xD800
    return a.size + e1 + e2, bad


@njit(nogil=True)
def utf8_write(a, out):
    """Write the UTF-8 bytes of the UCS-2 units ``a`` into ``out``; returns the length."""
    one = np.uint64(1)
    i = np.uint64(0)
    j = np.uint64(0)
    while i < a.size:
        c = np.uint32(a[i])
        if c < 0x80:
            out[j] = c
            j += one
        elif c < 0x800:
            out[j] = 0xC0 | (c >> 6)
            out[j + one] = 0x80 | (c & 0x3F)
            j += np.uint64(2)
        else:
            out[j] = 0xE0 | (c >> 12)
            out[j + one] = 0x80 | ((c >> 6) & 0x3F)
            out[j + np.uint64(2)] = 0x80 | (c & 0x3F)
            j += np.uint64(3)
        i += one
    return j


def best_ms(fn, number=20):
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e3


if __name__ == "__main__":
    texts = E.corpora()
    for kind in ("code", "multilingual"):
        x = E.slices(texts[kind], 1_000_000, 5)[1]  # a slice with non-ASCII characters
        a = np.frombuffer(x.encode("utf-16-le"), np.uint16)
        n, _ = utf8_length(a)
        out = np.empty(n, np.uint8)
        utf8_write(a, out)
        assert out.tobytes() == x.encode()
        print(f"{kind}: str.encode {best_ms(lambda x=x: x.encode('utf-8')):.3f} ms, "
              f"length {best_ms(lambda a=a: utf8_length(a)):.3f} + "
              f"write {best_ms(lambda a=a, o=out: utf8_write(a, o)):.3f} ms")  # fmt: skip
