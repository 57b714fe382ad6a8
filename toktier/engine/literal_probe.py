"""Added tokens: ask the reference how it matches them before the engine serves a tokenizer.

The engine extracts added tokens with its own trie, taking each literal's id from the
reference's added vocabulary (``registry.reference_added_tokens``), never from the file.
Whether a user's file uses only the literal semantics the engine implements (literals
that are also vocabulary entries, literals that contain or overlap one another,
normalized literals, special or not) is a question for the reference itself: each
literal alone and between letters, digits, spaces, newlines and a multi-byte
character, doubled, and every overlapping or nested pair joined.  One disagreement and
the engine refuses the tokenizer (``EngineUnsupported``): it stays exact on the
reference path.  The probe is a few thousand short texts: milliseconds per literal set.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from .tables import EngineUnsupported

# Contexts around one literal: word characters on both sides, spaces, newlines, a digit
# and a contraction, a multi-byte neighbour, and the literal twice in a row.
_CONTEXTS = ("{c}", "a{c}b", " {c} ", "\n{c}\n", "1{c}'s", "é{c}中", "{c}{c}", "x {c}{c} y")


def overlapping_pairs(literals: list[str], limit: int) -> list[tuple[str, str]]:
    """Pairs (a, b) where b contains a, or a's suffix is b's prefix (at most ``limit``)."""
    prefixes: dict[str, list[str]] = defaultdict(list)
    for b in literals:
        for k in range(1, len(b)):
            prefixes[b[:k]].append(b)
    known = set(literals)
    pairs: set[tuple[str, str]] = set()
    for b in literals:  # nested: every shorter literal inside b
        for i in range(len(b)):
            for j in range(i + 1, len(b) + 1):
                if j - i < len(b) and b[i:j] in known:
                    pairs.add((b[i:j], b))
    for a in literals:  # overlapping: a's suffix is b's prefix
        for k in range(1, len(a)):
            pairs.update((a, b) for b in prefixes.get(a[-k:], ()) if b != a)
    return sorted(pairs)[:limit]


def probe_texts(tok, *, max_pairs: int = 4096) -> list[str]:
    """The texts the probe encodes with both the engine and the reference."""
    literals = sorted({t.content for t in tok.added_tokens if t.content})
    texts = [ctx.format(c=c) for c in literals for ctx in _CONTEXTS]
    for t in tok.added_tokens:  # a normalized literal may match a text that normalizes to it
        if t.normalized and t.content:
            for form in ("NFD", "NFKD", "NFC"):
                variant = unicodedata.normalize(form, t.content)
                if variant != t.content:
                    texts += [variant, f"a{variant}b"]
    for a, b in overlapping_pairs(literals, max_pairs):
        texts += [a + b, b + a, f"{a} {b}", a[:-1] + b]
    return texts


def check_literals(tok, encode: Callable[[str], np.ndarray]) -> int:
    """Raise ``EngineUnsupported`` unless ``encode`` equals the reference on every probe text.

    Returns how many texts were compared.
    """
    texts = probe_texts(tok)
    if not texts:
        return 0
    refs = tok.hf.encode_batch(texts, add_special_tokens=False)
    for text, ref in zip(texts, refs, strict=True):
        got = encode(text)
        if not np.array_equal(np.asarray(got, dtype=np.int64), np.asarray(ref.ids, dtype=np.int64)):
            raise EngineUnsupported(
                f"added tokens: the engine gives {list(map(int, got))} on {text!r}, the reference "
                f"{ref.ids}; this file's literals stay on the reference path"
            )
    return len(texts)
