"""Claim L1: inputs on which LoPT's length threshold accepts a seam that is not exact.

For each tokenizer the search builds inputs from generators aimed at what a seam can hide
(below), places one LoPT seam -- left chunk ``text[:b]``, right chunk ``text[c:]``, overlap
``[c, b)`` of ``O`` characters -- and runs LoPT's position-aware merge
(``toktier.baselines.lopt.merge_at_seam``) with its length threshold.  A seam LoPT accepts
is a *counterexample* when the spliced IDs differ from ``tok.reference(text)``.  For every
accepted seam it also asks toktier's family certificate whether the splice point ``p`` is a
stable boundary (``stable[class(text[p-1]), class(text[p])]``, both characters NFC-safe where
the family normalizes, no added-token literal across ``p``); the claim is that the
certificate refuses every counterexample.

Generators (each places the seam inside its "hot" region when it is longer than ``O``):

- ``nfc_long_range``: a base letter, a run of combining marks that do not compose with it,
  then a mark that does (``a`` + U+0316 x k + U+0301).  NFC composes the base with the
  *last* mark, so the first character of the normalized text depends on a character ``k``
  positions later -- for any ``k``, hence for any overlap.  Only NFC families are affected.
- ``merge_gap_word``: a vocabulary word that is its own pre-token and that the BPE merges
  alone do not reach (tokenizers with ``ignore_merges``: the whole word is looked up first);
  both truncated chunks then fall back to the merges and agree on the pieces inside it.
- ``digit_run`` (``\\p{N}{1,3}`` groups counted from the run start), ``whitespace_run``
  (``\\s+(?!\\S)``, ``\\s*[\\r\\n]+``), ``contraction``, ``letter_punct`` (a letter run takes
  one leading punctuation character), ``long_pretoken`` (vocabulary pieces glued into one long
  pre-token), ``random_fragments`` (the adversarial campaign's pitfall list).  A long
  alphanumeric run also reaches WordPiece's ``max_input_chars_per_word``: the whole word
  becomes ``[UNK]`` while both truncated chunks still split it into pieces.

Position matching makes LoPT refuse most seams that pre-tokenization alone would spoil (a
digit run cut out of phase, a whitespace run cut short): the two chunks then disagree on
the spans.  What it cannot see is a difference on which both truncated chunks agree.

The search is deterministic for a seed.  ``run(tok_names, trials, seed)`` is the entry point;
``summary_rows`` flattens its result for the table.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import tokenizers

from ..baselines.lopt import (
    PUBLISHED_OVERLAP_CHARS,
    PUBLISHED_THRESHOLD,
    lopt_merge,
    merge_at_seam,
)
from ..repair import rules_for
from .adversarial import PITFALLS

DEFAULT_OVERLAPS = (16, 64, 256, PUBLISHED_OVERLAP_CHARS)
SEAMS_PER_INPUT = 2
GENERATORS = (
    "nfc_long_range",
    "merge_gap_word",
    "digit_run",
    "whitespace_run",
    "contraction",
    "letter_punct",
    "long_pretoken",
    "random_fragments",
)


# --- the tokenizer side -----------------------------------------------------------------
class _Enc:
    """Reference encodes with offsets, as LoPT's workers produce them."""

    def __init__(self, tok):
        self.tok = tok
        self.hf = tok.hf

    def __call__(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        e = self.hf.encode(text, add_special_tokens=False)
        return (
            np.asarray(e.ids, dtype=np.int64),
            np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2),
        )


def _doc(tok) -> dict:
    return tok.document()


@cache
def _vocab_strings(path: str) -> tuple[str, ...]:
    hf = tokenizers.Tokenizer.from_file(path)
    vocab = hf.get_vocab(with_added_tokens=False)
    ids = sorted(vocab.values())
    strs = hf.decode_batch([[i] for i in ids])
    return tuple(s for s in strs if s and "\ufffd" not in s)


@cache
def merge_gap_words(path: str) -> tuple[str, ...]:
    """Vocabulary words emitted whole only thanks to ``ignore_merges`` (merges give >= 3 pieces)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    model = doc.get("model") or {}
    if model.get("type") != "BPE" or not model.get("ignore_merges"):
        return ()
    hf = tokenizers.Tokenizer.from_file(path)
    model["ignore_merges"] = False
    merges_only = tokenizers.Tokenizer.from_str(json.dumps(doc))
    words = [s for s in _vocab_strings(path) if len(s) >= 4]
    whole = hf.encode_batch(words, add_special_tokens=False)
    pieces = merges_only.encode_batch(words, add_special_tokens=False)
    return tuple(
        w
        for w, a, b in zip(words, whole, pieces, strict=True)
        if len(a.ids) == 1 and len(b.ids) >= 3
    )


@cache
def _pieces(path: str, kind: str) -> tuple[str, ...]:
    pat = {"L": r"[^\W\d_]+", "P": r"[^\w\s]+"}[kind]
    return tuple(s for s in _vocab_strings(path) if re.fullmatch(pat, s))


def _nfc_pairs() -> tuple[list[str], list[tuple[str, str]]]:
    """Marks that compose with nothing here, and (base, composing mark) pairs, checked live."""
    marks = [
        m
        for m in ("\u0316", "\u0317", "\u0318", "\u0319", "\u031c", "\u0329", "\u0952", "\u05b0")
        if unicodedata.combining(m)
    ]
    finals = ("\u0301", "\u0300", "\u0302", "\u0308", "\u0303")
    pairs = []
    for base in "aeiounAEIOUcs":
        if any(len(unicodedata.normalize("NFC", base + m)) == 1 for m in marks):
            continue
        for f in finals:
            low = [m for m in marks if unicodedata.combining(m) < unicodedata.combining(f)]
            if low and len(unicodedata.normalize("NFC", base + f)) == 1:
                pairs.append((base, f))
    return marks, pairs


_MARKS, _NFC_PAIRS = _nfc_pairs()
_WORDS = ("alpha", "The", "value", "résumé", "x", "def", "Über", "na", "self", "word")


# --- generators: (text, hot_lo, hot_hi) or None -----------------------------------------
def _wrap(rng: random.Random, core: str, sep: str = " ") -> tuple[str, int, int]:
    pre = rng.choice(_WORDS) + sep
    post = sep + rng.choice(_WORDS)
    return pre + core + post, len(pre), len(pre) + len(core)


def _gen_nfc(rng, tok, o):
    base, final = rng.choice(_NFC_PAIRS)
    low = [m for m in _MARKS if unicodedata.combining(m) < unicodedata.combining(final)]
    k = o + rng.randint(2, o + 8)
    # mostly one mark repeated; sometimes a mix (canonical reordering then moves marks too)
    mixed = rng.random() >= 0.7
    run = "".join(rng.choice(low) for _ in range(k)) if mixed else rng.choice(low) * k
    text, lo, hi = _wrap(rng, base + run + final)
    return text, lo + 1, hi - 1


_GAP_CONTEXTS = (("\n", "\n"), ("", ""), ("x", "x"), ("\n\n", "\n"), ("1", "1"), ('"', '"'))


def _gen_gap(rng, tok, o):
    words = [w for w in merge_gap_words(tok.checked_path()) if len(w) >= o + 3]
    if not words:
        return None
    w = rng.choice(words)
    enc = tok.hf
    for pre, post in rng.sample(_GAP_CONTEXTS, len(_GAP_CONTEXTS)):
        text = pre + w + post
        spans = enc.encode(text, add_special_tokens=False).offsets
        if (len(pre), len(pre) + len(w)) in spans:
            return text, len(pre), len(pre) + len(w)
    return None


def _gen_digits(rng, tok, o):
    run = "".join(rng.choice("0123456789") for _ in range(o + rng.randint(2, o + 8)))
    return _wrap(rng, run, rng.choice([" ", "", "x", "\n"]))


def _gen_ws(rng, tok, o):
    alphabet = [" ", " ", " ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\r"]
    run = "".join(rng.choice(alphabet) for _ in range(o + rng.randint(2, o + 8)))
    return _wrap(rng, run, "")


_CONTRACTIONS = (
    "don't",
    "it's",
    "we'll",
    "they're",
    "I'M",
    "you'VE",
    "she'd",
    "it\u2019s",
    "'s",
    "'",
)


def _gen_contraction(rng, tok, o):
    out = ""
    while len(out) < o + 4:
        out += rng.choice(_CONTRACTIONS) + rng.choice(["", " ", "  ", "\n"])
    return _wrap(rng, out)


def _gen_letter_punct(rng, tok, o):
    out = ""
    while len(out) < o + 4:
        out += rng.choice("(.\"_-/#[:@'") + "".join(
            rng.choice("abcdefghijklmnopqrstuvwxyzÀéÜß") for _ in range(rng.randint(1, 9))
        )
    return _wrap(rng, out)


def _gen_long_pretoken(rng, tok, o):
    pieces = _pieces(tok.checked_path(), rng.choice("LP"))
    if not pieces:
        return None
    out = ""
    while len(out) < o + 4:
        out += rng.choice(pieces)
    return _wrap(rng, out)


def _gen_fragments(rng, tok, o):
    out = ""
    while len(out) < o + 4:
        out += rng.choice(PITFALLS)
    return out, 0, len(out)


_GEN = {
    "nfc_long_range": _gen_nfc,
    "merge_gap_word": _gen_gap,
    "digit_run": _gen_digits,
    "whitespace_run": _gen_ws,
    "contraction": _gen_contraction,
    "letter_punct": _gen_letter_punct,
    "long_pretoken": _gen_long_pretoken,
    "random_fragments": _gen_fragments,
}


# --- one seam ---------------------------------------------------------------------------
@dataclass
class SeamResult:
    accepted: bool
    divergent: bool = False
    boundary: int = -1
    run_tokens: int = 0
    run_chars: int = 0
    next_id: int | None = None  # first token taken from the right chunk
    lopt_ids: list[int] = field(default_factory=list)


def evaluate_seam(enc: _Enc, text: str, c: int, b: int, threshold: int, ref: list[int]):
    """LoPT's verdict on the seam with overlap ``[c, b)``, and whether its splice is exact."""
    l_ids, l_off = enc(text[:b])
    r_ids, r_off = enc(text[c:])
    s = merge_at_seam(l_ids, l_off, r_ids, r_off, c, threshold)
    if s is None:
        return SeamResult(False)
    merged = [*l_ids[: s.left_keep].tolist(), *r_ids[s.right_from :].tolist()]
    nxt = int(r_ids[s.right_from]) if s.right_from < len(r_ids) else None
    return SeamResult(True, merged != ref, s.boundary, s.run_tokens, s.run_chars, nxt, merged)


def certificate(rules, text: str, p: int, next_id: int | None = None) -> tuple[bool, str]:
    """toktier's verdict on splicing at ``p`` (``repair._certify_run``'s boundary test);
    ``next_id`` is the token that would start at ``p`` (WordPiece: no ``##`` continuation)."""
    if rules is None:
        return False, "family never spliced"
    if not 0 < p < len(text):
        return False, "boundary at a text edge"
    if rules.continuation is not None and next_id is not None and rules.continuation[next_id]:
        return False, "WordPiece continuation token at the boundary"
    x, y = ord(text[p - 1]), ord(text[p])
    cx, cy = int(rules.class_of[x]), int(rules.class_of[y])
    if not rules.stable[cx, cy]:
        names = rules.rules.class_names
        return False, f"unstable class pair ({names[cx]}, {names[cy]})"
    if rules.nfc_unsafe is not None and (rules.nfc_unsafe[x] or rules.nfc_unsafe[y]):
        return False, "NFC-unsafe character at the boundary"
    if rules.straddles_literal(text, p):
        return False, "added-token literal across the boundary"
    return True, "stable boundary"


def shrink(enc: _Enc, text: str, c: int, o: int, threshold: int, budget: int = 300):
    """Greedily delete characters while the seam stays an accepted counterexample."""

    def bad(t: str, cc: int) -> bool:
        if cc < 1 or cc + o >= len(t):
            return False
        return evaluate_seam(enc, t, cc, cc + o, threshold, enc.tok.reference(t)).divergent

    step = max(1, len(text) // 8)
    while step >= 1 and budget > 0:
        i = len(text) - step
        changed = False
        while i >= 0 and budget > 0:
            t2 = text[:i] + text[i + step :]
            c2 = c - step if i + step <= c else (c if i >= c + o else None)
            if c2 is not None:
                budget -= 1
                if bad(t2, c2):
                    text, c, changed = t2, c2, True
            i -= step
        if not changed:
            step //= 2
    return text, c


# --- the campaign -----------------------------------------------------------------------
@dataclass
class _Tally:
    inputs: int = 0
    seams: int = 0
    accepted: int = 0
    accepted_short_run: int = 0  # matched run covers fewer characters than the longest token
    certificate_accepts: int = 0  # accepted seams whose boundary toktier would also accept
    divergent: int = 0
    divergent_short_run: int = 0
    certificate_refuses_divergent: int = 0

    def add(self, other: _Tally) -> None:
        for k in self.__dataclass_fields__:
            setattr(self, k, getattr(self, k) + getattr(other, k))


def _first_diff(a: list[int], b: list[int]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def search_tokenizer(
    tok,
    trials: int,
    *,
    seed: int = 0,
    overlaps=DEFAULT_OVERLAPS,
    threshold: int = PUBLISHED_THRESHOLD,
    max_examples: int = 4,
    generators=GENERATORS,
) -> dict:
    rng = random.Random(f"{seed}:{tok.name}:{threshold}")
    enc = _Enc(tok)
    rules = rules_for(tok)
    longest = tok.longest_token_chars
    overlaps = sorted(set(int(o) for o in overlaps))
    total = _Tally()
    by_overlap = {o: _Tally() for o in overlaps}
    by_gen = {g: _Tally() for g in generators}
    shortest: dict[int, tuple] = {}  # overlap -> (len, overlap, text, c, generator)
    reasons: dict[str, int] = {}
    gap_words = len(merge_gap_words(tok.checked_path()))
    for t in range(trials):
        o = overlaps[t % len(overlaps)]
        gname = generators[(t // len(overlaps)) % len(generators)]
        made = _GEN[gname](rng, tok, o)
        if made is None:
            gname = "random_fragments"
            made = _gen_fragments(rng, tok, o)
        text, lo, hi = made
        n = len(text)
        if n < o + 2:
            continue
        tally = _Tally(inputs=1)
        ref = tok.reference(text)
        for _ in range(SEAMS_PER_INPUT):
            hot = hi - lo >= o + 2  # the overlap fits inside the generator's hot region
            c = rng.randint(lo + 1, hi - o - 1) if hot else rng.randint(1, n - o - 1)
            b = c + o
            tally.seams += 1
            r = evaluate_seam(enc, text, c, b, threshold, ref)
            if not r.accepted:
                continue
            tally.accepted += 1
            short = r.run_chars < longest
            tally.accepted_short_run += short
            ok, why = certificate(rules, text, r.boundary, r.next_id)
            tally.certificate_accepts += ok
            if r.divergent:
                tally.divergent += 1
                tally.divergent_short_run += short
                tally.certificate_refuses_divergent += not ok
                reasons[why] = reasons.get(why, 0) + 1
                cand = (n, o, text, c, gname)
                shortest[o] = min(shortest.get(o, cand), cand)
        total.add(tally)
        by_overlap[o].add(tally)
        by_gen.setdefault(gname, _Tally()).add(tally)
    examples = _examples(enc, rules, list(shortest.values()), threshold, max_examples)
    doc = _doc(tok)
    return {
        "tokenizer": tok.name,
        "family": tok.family,
        "normalizer": (doc.get("normalizer") or {}).get("type"),
        "ignore_merges": bool((doc.get("model") or {}).get("ignore_merges")),
        "merge_gap_words": gap_words,
        "longest_token_chars": longest,
        **vars(total),
        "certificate_refuses_all": total.certificate_refuses_divergent == total.divergent,
        "refusal_reasons": reasons,
        "by_overlap": {str(o): vars(v) for o, v in by_overlap.items()},
        "by_generator": {g: vars(v) for g, v in by_gen.items()},
        "examples": examples,
    }


def _examples(enc: _Enc, rules, shortest, threshold: int, max_examples: int) -> list[dict]:
    """The shortest counterexample per overlap, shrunk; at most ``max_examples`` overlaps."""
    out = []
    for _, o, text, c, gname in sorted(shortest, key=lambda x: x[1])[:max_examples]:
        text, c = shrink(enc, text, c, o, threshold)
        ref = enc.tok.reference(text)
        r = evaluate_seam(enc, text, c, c + o, threshold, ref)
        ok, why = certificate(rules, text, r.boundary, r.next_id)
        out.append(
            {
                "generator": gname,
                "text": text,
                "chars": len(text),
                "overlap": o,
                "right_chunk_start": c,
                "left_chunk_end": c + o,
                "boundary": r.boundary,
                "run_tokens": r.run_tokens,
                "run_chars": r.run_chars,
                "lopt_ids": r.lopt_ids,
                "reference_ids": ref,
                "first_difference": _first_diff(r.lopt_ids, ref),
                "certificate_accepts": ok,
                "certificate_reason": why,
                "end_to_end_divergent": _end_to_end(enc, text, c, o, threshold) != ref,
            }
        )
    return out


def _end_to_end(enc: _Enc, text: str, c: int, o: int, threshold: int) -> list[int]:
    """The whole LoPT pipeline (chunk length ``c``, overlap ``o``) on the example, in-process."""

    def encode_many(bounds):
        return [enc(text[s:e]) for s, e in bounds]

    ids, _ = lopt_merge(text, encode_many, enc.tok.reference, c, o, threshold)
    return ids.tolist()


def run(
    tok_names,
    trials: int,
    seed: int = 0,
    *,
    overlaps=DEFAULT_OVERLAPS,
    threshold: int = PUBLISHED_THRESHOLD,
    max_examples: int = 4,
) -> dict:
    """Search every named tokenizer; ``trials`` inputs each (``SEAMS_PER_INPUT`` seams per input)."""
    from .. import load

    per = [
        search_tokenizer(
            load(name),
            trials,
            seed=seed,
            overlaps=overlaps,
            threshold=threshold,
            max_examples=max_examples,
        )
        for name in tok_names
    ]
    return {
        "claim": "L1",
        "config": {
            "trials": trials,
            "seed": seed,
            "threshold": threshold,
            "overlaps": sorted(set(int(o) for o in overlaps)),
            "seams_per_input": SEAMS_PER_INPUT,
            "published_overlap_chars": PUBLISHED_OVERLAP_CHARS,
            "published_threshold": PUBLISHED_THRESHOLD,
            "published_values_verified": False,
        },
        "tokenizers": per,
        "divergent": sum(p["divergent"] for p in per),
        "certificate_refuses_all": all(p["certificate_refuses_all"] for p in per),
    }


def summary_rows(result: dict) -> list[dict]:
    """One row per (tokenizer, overlap) plus one ``all`` row per tokenizer."""
    rows = []
    keys = (
        "inputs",
        "seams",
        "accepted",
        "accepted_short_run",
        "divergent",
        "divergent_short_run",
        "certificate_refuses_divergent",
        "certificate_accepts",
    )
    for p in result["tokenizers"]:
        shortest = {}
        for ex in p["examples"]:
            shortest[str(ex["overlap"])] = ex["chars"]
        for o, t in [*p["by_overlap"].items(), ("all", p)]:
            row = {"tokenizer": p["tokenizer"], "family": p["family"], "overlap": o}
            row.update({k: t[k] for k in keys})
            row["shortest_counterexample_chars"] = (
                shortest.get(o) if o != "all" else min(shortest.values(), default=None)
            )
            rows.append(row)
    return rows
