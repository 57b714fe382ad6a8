"""Character-class tables probed out of the reference engine itself.

The engine and repair decide piece boundaries from per-code-point classes.
Those classes must be the reference regex engine's own (its Unicode tables
differ from Python's ``unicodedata`` on thousands of code points), so we ask
the reference: a ``Split(\\p{X}, "removed")`` over every code point reports
exactly which characters the engine puts in class X.  Tables are
``uint16[0x110000]`` bit sets, cached on disk per tokenizer sha256 and
reference version.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

import numpy as np

from .. import paths

N_CODEPOINTS = 0x110000
SURROGATES = range(0xD800, 0xE000)

# bit -> (name, regex the reference is asked about)
CLASS_BITS: dict[str, tuple[int, str]] = {
    "L": (1 << 0, r"\p{L}"),
    "N": (1 << 1, r"\p{N}"),
    "M": (1 << 2, r"\p{M}"),
    "Lu": (1 << 3, r"\p{Lu}"),
    "Lt": (1 << 4, r"\p{Lt}"),
    "Ll": (1 << 5, r"\p{Ll}"),
    "Lm": (1 << 6, r"\p{Lm}"),
    "Lo": (1 << 7, r"\p{Lo}"),
    "P": (1 << 8, r"\p{P}"),
    "S": (1 << 9, r"\p{S}"),
    "WS": (1 << 10, r"\s"),
}
# Not regex classes, probed from the tokenizer's own normalizer / pre-tokenizer:
NORM_CHANGES = 1 << 11  # the normalizer rewrites the code point standing alone
NFC_UNSAFE = 1 << 12  # NFC may not split before it (rewritten, combining, or composes backward)
BERT_WS = 1 << 13  # BertPreTokenizer drops it as whitespace
BERT_PUNCT = 1 << 14  # BertPreTokenizer isolates it as punctuation
EXTRA_BITS = {
    "NORM_CHANGES": NORM_CHANGES,
    "NFC_UNSAFE": NFC_UNSAFE,
    "BERT_WS": BERT_WS,
    "BERT_PUNCT": BERT_PUNCT,
}
PROBE_VERSION = 2  # bump when the probes change: invalidates the disk cache

_CHUNK = 1 << 16


@dataclass(frozen=True)
class ClassTable:
    """Per-code-point class bits, bound to the tokenizer and reference that produced them."""

    bits: np.ndarray  # uint16[0x110000]
    probe_key: str  # sha256 of what the probe reads: family, normalizer, pre-tokenizer
    reference_version: str

    @staticmethod
    def bit(name: str) -> int:
        return EXTRA_BITS[name] if name in EXTRA_BITS else CLASS_BITS[name][0]

    def has(self, cp: int, name: str) -> bool:
        return bool(self.bits[cp] & self.bit(name))

    def members(self, name: str) -> np.ndarray:
        return np.flatnonzero(self.bits & self.bit(name))


def _chunks():
    """Strings covering every scalar value (surrogates excluded), with their code points."""
    start = 0
    while start < N_CODEPOINTS:
        stop = min(start + _CHUNK, N_CODEPOINTS)
        cps = np.arange(start, stop, dtype=np.int64)
        cps = cps[(cps < SURROGATES.start) | (cps >= SURROGATES.stop)]
        if len(cps):
            yield cps, "".join(map(chr, cps.tolist()))
        start = stop


def probe_regex_classes() -> np.ndarray:
    """Ask the reference regex engine which code points fall in each class of CLASS_BITS."""
    from tokenizers import Regex, pre_tokenizers

    bits = np.zeros(N_CODEPOINTS, dtype=np.uint16)
    splitters = {
        name: (bit, pre_tokenizers.Split(Regex(rx), behavior="removed"))
        for name, (bit, rx) in CLASS_BITS.items()
    }
    for cps, text in _chunks():
        for bit, splitter in splitters.values():
            # "removed" drops every matching character; what survives is the complement.
            inside = np.ones(len(cps), dtype=bool)
            for _piece, (a, b) in splitter.pre_tokenize_str(text):
                inside[a:b] = False
            bits[cps[inside]] |= bit
    return bits


def probe_normalizer_changes(normalizer) -> np.ndarray:
    """Code points that the tokenizer's normalizer rewrites when they stand alone."""
    changed = np.zeros(N_CODEPOINTS, dtype=bool)
    norm = normalizer.normalize_str
    for cps, _text in _chunks():
        for cp in cps.tolist():
            ch = chr(cp)
            if norm(ch) != ch:
                changed[cp] = True
    return changed


def probe_nfc_unsafe(nfc_normalizer) -> np.ndarray:
    """Code points before which NFC text cannot be cut safely, asked of the reference normalizers.

    A cut before c is safe when c stands unchanged, has canonical combining class 0 and
    never composes with what precedes it.  Unsafe: (1) c is rewritten alone; (2) c
    reorders against a mark (nonzero combining class: tested against U+0301, class 230,
    and U+0316, class 220, so every nonzero class shows); (3) c is a non-initial
    character of some canonical decomposition (a superset of what can compose backward).
    """
    from tokenizers import normalizers

    nfd = normalizers.NFD().normalize_str
    nfc = nfc_normalizer.normalize_str
    unsafe = np.zeros(N_CODEPOINTS, dtype=bool)
    for cps, _text in _chunks():
        for cp in cps.tolist():
            ch = chr(cp)
            if (
                nfc(ch) != ch
                or nfc("x\u0301" + ch) != "x\u0301" + ch
                or nfc("x" + ch + "\u0316") != "x" + ch + "\u0316"
            ):
                unsafe[cp] = True
            d = nfd(ch)
            if len(d) > 1:
                for tail in d[1:]:
                    unsafe[ord(tail)] = True
    return unsafe


def probe_bert_classes(pre_tokenizer) -> tuple[np.ndarray, np.ndarray]:
    """Which code points BertPreTokenizer drops as whitespace or isolates as punctuation."""
    ws = np.zeros(N_CODEPOINTS, dtype=bool)
    punct = np.zeros(N_CODEPOINTS, dtype=bool)
    split = pre_tokenizer.pre_tokenize_str
    for cps, _text in _chunks():
        for cp in cps.tolist():
            pieces = [p for p, _ in split("a" + chr(cp) + "b")]
            if pieces == ["a", "b"]:
                ws[cp] = True
            elif pieces == ["a", chr(cp), "b"]:
                punct[cp] = True
    return ws, punct


def probe_key(doc: dict, family: str) -> str:
    """What a class table depends on: the family and the normalizer and pre-tokenizer.

    Files that differ elsewhere (added tokens, vocabulary) share one probe.
    """
    parts = {"family": family, "normalizer": doc.get("normalizer"),
             "pre_tokenizer": doc.get("pre_tokenizer")}  # fmt: skip
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


def load_or_probe(key: str, hf_tokenizer, reference_version: str, family: str = "") -> ClassTable:
    """The class table for one tokenizer, from the disk cache or probed now (a few seconds).

    ``key`` is ``probe_key`` of the tokenizer's document.
    """
    family_uses_nfc = family in ("qwen", "qwen-lm")
    cache = (
        paths.probe_cache() / f"classes-v{PROBE_VERSION}-{key}-tokenizers{reference_version}.npy"
    )
    if cache.is_file():
        bits = np.load(cache)
        if bits.shape == (N_CODEPOINTS,) and bits.dtype == np.uint16:
            return ClassTable(bits, key, reference_version)
    bits = probe_regex_classes()
    if hf_tokenizer.normalizer is not None:
        bits[probe_normalizer_changes(hf_tokenizer.normalizer)] |= NORM_CHANGES
        if family_uses_nfc:
            bits[probe_nfc_unsafe(hf_tokenizer.normalizer)] |= NFC_UNSAFE
    if family == "wordpiece":
        ws, punct = probe_bert_classes(hf_tokenizer.pre_tokenizer)
        bits[ws] |= BERT_WS
        bits[punct] |= BERT_PUNCT
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(cache.name + f".{os.getpid()}.tmp.npy")
    np.save(tmp, bits)
    os.replace(tmp, cache)
    return ClassTable(bits, key, reference_version)
