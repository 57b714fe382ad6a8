"""Input validation shared by every entry point."""

from __future__ import annotations

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
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        cp = ord(text[exc.start])
        raise InvalidTextError(
            f"{what} contains a lone surrogate U+{cp:04X} at index {exc.start}; "
            "it has no UTF-8 encoding, so no tokenizer can encode it exactly"
        ) from None
    return text
