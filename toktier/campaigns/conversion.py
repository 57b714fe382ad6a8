"""Certify each converted tokenizer.json against the original's own encoder: ``tiktoken.Encoding``
for tiktoken and Tekken files, ``sentencepiece.SentencePieceProcessor`` for SentencePiece models.

Both sides are built from the same pinned ranks file, pattern and special
tokens; they must emit identical IDs on real mixed text.  NFC families are
fed NFC-stable text (normalized by the reference's own normalizer), because
tiktoken has no normalizer.  Special-token literals are sprinkled into the
text so added-token extraction is compared too.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, field

from tqdm.auto import tqdm

from .. import artifacts, convert
from ..registry import load
from .corpus import mixed_documents

CONVERTED_KINDS = ("tiktoken", "tekken", "sentencepiece")


def converted_names() -> list[str]:
    return [
        n for n in artifacts.registry_names()
        if artifacts.entry(n)["recipe"]["kind"] in CONVERTED_KINDS
    ]  # fmt: skip


def tiktoken_encoding(name: str):
    """The tiktoken.Encoding built from the same ranks, pattern and specials as the registry entry.

    For a Tekken file the ranks are shifted by its special-token count, so the
    encoding's ids are the tokenizer's ids (mistral-common runs tiktoken on the
    unshifted ranks and adds that offset to every id: the same ids).
    """
    import tiktoken

    e = artifacts.entry(name)
    data = artifacts.read_member(e["source"])
    if e["recipe"]["kind"] == "tekken":
        ranks, pattern, specials, offset = convert.read_tekken(data)
        ranks = {b: r + offset for b, r in ranks.items()}
        specials = {s: i for i, s in specials}
    else:
        ranks = convert.read_tiktoken_ranks(data)
        pattern = e["recipe"]["pattern"]
        specials = {s: i for i, s in convert.expand_specials(e["recipe"]["specials"])}
    return tiktoken.Encoding(
        f"toktier-{name}",
        pat_str=pattern,
        mergeable_ranks=ranks,
        special_tokens=specials,
    )


@dataclass
class ConversionResult:
    tokenizer: str
    documents: int = 0
    characters: int = 0
    tokens: int = 0
    special_literals: int = 0
    mismatches: int = 0
    vocab_entries_checked: int = 0
    vocab_mismatches: int = 0
    chars_by_source: dict = field(default_factory=dict)
    first_mismatch: dict | None = None
    seconds: float = 0.0


def _sprinkle(doc: str, literals: list[str], rng: random.Random) -> tuple[str, int]:
    """Insert a few special-token literals at random character positions."""
    k = rng.randint(0, 3)
    for _ in range(k):
        pos = rng.randint(0, len(doc))
        doc = doc[:pos] + rng.choice(literals) + doc[pos:]
    return doc, k


class _SentencePieceEncoder:
    """The original encoder of a SentencePiece model, with the two calls the campaign makes.

    No literals are inserted into its texts: SentencePiece never parses control pieces out
    of text (the reference on any tokenizer.json extracts them), and a text that starts
    with a user-defined piece gets a lone "▁" before it there; both are differences by
    design, documented in the README, not conversion errors.
    """

    def __init__(self, name: str):
        import sentencepiece

        data = artifacts.read_member(artifacts.entry(name)["source"])
        self.sp = sentencepiece.SentencePieceProcessor(model_proto=data)
        self.pieces = convert.read_sentencepiece(data)["pieces"]
        self.n_vocab = len(self.pieces)

    def encode(self, text: str, allowed_special=None) -> list[int]:
        return self.sp.encode(text)

    encode_ordinary = encode

    def vocabulary_texts(self):
        for p, _, t in self.pieces:
            if t == convert.SP_NORMAL:
                yield p.replace(convert.METASPACE, " ")


def original_encoder(name: str):
    """The encoder the conversion of ``name`` must reproduce."""
    if artifacts.entry(name)["recipe"]["kind"] == "sentencepiece":
        return _SentencePieceEncoder(name)
    return tiktoken_encoding(name)


def certify(name: str, n_chars: int, *, seed: int = 0) -> ConversionResult:
    t0 = time.perf_counter()
    tok = load(name)
    enc = original_encoder(name)
    sentencepiece = isinstance(enc, _SentencePieceEncoder)
    literals = [] if sentencepiece else [t.content for t in tok.added_tokens]
    normalizer = tok.hf.normalizer
    docs, by_source = mixed_documents(n_chars, seed=seed)
    rng = random.Random(seed + 1)
    res = ConversionResult(name, chars_by_source=by_source)
    for doc in tqdm(docs, desc=f"{name}: text", unit="doc", disable=None):
        if normalizer is not None:
            doc = normalizer.normalize_str(doc)  # NFC-stable input for the NFC families
        doc, k = _sprinkle(doc, literals, rng) if literals else (doc, 0)
        ours = tok.reference(doc)
        theirs = enc.encode(doc, allowed_special="all")
        res.documents += 1
        res.characters += len(doc)
        res.tokens += len(ours)
        res.special_literals += k
        if ours != theirs:
            res.mismatches += 1
            if res.first_mismatch is None:
                i = next(
                    (j for j, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
                    min(len(ours), len(theirs)),
                )
                res.first_mismatch = {
                    "token_index": i,
                    "reference": ours[max(0, i - 3) : i + 5],
                    "original": theirs[max(0, i - 3) : i + 5],
                    "text_excerpt": tok.hf.decode(ours[max(0, i - 8) : i + 8]),
                }
    _check_vocabulary(tok, enc, res)
    res.seconds = time.perf_counter() - t0
    return res


def _check_vocabulary(tok, enc, res: ConversionResult) -> None:
    if isinstance(enc, _SentencePieceEncoder):
        for text in tqdm(list(enc.vocabulary_texts()), desc=f"{tok.name}: vocabulary",
                         unit="tok", disable=None, mininterval=1.0):  # fmt: skip
            res.vocab_entries_checked += 1
            if tok.reference(text) != enc.encode(text):
                res.vocab_mismatches += 1
        return
    _check_tiktoken_vocabulary(tok, enc, res)


def _check_tiktoken_vocabulary(tok, enc, res: ConversionResult) -> None:
    """Every vocabulary entry that is valid, normalization-stable text, encoded alone.

    This is exhaustive where the text campaign is a sample: it catches tokens
    that merges cannot reach (tiktoken emits a whole-piece match directly).
    """
    normalizer = tok.hf.normalizer
    special_ids = {t.id for t in tok.added_tokens}
    for i in tqdm(
        range(enc.n_vocab),
        desc=f"{tok.name}: vocabulary",
        unit="tok",
        disable=None,
        mininterval=1.0,
    ):
        try:
            raw = enc.decode_single_token_bytes(i)
        except KeyError:
            continue  # an id gap (cl100k has one)
        if i in special_ids:
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if normalizer is not None and normalizer.normalize_str(text) != text:
            continue
        res.vocab_entries_checked += 1
        if tok.reference(text) != enc.encode_ordinary(text):
            res.vocab_mismatches += 1


def certify_all(n_chars: int, *, seed: int = 0, names: list[str] | None = None) -> list[dict]:
    return [asdict(certify(n, n_chars, seed=seed)) for n in (names or converted_names())]
