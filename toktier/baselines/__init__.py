"""Baselines, all timed on identical texts.  Each is a small adapter with ``name`` and methods
``full(text)`` (a stateless full encode) and, where it has one, ``prewarm(text)``.

- ``hf``: the reference (HF tokenizers, serial);
- ``fastokens``: full re-encode;
- ``gigatoken``: full encode; "prewarmed" reuses one object whose cache has seen the
  session text, "empty" uses a new object (construction not timed).
"""

from __future__ import annotations

import contextlib


class HFFull:
    name = "HF full re-encode"

    def __init__(self, tok):
        self._hf = tok.hf

    def full(self, text: str):
        return self._hf.encode(text, add_special_tokens=False).ids


class FastokensFull:
    name = "fastokens full re-encode"

    def __init__(self, tok):
        import fastokens

        self._f = fastokens.Tokenizer.from_file(tok.checked_path())

    def full(self, text: str):
        return self._f.encode(text, add_special_tokens=False).ids


class GigatokenPrewarmed:
    """One object per session: it has encoded everything before the timed request."""

    name = "Gigatoken prewarmed"

    def __init__(self, tok):
        import gigatoken

        self._path = tok.checked_path()
        self._g = gigatoken.Tokenizer(self._path)

    def new_session(self) -> None:
        import gigatoken

        self._g = gigatoken.Tokenizer(self._path)

    def full(self, text: str):
        return self._g.encode(text)


def available(tok) -> list:
    """The baselines that import on this machine (missing optional packages are skipped)."""
    out = [HFFull(tok)]
    for cls in (FastokensFull, GigatokenPrewarmed):
        with contextlib.suppress(ImportError):
            out.append(cls(tok))
    return out
