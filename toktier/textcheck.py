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


def utf8_array(text: object, what: str = "text") -> np.ndarray:
    """``text``'s UTF-8 bytes (uint8, read-only), checked as ``check_text`` checks it.

    The engines need the bytes anyway, and encoding is also the fastest check for lone
    surrogates (1.35 ms per 1M multilingual characters, against ~5.5 ms for a regex), so
    one encode both validates and converts: non-ASCII text used to be encoded twice.
    """
    return np.frombuffer(utf8_bytes(text, what), dtype=np.uint8)


def utf8_bytes(text: object, what: str = "text") -> bytes:
    """``text``'s UTF-8 bytes, checked as ``check_text`` checks it (one encode for both)."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be str, got {type(text).__name__}")
    return _utf8(text, what)


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        cp = ord(text[exc.start])
        raise InvalidTextError(
            f"{what} contains a lone surrogate U+{cp:04X} at index {exc.start}; "
            "it has no UTF-8 encoding, so no tokenizer can encode it exactly"
        ) from None
