"""A request's text as 16-bit code units for the device (``GpuEngine(units=True)``).

Why: CPython encodes a non-ASCII str to UTF-8 one character at a time (0.7-1.5 ms per
million characters on the development VM; 1.24 ms of a 1M-character request on the
H200).  A str whose characters all lie below U+10000 is stored one or two bytes a
character (CPython's kinds 1 and 2), and a compiled pass over that storage writes its
characters as 16-bit units in ~0.4 ms (``tools/engine-experiments/units_upload.py``).  The
device then writes the UTF-8 bytes itself (``stages.k_units_len``, a scan,
``stages.k_units_write``) before the chain's decode, so everything after stage 0 is the
same chain on the same bytes.  ASCII text keeps the UTF-8 upload (its encode is a copy),
and so does a str with a character beyond U+FFFF (stored four bytes a character, which
CPython encodes faster than a pass could convert it: ~0.5 against 1.4-1.8 ms).

Off by default: the UTF-8 upload now gets its bytes from a compiled pass too
(``engine.utf8`` through ``textcheck.utf8_array``), and on the H200 at f7ff5c3 the two
uploads timed within 0.85-1.10x of each other at >= 1M characters (docs/gpu.md).
"""

from __future__ import annotations

import numba
import numpy as np

# numba's reader of a str's storage (1, 2 or 4 bytes a character), no copy of the str
from numba.cpython.unicode import PY_UNICODE_4BYTE_KIND, _get_code_point

from ...textcheck import utf8_bytes

WIDE = -1  # ``_units``' answer for a str stored four bytes a character


@numba.njit(nogil=True, cache=True)
def _units(s, out):
    """The characters of ``s`` as 16-bit units into ``out`` (room for len(s)): (len(s),
    UTF-8 bytes); (-(i + 1), 0) at a lone surrogate at index i (no UTF-8 encoding exists);
    (0, WIDE) when ``s`` is stored four bytes a character.

    Two loops with no branch on the data, which vectorize (a loop branching on each
    character's length took 1.4 ms per million characters, these ~0.4); the second looks
    for a surrogate, which only an invalid text has."""
    if s._kind == PY_UNICODE_4BYTE_KIND:
        return 0, WIDE
    n = len(s)
    nb = 0
    for i in range(n):
        c = _get_code_point(s, i)
        out[i] = c
        nb += 1 + int(c >= 0x80) + int(c >= 0x800)
    odd = 0
    for i in range(n):
        odd += int((out[i] & 0xF800) == 0xD800)
    if odd:
        for i in range(n):
            if (out[i] & 0xF800) == 0xD800:
                return -(i + 1), 0
    return n, nb


class UnitBuffer:
    """A host buffer, grown as needed, that ``convert`` fills (one per engine: requests
    hold the engine's lock)."""

    def __init__(self):
        self._buf = np.empty(0, dtype=np.uint16)

    def convert(self, text: str) -> tuple[np.ndarray, int] | None:
        """(16-bit units of ``text``, a view into the buffer; its UTF-8 byte count), or None
        for a str with a character beyond U+FFFF (the UTF-8 upload serves it).

        A lone surrogate raises ``InvalidTextError``, exactly as the UTF-8 upload's check.
        """
        if self._buf.size < len(text):
            self._buf = np.empty(max(len(text), 2 * self._buf.size), dtype=np.uint16)
        n, nb = _units(text, self._buf)
        if nb == WIDE:
            return None
        if n < 0:
            utf8_bytes(text)  # raises InvalidTextError naming the surrogate and its index
            raise AssertionError(f"lone surrogate at {-n - 1} but UTF-8 encodes the text")
        return self._buf[:n], int(nb)
