"""Where two texts (or two ID arrays) first differ, at memory-compare speed and without copies.

A front end resends the whole transcript; deciding how much of it a session
already holds must not slice, join or re-encode the stored text.  These compiled
loops read both Python strings in place (numba sees a ``str``'s own buffer, in
whatever width CPython chose for it: 1, 2 or 4 bytes per character) and compare
blocks with unsigned indices, which LLVM vectorizes (mixed widths, ~1 character per
ns), or, where both strings have one width, skip equal blocks with libc's ``memcmp``
(5-17 GB/s on a 2-vCPU EPYC VM: 1M characters in 50-100 us at 1-2 bytes each).
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np
from numba import types, uint64

from .engine import jit as _jit

_jit.use_engine_cache()

_BLOCK = 256
_MEM_BLOCK = 2048  # bytes per libc memcmp call where both strs have one width
# libc's memcmp (vectorized): ~2.5-4x the element loop's speed on 1- and 2-byte strs.  The
# pointers pass as integers (the same registers as pointers in the C calling convention).
_memcmp = types.ExternalFunction("memcmp", types.intc(types.uintp, types.uintp, types.uintp))


@numba.njit(inline="always")
def _forward(x, i0, y, j0, n):
    """Number of leading equal elements of x[i0:i0+n] and y[j0:j0+n]."""
    i = 0
    while i + _BLOCK <= n:
        acc = np.uint32(0)
        bx = uint64(i0 + i)
        by = uint64(j0 + i)
        for k in range(uint64(_BLOCK)):
            acc |= np.uint32(x[bx + k]) ^ np.uint32(y[by + k])
        if acc != 0:
            break
        i += _BLOCK
    while i < n and x[i0 + i] == y[j0 + i]:
        i += 1
    return i


@numba.njit(inline="always")
def _backward(x, xe, y, ye, n):
    """Number of trailing equal elements of x[xe-n:xe] and y[ye-n:ye]."""
    i = 0
    while i + _BLOCK <= n:
        acc = np.uint32(0)
        bx = uint64(xe - i - _BLOCK)
        by = uint64(ye - i - _BLOCK)
        for k in range(uint64(_BLOCK)):
            acc |= np.uint32(x[bx + k]) ^ np.uint32(y[by + k])
        if acc != 0:
            break
        i += _BLOCK
    while i < n and x[xe - 1 - i] == y[ye - 1 - i]:
        i += 1
    return i


@numba.njit(inline="always")
def _bytes(s):
    return numba.carray(s._data, len(s) * s._kind, np.uint8)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _str_forward(a, a0, b, b0, n):
    ka = a._kind
    kb = b._kind
    if ka == kb and n * ka >= _MEM_BLOCK:  # skip equal blocks with memcmp, then the loop
        pa = _bytes(a).ctypes.data + a0 * ka
        pb = _bytes(b).ctypes.data + b0 * ka
        i = 0
        while i + _MEM_BLOCK <= n * ka and _memcmp(pa + i, pb + i, _MEM_BLOCK) == 0:
            i += _MEM_BLOCK
        i //= ka
        return i + _str_loop(a, a0 + i, b, b0 + i, n - i, False)
    return _str_loop(a, a0, b, b0, n, False)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _str_backward(a, ae, b, be, n):
    ka = a._kind
    kb = b._kind
    if ka == kb and n * ka >= _MEM_BLOCK:  # skip equal blocks with memcmp, then the loop
        pa = _bytes(a).ctypes.data + ae * ka
        pb = _bytes(b).ctypes.data + be * ka
        i = 0
        while i + _MEM_BLOCK <= n * ka and _memcmp(pa - i - _MEM_BLOCK, pb - i - _MEM_BLOCK,
                                                   _MEM_BLOCK) == 0:  # fmt: skip
            i += _MEM_BLOCK
        i //= ka
        return i + _str_loop(a, ae - i, b, be - i, n - i, True)
    return _str_loop(a, ae, b, be, n, True)


@numba.njit(inline="always")
def _walk(x, i, y, j, n, backward):
    """``_backward(x, i, y, j, n)`` if ``backward`` else ``_forward(x, i, y, j, n)``."""
    if backward:
        return _backward(x, i, y, j, n)
    return _forward(x, i, y, j, n)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _str_loop(a, i, b, j, n, backward):
    """``_walk`` over the two strs' own buffers, read at their widths (1, 2 or 4 bytes)."""
    ka = a._kind
    kb = b._kind
    if ka == 1:
        x1 = numba.carray(a._data, len(a), np.uint8)
        if kb == 1:
            return _walk(x1, i, numba.carray(b._data, len(b), np.uint8), j, n, backward)
        if kb == 2:
            return _walk(x1, i, numba.carray(b._data, len(b), np.uint16), j, n, backward)
        return _walk(x1, i, numba.carray(b._data, len(b), np.uint32), j, n, backward)
    if ka == 2:
        x2 = numba.carray(a._data, len(a), np.uint16)
        if kb == 1:
            return _walk(x2, i, numba.carray(b._data, len(b), np.uint8), j, n, backward)
        if kb == 2:
            return _walk(x2, i, numba.carray(b._data, len(b), np.uint16), j, n, backward)
        return _walk(x2, i, numba.carray(b._data, len(b), np.uint32), j, n, backward)
    x4 = numba.carray(a._data, len(a), np.uint32)
    if kb == 1:
        return _walk(x4, i, numba.carray(b._data, len(b), np.uint8), j, n, backward)
    if kb == 2:
        return _walk(x4, i, numba.carray(b._data, len(b), np.uint16), j, n, backward)
    return _walk(x4, i, numba.carray(b._data, len(b), np.uint32), j, n, backward)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _array_forward(a, b, n):
    return _forward(a, 0, b, 0, n)


# Called through their one specialization's entry point: the dispatcher types a str argument
# in Python (``typeof_pyval``, several microseconds a call: 18 us of an edit's 125 at 48K).
_forward_call = _jit.BoundKernel(_str_forward)
_backward_call = _jit.BoundKernel(_str_backward)


def common_prefix(parts: Sequence[str], text: str) -> int:
    """Length of the longest common prefix of ``"".join(parts)`` and ``text`` (nothing joined)."""
    pos = 0
    for chunk in parts:
        m = min(len(chunk), len(text) - pos)
        k = _forward_call(chunk, 0, text, pos, m) if m > 0 else 0
        pos += k
        if k < len(chunk):
            break
    return pos


def common_suffix(parts: Sequence[str], text: str, limit: int) -> int:
    """Length of the longest common suffix of ``"".join(parts)`` and ``text``, at most ``limit``."""
    got = 0
    end = len(text)
    for chunk in reversed(parts):
        m = min(len(chunk), end, limit - got)
        k = _backward_call(chunk, len(chunk), text, end, m) if m > 0 else 0
        got += k
        end -= k
        if k < len(chunk) or got >= limit:
            break
    return got


def common_ids(a: np.ndarray, b: np.ndarray) -> int:
    """Number of leading equal entries of two ID arrays."""
    n = min(len(a), len(b))
    return int(_array_forward(a, b, n)) if n else 0


def warmup() -> None:
    """Compile (or load) every width combination outside request latency."""
    samples = ("ab", "aé", "a\u20ac", "a\U0001f600")
    for s in samples:
        for t in samples:
            common_prefix([s], t)
            common_suffix([s], t, 2)
    common_ids(np.zeros(2, np.uint32), np.zeros(2, np.uint32))
