"""Input validation shared by every entry point."""

from __future__ import annotations

import numpy as np

from .errors import InvalidTextError


def check_text(text: object, what: str = "text") -> str:
    """Return ``text`` if it is a str the reference can encode; raise a clear error otherwise.

    Lone surrogates cannot be represented in UTF-8, so the reference engine cannot
    see them; we refuse them instead of silently replacing them.
    """
    if not isinstance(text, str):
        raise TypeError(f"{what} must be str, got {type(text).__name__}")
    if text.isascii():
        return text
    _utf8(text, what)
    return text


# from this many characters a non-ASCII str's UTF-8 is written by ``engine.utf8`` (a
# compiled pass, ~4 us to call: below this, ``str.encode`` is as fast or faster)
COMPILED_MIN_CHARS = 32_768


def utf8_array(text: object, what: str = "text", lo: int = 0, hi: int | None = None,
               ) -> np.ndarray:  # fmt: skip
    """``text[lo:hi]``'s UTF-8 bytes (uint8, read-only), checked as ``check_text`` checks it.

    The engines need the bytes anyway, and encoding is also the fastest check for lone
    surrogates (1.35 ms per 1M multilingual characters, against ~5.5 ms for a regex), so
    one encode both validates and converts: non-ASCII text used to be encoded twice.
    A long str that is not all ASCII is encoded by ``engine.utf8``'s compiled pass (the
    same bytes; faster on text that is mostly ASCII, and without the GIL), in place for
    a character range: no slice of the str is made.  A lone surrogate is reported at its
    index in ``text``.
    """
    if not isinstance(text, str):
        raise TypeError(f"{what} must be str, got {type(text).__name__}")
    hi = len(text) if hi is None else hi
    if hi - lo >= COMPILED_MIN_CHARS and not text.isascii():
        from .engine.utf8 import encode_range

        u8 = encode_range(text, lo, hi)
        if isinstance(u8, np.ndarray):
            u8.flags.writeable = False
            return u8
        if u8 is not None:  # a lone surrogate at this index: the usual error
            _surrogate_error(text, u8, what)
    part = text if (lo, hi) == (0, len(text)) else text[lo:hi]
    try:
        return np.frombuffer(_utf8(part, what), dtype=np.uint8)
    except InvalidTextError:
        if part is text:
            raise
        for i in range(lo, hi):  # report the index in ``text``, not in the slice
            if 0xD800 <= ord(text[i]) <= 0xDFFF:
                _surrogate_error(text, i, what)
        raise


def utf8_bytes(text: object, what: str = "text") -> bytes:
    """``text``'s UTF-8 bytes, checked as ``check_text`` checks it (one encode for both)."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be str, got {type(text).__name__}")
    return _utf8(text, what)


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        _surrogate_error(text, exc.start, what)


def _surrogate_error(text: str, index: int, what: str):
    raise InvalidTextError(
        f"{what} contains a lone surrogate U+{ord(text[index]):04X} at index {index}; "
        "it has no UTF-8 encoding, so no tokenizer can encode it exactly"
    ) from None
