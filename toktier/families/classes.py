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
# Not a regex class: the code point changes under the tokenizer's own normalizer.
NORM_CHANGES = 1 << 11

_CHUNK = 1 << 16


@dataclass(frozen=True)
class ClassTable:
    """Per-code-point class bits, bound to the tokenizer and reference that produced them."""

    bits: np.ndarray  # uint16[0x110000]
    tokenizer_sha256: str
    reference_version: str

    def has(self, cp: int, name: str) -> bool:
        bit = NORM_CHANGES if name == "NORM_CHANGES" else CLASS_BITS[name][0]
        return bool(self.bits[cp] & bit)

    def members(self, name: str) -> np.ndarray:
        bit = NORM_CHANGES if name == "NORM_CHANGES" else CLASS_BITS[name][0]
        return np.flatnonzero(self.bits & bit)


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


def load_or_probe(tokenizer_sha256: str, hf_tokenizer, reference_version: str) -> ClassTable:
    """The class table for one tokenizer, from the disk cache or probed now (a few seconds)."""
    cache = paths.probe_cache() / f"classes-{tokenizer_sha256}-tokenizers{reference_version}.npy"
    if cache.is_file():
        bits = np.load(cache)
        if bits.shape == (N_CODEPOINTS,) and bits.dtype == np.uint16:
            return ClassTable(bits, tokenizer_sha256, reference_version)
    bits = probe_regex_classes()
    if hf_tokenizer.normalizer is not None:
        bits[probe_normalizer_changes(hf_tokenizer.normalizer)] |= NORM_CHANGES
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(cache.name + f".{os.getpid()}.tmp.npy")
    np.save(tmp, bits)
    os.replace(tmp, cache)
    return ClassTable(bits, tokenizer_sha256, reference_version)
