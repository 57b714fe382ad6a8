"""Fault injection for the shadow verifier: wrong ID sequences of the shapes real bugs take.

Five mutations (paper §6.8): substitution, deletion, duplication, adjacent swap,
and a same-length tail resplit -- the silent shape of the history-dependent bug
the verifier found upstream: the text is split into tokens differently near the
end, every token is valid and the decoded text is unchanged, and the count stays
the same, so neither a length check nor a decode check sees it.
"""

from __future__ import annotations

import numpy as np

KINDS = ("substitution", "deletion", "duplication", "swap", "tail_resplit")
_RESPLIT_TAIL_TOKENS = 64


class NoFaultPossible(ValueError):
    """This mutation cannot change this ID sequence (too short, or no alternative split)."""


def inject(kind: str, ids: np.ndarray, rng: np.random.Generator, *, text=None, tokenizer=None):
    """A mutated copy of ``ids`` that differs from it; ``tail_resplit`` needs ``text`` and ``tokenizer``."""
    ids = np.asarray(ids, dtype=np.uint32)
    n = len(ids)
    if kind == "substitution":
        if n == 0:
            raise NoFaultPossible("no token to substitute")
        out = ids.copy()
        i = int(rng.integers(n))
        out[i] = (int(ids[i]) + 1 + int(rng.integers(1000))) % (1 << 17)
        return out
    if kind == "deletion":
        if n == 0:
            raise NoFaultPossible("no token to delete")
        return np.delete(ids, int(rng.integers(n)))
    if kind == "duplication":
        if n == 0:
            raise NoFaultPossible("no token to duplicate")
        i = int(rng.integers(n))
        return np.insert(ids, i, ids[i])
    if kind == "swap":
        cand = np.flatnonzero(ids[:-1] != ids[1:])
        if cand.size == 0:
            raise NoFaultPossible("no two adjacent tokens differ")
        i = int(cand[rng.integers(cand.size)])
        out = ids.copy()
        out[i], out[i + 1] = ids[i + 1], ids[i]
        return out
    if kind == "tail_resplit":
        if text is None or tokenizer is None:
            raise ValueError("tail_resplit needs the text and the tokenizer")
        return tail_resplit(ids, text, tokenizer, rng)
    raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(KINDS)}")


def tail_resplit(ids: np.ndarray, text: str, tokenizer, rng: np.random.Generator) -> np.ndarray:
    """Same count, same decoded text, different IDs: re-encode the tail cut at a non-boundary.

    The tail (last tokens) is encoded by the reference as two separate pieces cut
    inside a token; the first cut whose pieces give the tail's token count wins.
    """
    enc = tokenizer.hf.encode(text, add_special_tokens=False)
    if len(enc.ids) != len(ids):
        raise ValueError("ids are not the reference encoding of text")
    offsets = enc.offsets
    k = min(len(ids), _RESPLIT_TAIL_TOKENS)
    if k < 2:
        raise NoFaultPossible("too few tokens to resplit")
    head = len(ids) - k
    lo = offsets[head][0]
    tail = text[lo:]
    bounds = {e - lo for _, e in offsets[head:]} | {s - lo for s, _ in offsets[head:]}
    cuts = [c for c in range(1, len(tail)) if c not in bounds]
    rng.shuffle(cuts)
    for c in cuts:
        a = tokenizer.hf.encode(tail[:c], add_special_tokens=False).ids
        b = tokenizer.hf.encode(tail[c:], add_special_tokens=False).ids
        if len(a) + len(b) == k:
            new = np.concatenate([ids[:head], np.asarray(a + b, dtype=np.uint32)])
            if not np.array_equal(new, ids):
                return new
    raise NoFaultPossible("no same-length resplit of the tail exists")
