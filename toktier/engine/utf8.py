"""A str's UTF-8 bytes written by a compiled pass over its own storage.

Why: CPython encodes a str that is not all ASCII one character at a time, even where
nearly all of it is ASCII (source code with one non-ASCII character in a megabyte is
stored two bytes a character and takes ~0.8-1.5 ms per million characters on the
development VM), and it holds the GIL while it does.  This pass reads the str's
storage (one or two bytes a character: CPython's kinds 1 and 2; numba unboxes a str
without copying it), copies 32-character stretches that are all ASCII with vectorized
loads and stores, and encodes the rest a character at a time: 0.3 ms for that megabyte
of code, about CPython's time on prose that is non-ASCII throughout
(``results/runs/engine-ab/utf8-pass.txt``).  It also releases the GIL, and it can encode
any character range of the str in place, so the parallel engine's parts convert their
own range on their own threads without slicing the str first.

The bytes are ``str.encode("utf-8")``'s exactly (a test compares them on every code
point and on hypothesis strings); a lone surrogate, which has no UTF-8, is reported by
index and the caller raises ``textcheck``'s error.  A str stored four bytes a character
(one with a character beyond U+FFFF) is left to ``str.encode``, which is fast on it.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import carray, uint64
from numba.cpython.unicode import PY_UNICODE_1BYTE_KIND, PY_UNICODE_2BYTE_KIND

WIDE = -(1 << 62)  # ``_encode_range``'s answer for a str stored four bytes a character
BLOCK = 32  # characters checked and copied at once on the ASCII path


@numba.njit(nogil=True, cache=True, inline="always")
def _put(c, out, j):
    """Write the UTF-8 bytes of ``c`` (< U+10000, not a surrogate) at ``out[j]``; the new j."""
    one = uint64(1)
    if c < 0x80:
        out[j] = c
        return j + one
    if c < 0x800:
        out[j] = 0xC0 | (c >> 6)
        out[j + one] = 0x80 | (c & 0x3F)
        return j + uint64(2)
    out[j] = 0xE0 | (c >> 12)
    out[j + one] = 0x80 | ((c >> 6) & 0x3F)
    out[j + uint64(2)] = 0x80 | (c & 0x3F)
    return j + uint64(3)


@numba.njit(nogil=True, cache=True)
def _encode_units(a, base, out):
    """UTF-8 of the code units ``a`` (uint8 or uint16) into ``out`` (room for 3 bytes a
    unit): the byte count, or ``-(base + i) - 1`` at a surrogate at ``a[i]``.

    Unsigned indices: with signed ones numba's negative-index handling keeps LLVM from
    vectorizing the 32-unit check and copy (2.4 ms instead of 0.3 per 1M characters)."""
    n = uint64(a.size)
    i = uint64(0)
    j = uint64(0)
    b = uint64(BLOCK)
    while i + b <= n:
        m = 0
        for k in range(BLOCK):
            m |= a[i + uint64(k)]
        if m < 0x80:
            for k in range(BLOCK):
                out[j + uint64(k)] = a[i + uint64(k)]
            i += b
            j += b
            continue
        for k in range(BLOCK):
            c = np.uint32(a[i + uint64(k)])
            if (c & 0xF800) == 0xD800:
                return -np.int64(base + i + uint64(k)) - 1
            j = _put(c, out, j)
        i += b
    while i < n:
        c = np.uint32(a[i])
        if (c & 0xF800) == 0xD800:
            return -np.int64(base + i) - 1
        j = _put(c, out, j)
        i += uint64(1)
    return np.int64(j)


@numba.njit(nogil=True, cache=True)
def _encode_range(s, lo, hi, out):
    """UTF-8 of ``s[lo:hi]`` into ``out``: the byte count, ``-(i + 1)`` at a lone surrogate
    at index i of ``s``, or WIDE when ``s`` is stored four bytes a character."""
    if s._kind == PY_UNICODE_1BYTE_KIND:
        return _encode_units(carray(s._data, len(s), np.uint8)[lo:hi], lo, out)
    if s._kind == PY_UNICODE_2BYTE_KIND:
        return _encode_units(carray(s._data, len(s), np.uint16)[lo:hi], lo, out)
    return WIDE


def encode_range(text: str, lo: int = 0, hi: int | None = None) -> np.ndarray | int | None:
    """UTF-8 of ``text[lo:hi]`` as a uint8 array; the index of the first lone surrogate in
    that range (an int) when there is one; None when ``text`` is stored four bytes a
    character (``str.encode`` serves it)."""
    hi = len(text) if hi is None else hi
    if not 0 <= lo <= hi <= len(text):
        raise ValueError(f"range [{lo}, {hi}) outside a text of {len(text)} characters")
    out = np.empty(3 * (hi - lo), dtype=np.uint8)
    nb = _encode_range(text, lo, hi, out)
    if nb == WIDE:
        return None
    if nb < 0:
        return int(-nb - 1)
    return out[:nb]
