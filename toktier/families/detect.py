"""Family detection from the parsed tokenizer.json document."""

from __future__ import annotations

from . import patterns

FAMILIES = (
    "cl100k", "qwen", "qwen-lm", "o200k", "tekken", "deepseek", "wordpiece", "sentencepiece",
    "unsupported",
)  # fmt: skip
BYTE_LEVEL_FAMILIES = ("cl100k", "qwen", "qwen-lm", "o200k", "tekken", "deepseek")
# Families with a compiled engine (``engine.cpu.new_engine`` on the CPU, ``engine.gpu`` on
# the device): the byte-level ones and SentencePiece BPE.
ENGINE_FAMILIES = (*BYTE_LEVEL_FAMILIES, "sentencepiece", "wordpiece")

# (split patterns in order, normalizer) -> family
_BYTE_LEVEL_SHAPES = {
    ((patterns.CL100K,), None): "cl100k",
    ((patterns.QWEN,), "NFC"): "qwen",
    ((patterns.QWEN_LM,), "NFC"): "qwen-lm",
    ((patterns.O200K,), None): "o200k",
    ((patterns.TEKKEN,), None): "tekken",
    (patterns.DEEPSEEK, None): "deepseek",
}


def _normalizer_kind(norm: dict | None) -> str | bool | None:
    """None for no normalization, "NFC", or False for anything we do not model."""
    if norm is None:
        return None
    if norm.get("type") == "Sequence":
        inner = [_normalizer_kind(n) for n in norm.get("normalizers", [])]
        inner = [k for k in inner if k is not None]
        if not inner:
            return None
        return inner[0] if len(inner) == 1 else False
    if norm.get("type") == "NFC":
        return "NFC"
    return False


def _byte_level_family(doc: dict) -> tuple[str, str]:
    pre = doc.get("pre_tokenizer") or {}
    if pre.get("type") != "Sequence":
        return "unsupported", f"pre-tokenizer {pre.get('type')!r} is not a Split + ByteLevel sequence"
    stages = pre.get("pretokenizers", [])
    if not stages:
        return "unsupported", "empty pre-tokenizer sequence"
    *splits, last = stages
    # trim_offsets only changes reported offsets, not IDs; prefix space or a
    # second regex would change the pieces.
    if not (
        last.get("type") == "ByteLevel"
        and last.get("add_prefix_space") is False
        and last.get("use_regex") is False
    ):
        return "unsupported", "the last pre-tokenizer is not a plain ByteLevel stage"
    pats = []
    for s in splits:
        if s.get("type") != "Split" or s.get("behavior") != "Isolated" or s.get("invert"):
            return "unsupported", f"pre-tokenizer stage {s.get('type')!r} is not an isolating Split"
        pat = s.get("pattern", {})
        if "Regex" not in pat:
            return "unsupported", "a Split stage without a regex"
        pats.append(pat["Regex"])
    norm = _normalizer_kind(doc.get("normalizer"))
    if norm is False:
        return "unsupported", "a normalizer other than NFC"
    family = _BYTE_LEVEL_SHAPES.get((tuple(pats), norm))
    if family is None:
        return "unsupported", "split pattern without engine rules or a repair certificate"
    return family, ""


METASPACE = "\u2581"  # SentencePiece's visible space


def _sentencepiece_family(doc: dict) -> tuple[str, str]:
    """SentencePiece-style BPE: spaces become "▁", one "▁" is prepended, no pre-tokenizer.

    With no pre-tokenizer each segment between added tokens is one BPE word, so
    merges could in principle run across words.  The repair certificate comes from
    the vocabulary: if no entry holds a "▁" right after another character, no merge
    can ever join a character to a following "▁", so every "▁" after a non-"▁" is a
    token boundary in any context (``stability``'s derivation).  A vocabulary that
    breaks this has no certificate.
    """
    model = doc["model"]
    norm = doc.get("normalizer") or {}
    steps = norm.get("normalizers", []) if norm.get("type") == "Sequence" else [norm]
    expected = [
        {"type": "Prepend", "prepend": METASPACE},
        {"type": "Replace", "pattern": {"String": " "}, "content": METASPACE},
    ]
    if steps != expected or doc.get("pre_tokenizer") is not None:
        return "unsupported", (
            "BPE with byte fallback or without a pre-tokenizer, outside the SentencePiece shape we certify "
            "(normalizer Prepend('▁') + Replace(' ', '▁'), no pre-tokenizer)"
        )
    if model.get("ignore_merges"):
        return "unsupported", "SentencePiece BPE with ignore_merges"
    vocab = model.get("vocab") or {}
    if METASPACE not in vocab:  # an unknown "▁" would fuse with an unknown character before it
        return "unsupported", "SentencePiece BPE without a '▁' token"
    for token in vocab:
        at = token.find(METASPACE, 1)
        while at > 0:
            if token[at - 1] != METASPACE:
                return "unsupported", (
                    f"vocabulary entry {token!r} joins a character to a following '▁': "
                    "no word-start boundary is certain"
                )
            at = token.find(METASPACE, at + 1)
    return "sentencepiece", ""


def _added_tokens_plain(doc: dict) -> bool:
    """Added tokens with lstrip/rstrip/single_word change matching; we do not model them."""
    return all(
        not (t.get("lstrip") or t.get("rstrip") or t.get("single_word"))
        for t in doc.get("added_tokens", [])
    )


def classify(doc: dict) -> tuple[str, str]:
    """(family, why): one of FAMILIES, and for "unsupported" the reason (else "")."""
    if doc.get("truncation") is not None or doc.get("padding") is not None:
        return "unsupported", "truncation or padding: the output depends on a length limit"
    if not _added_tokens_plain(doc):
        return "unsupported", "added tokens with lstrip/rstrip/single_word"
    model = doc.get("model") or {}
    mtype = model.get("type")
    if mtype == "WordPiece":
        norm = doc.get("normalizer") or {}
        pre = doc.get("pre_tokenizer") or {}
        if (
            norm.get("type") == "BertNormalizer"
            and norm.get("lowercase") is True
            and pre.get("type") == "BertPreTokenizer"
            and model.get("continuing_subword_prefix") == "##"
        ):
            return "wordpiece", ""
        return "unsupported", "WordPiece without the lowercasing BERT normalizer and pre-tokenizer"
    if mtype == "BPE":
        for key in ("continuing_subword_prefix", "end_of_word_suffix"):
            if model.get(key):
                return "unsupported", f"BPE with {key}"
        if model.get("dropout") not in (None, 0.0):
            return "unsupported", "BPE dropout (not deterministic)"
        if model.get("byte_fallback") or doc.get("pre_tokenizer") is None:
            return _sentencepiece_family(doc)
        return _byte_level_family(doc)
    return "unsupported", f"model type {mtype!r}"


def detect_family(doc: dict) -> str:
    """Classify a tokenizer.json document into one of FAMILIES."""
    return classify(doc)[0]
