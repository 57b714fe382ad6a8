"""Stable (synchronizing) boundaries per family: the certificate that makes a splice exact.

A boundary between characters ``x = S[p-1]`` and ``y = S[p]`` is *stable* for a
family when, for every left context ending in x's class and every right
context starting with y's class, the pre-tokenizer starts a piece at p, the
pieces right of p are those of the right context alone, and the pieces left
of p do not depend on the right context.  Each family maps code points to a
few classes (probed from the reference, see ``classes``) and lists the stable
class pairs, derived from its split pattern's alternatives below and checked
by the certificate-level oracle (``toktier.campaigns.oracle``).

Derivations (byte-level families; "O" = not letter/number/whitespace):

- cl100k / qwen (``[^\\r\\n\\p{L}\\p{N}]?\\p{L}+``, `` ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*``, ``\\s+(?!\\S)``):
  a letter run, a number group or an O run ends exactly where its class ends,
  and nothing before p can reach across unless the next piece may take one
  leading character: letters take one leading non-letter/non-number (O→L,
  WS→L unstable), whitespace hands its last space to the next piece (WS→*
  unstable), an O run absorbs following CR/LF (O→CRLF unstable), and digit
  groups count from the run start (N→N unstable with ``{1,3}``, stable with
  qwen's single ``\\p{N}``).  The contraction alternative starts with an
  apostrophe, so L→' is still stable.
- qwen-lm: marks join letter runs (class L = L ∪ M) and leave the O run.
- o200k: marks belong to letter runs *and* to the O run (``[^\\s\\p{L}\\p{N}]``), so
  a mark is its own class and only MARK→N / MARK→WS are stable (the oracle
  found MARK→CRLF and MARK→O counterexamples when marks were counted as
  letters); the contraction suffix attaches ``'s`` etc. to the word (L→'
  unstable); CamelCase: a lowercase letter (Ll) followed by an uppercase one
  (Lu, Lt) always ends the word; the O run also absorbs ``/`` (an O→O pair).
- tekken: o200k without the contraction suffix (so a letter run ends where its class
  ends, before an apostrophe too: L→' stable) and with single digits (N→N stable).
- In every byte-level family a CR/LF ends its whitespace piece (``\\s*[\r\n]+``,
  or the O run's ``[\r\n]*``), and no non-space piece takes a leading CR/LF,
  so CRLF→(non-whitespace) is stable -- except in o200k, whose O run also
  absorbs a ``/`` after CR/LF (the oracle's counterexample ``'\r/``); numbers
  never take a leading space (WS→N stable).
- deepseek: stage 1 isolates ``\\p{N}{1,3}``, so every transition into or out of
  a number is stable except N→N; stage 2 isolates CJK runs, so every other
  transition into or out of CJK is stable; in stage 3 the ASCII rule
  ``[ascii punct][A-Za-z]+`` makes ASCII punct→ASCII letter unstable.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from .classes import BERT_PUNCT, BERT_WS, CLASS_BITS, NFC_UNSAFE, NORM_CHANGES, ClassTable

_B = {k: v[0] for k, v in CLASS_BITS.items()}


@dataclass(frozen=True)
class FamilyRules:
    family: str
    class_names: tuple[str, ...]
    stable: np.ndarray  # bool[n_classes, n_classes]: stable[prev, next]
    nfc: bool  # boundaries must also be NFC-safe on both sides

    def pairs(self) -> list[tuple[str, str]]:
        return [
            (self.class_names[a], self.class_names[b])
            for a, b in zip(*np.nonzero(self.stable), strict=True)
        ]


def _matrix(names: tuple[str, ...], pairs: set[tuple[str, str]]) -> np.ndarray:
    idx = {n: i for i, n in enumerate(names)}
    m = np.zeros((len(names), len(names)), dtype=bool)
    for a, b in pairs:
        m[idx[a], idx[b]] = True
    return m


# --- cl100k lineage -------------------------------------------------------------------
CL_NAMES = ("L", "N", "CRLF", "WS", "APOS", "O")


def _cl_pairs(single_digit: bool) -> set[tuple[str, str]]:
    pairs = {
        ("L", "N"), ("L", "O"), ("L", "APOS"), ("L", "WS"), ("L", "CRLF"),
        ("N", "L"), ("N", "O"), ("N", "APOS"), ("N", "WS"), ("N", "CRLF"),
        ("O", "N"), ("O", "WS"), ("APOS", "N"), ("APOS", "WS"),
        ("CRLF", "L"), ("CRLF", "N"), ("CRLF", "O"), ("CRLF", "APOS"), ("WS", "N"),
    }  # fmt: skip
    if single_digit:
        pairs.add(("N", "N"))
    return pairs


# --- o200k ----------------------------------------------------------------------------
O200K_NAMES = ("LOWER", "UPPER", "LOTHER", "MARK", "N", "CRLF", "WS", "APOS", "O")
_LETTERISH = ("LOWER", "UPPER", "LOTHER")
O200K_PAIRS = (
    {(a, b) for a in _LETTERISH for b in ("N", "WS", "CRLF", "O")}
    | {("N", b) for b in (*_LETTERISH, "MARK", "O", "APOS", "WS", "CRLF")}
    | {
        ("O", "N"),
        ("O", "WS"),
        ("APOS", "N"),
        ("APOS", "WS"),
        ("MARK", "N"),
        ("MARK", "WS"),
        ("WS", "N"),
    }
    | {("CRLF", b) for b in (*_LETTERISH, "MARK", "N", "APOS")}  # not CRLF→O: "'\r/" is one piece
    | {("LOWER", "UPPER")}
)

# --- tekken: o200k's classes; no contraction suffix, single digits -----------------------
TEKKEN_PAIRS = O200K_PAIRS | {(a, "APOS") for a in _LETTERISH} | {("N", "N")}

# --- deepseek -------------------------------------------------------------------------
DS_NAMES = ("N", "CJK", "LA", "L", "PA", "PS", "CRLF", "WS", "X")
_DS_ALL = DS_NAMES
DS_PAIRS = (
    {(a, "N") for a in _DS_ALL if a != "N"}
    | {("N", b) for b in _DS_ALL if b != "N"}
    | {(a, "CJK") for a in _DS_ALL if a not in ("CJK",)}
    | {("CJK", b) for b in _DS_ALL if b != "CJK"}
    | {(a, b) for a in ("LA", "L") for b in ("PA", "PS", "WS", "CRLF", "X")}
    | {(a, b) for a in ("PA", "PS") for b in ("WS", "X", "L")}
    | {("PS", "LA")}
    | {("X", b) for b in ("PA", "PS", "WS", "CRLF")}
    | {("CRLF", b) for b in ("LA", "L", "PA", "PS", "X")}
)

# --- WordPiece (BERT): a token starting right after whitespace or punctuation (so the  --
# --- character at p is kept: punctuation or a word character) starts a word.          --
WP_NAMES = ("BERT_WS", "BERT_PUNCT", "OTHER")
WP_PAIRS = {(a, b) for a in ("BERT_WS", "BERT_PUNCT") for b in ("BERT_PUNCT", "OTHER")} | {
    ("OTHER", "BERT_PUNCT")
}


# --- SentencePiece BPE: a word start ("▁" after anything else) is the only boundary ------
SP_NAMES = ("SPACE", "BYTES", "OTHER")
SP_PAIRS = {("OTHER", "SPACE")} | {(a, "BYTES") for a in SP_NAMES} | {("BYTES", b) for b in SP_NAMES}


@cache
def rules(family: str) -> FamilyRules | None:
    """The stable-pair rules of a family, or None when the family is never repaired."""
    if family in ("cl100k", "qwen", "qwen-lm"):
        return FamilyRules(
            family, CL_NAMES, _matrix(CL_NAMES, _cl_pairs(family != "cl100k")), family != "cl100k"
        )
    if family == "o200k":
        return FamilyRules(family, O200K_NAMES, _matrix(O200K_NAMES, O200K_PAIRS), False)
    if family == "tekken":
        return FamilyRules(family, O200K_NAMES, _matrix(O200K_NAMES, TEKKEN_PAIRS), False)
    if family == "deepseek":
        return FamilyRules(family, DS_NAMES, _matrix(DS_NAMES, DS_PAIRS), False)
    if family == "wordpiece":
        return FamilyRules(family, WP_NAMES, _matrix(WP_NAMES, WP_PAIRS), False)
    if family == "sentencepiece":
        return FamilyRules(family, SP_NAMES, _matrix(SP_NAMES, SP_PAIRS), False)
    return None


def byte_fallback_chars(doc: dict) -> np.ndarray:
    """bool[0x110000]: code points a SentencePiece BPE encodes as byte tokens that never merge.

    True only where the model has byte fallback, all 256 ``<0xXX>`` tokens (else a
    missing byte becomes ``<unk>``, and unknowns fuse across characters), no merge
    naming a byte token, and the character is not itself a vocabulary entry; all False
    otherwise (the BYTES class is then empty and only word starts are boundaries).
    """
    out = np.zeros(0x110000, dtype=bool)
    model = doc.get("model") or {}
    vocab = model.get("vocab") or {}
    byte_tokens = {f"<0x{b:02X}>" for b in range(256)}
    if not model.get("byte_fallback") or not byte_tokens <= vocab.keys():
        return out
    for m in model.get("merges") or []:
        pair = m if isinstance(m, list) else m.split(" ", 1)
        if pair[0] in byte_tokens or pair[1] in byte_tokens:
            return out
    out[:] = True
    out[0xD800:0xE000] = False  # never in a str the tier accepts
    out[0x20] = False  # a space is "▁" after normalization
    for t in vocab:
        if len(t) == 1:
            out[ord(t)] = False
    return out


def class_map_for(tok) -> np.ndarray:
    """``class_map`` for a loaded tokenizer (its normalizer, and its vocabulary where needed)."""
    fallback = byte_fallback_chars(tok.document()) if tok.family == "sentencepiece" else None
    return class_map(tok.family, tok.class_table, tok.hf.normalizer, fallback=fallback)


def class_map(
    family: str, table: ClassTable, normalizer=None, *, fallback: np.ndarray | None = None
) -> np.ndarray:
    """uint8[0x110000]: each code point's class index in ``rules(family).class_names``.

    ``normalizer`` (the tokenizer's own) is needed for WordPiece: a whitespace or
    punctuation character only separates words if normalization keeps it one
    (BERT's clean_text deletes control characters such as U+000B).  ``fallback``
    (``byte_fallback_chars``) is needed for SentencePiece.
    """
    bits = table.bits
    r = rules(family)
    if r is None:
        raise ValueError(f"family {family!r} has no boundary rules")
    names = r.class_names
    out = np.full(bits.shape, names.index("O") if "O" in names else len(names) - 1, dtype=np.uint8)

    cps = np.arange(bits.size)
    ws = (bits & _B["WS"]) > 0
    crlf = (cps == 0x0A) | (cps == 0x0D)
    letter = (bits & _B["L"]) > 0
    mark = (bits & _B["M"]) > 0
    number = (bits & _B["N"]) > 0
    apos = cps == ord("'")
    if family in ("cl100k", "qwen", "qwen-lm"):
        if family == "qwen-lm":
            letter = letter | mark
        for mask, name in (
            (letter, "L"),
            (number, "N"),
            (ws & ~crlf, "WS"),
            (crlf, "CRLF"),
            (apos, "APOS"),
        ):
            out[mask] = names.index(name)
    elif family in ("o200k", "tekken"):
        lower = (bits & _B["Ll"]) > 0
        upper = (bits & (_B["Lu"] | _B["Lt"])) > 0
        lother = (bits & (_B["Lm"] | _B["Lo"])) > 0
        for mask, name in (
            (mark, "MARK"), (lother, "LOTHER"), (lower, "LOWER"), (upper, "UPPER"), (number, "N"),
            (ws & ~crlf, "WS"), (crlf, "CRLF"), (apos, "APOS"),
        ):  # fmt: skip
            out[mask] = names.index(name)
    elif family == "deepseek":
        out[:] = names.index("X")
        ascii_letter = ((cps >= 0x41) & (cps <= 0x5A)) | ((cps >= 0x61) & (cps <= 0x7A))
        ascii_punct = np.isin(cps, [ord(c) for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"])
        ps = (bits & (_B["P"] | _B["S"])) > 0
        cjk = (
            ((cps >= 0x4E00) & (cps <= 0x9FA5))
            | ((cps >= 0x3040) & (cps <= 0x309F))
            | ((cps >= 0x30A0) & (cps <= 0x30FF))
        )
        for mask, name in (
            (ws & ~crlf, "WS"), (crlf, "CRLF"), (ps, "PS"), (ascii_punct, "PA"),
            (letter | mark, "L"), (ascii_letter, "LA"), (cjk, "CJK"), (number, "N"),
        ):  # later assignments win: N over CJK over letters  # fmt: skip
            out[mask] = names.index(name)
    elif family == "sentencepiece":
        if fallback is None:
            raise ValueError("class_map: SentencePiece classes need the byte-fallback characters")
        out[:] = names.index("OTHER")
        out[fallback] = names.index("BYTES")
        out[[0x20, 0x2581]] = names.index("SPACE")  # both are "▁" after normalization
    elif family == "wordpiece":
        out[:] = names.index("OTHER")
        sep = (bits & (BERT_WS | BERT_PUNCT)) > 0
        for cp in np.flatnonzero(sep & ((bits & NORM_CHANGES) > 0)).tolist():
            norm = normalizer.normalize_str(chr(cp)) if normalizer is not None else ""
            if not norm or not all(bits[ord(c)] & (BERT_WS | BERT_PUNCT) for c in norm):
                sep[cp] = False  # removed or turned into a word character: not a separator
        out[sep & ((bits & BERT_PUNCT) > 0)] = names.index("BERT_PUNCT")
        out[sep & ((bits & BERT_WS) > 0)] = names.index("BERT_WS")
    return out


def nfc_unsafe_mask(table: ClassTable) -> np.ndarray:
    return (table.bits & NFC_UNSAFE) > 0


def cut_matrix(family: str) -> np.ndarray:
    """Stable pairs at which a text may be *cut* into independently encoded parts.

    Repair splices cached records computed with the old right context; a cut
    encodes the left part with *no* right context at all (end of input).  That
    is the same for every stable pair except where the left class is whitespace:
    ``\\s+(?!\\S)`` keeps a trailing whitespace run whole at the end of input but
    hands its last character to a following non-space (found by the engine's
    certification: ``"\\t 1"`` vs ``"\\t "``).  deepseek is exempt: its first two
    Split stages already end the third stage's input right before a number or CJK.
    """
    r = rules(family)
    if r is None:
        raise ValueError(f"family {family!r} has no boundary rules")
    m = r.stable.copy()
    if family != "deepseek" and "WS" in r.class_names:
        m[r.class_names.index("WS"), :] = False
    return m
