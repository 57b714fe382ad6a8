"""tiktoken rank files, Mistral's Tekken JSON and SentencePiece BPE models -> Hugging Face
tokenizer.json (our own conversion).

A tiktoken file lists every token's bytes with its rank; tiktoken merges, at each
step, the adjacent pair whose concatenation has the lowest rank.  The HF BPE
model instead needs explicit merges.  We emit, for every multi-byte token in
rank order, each split ``left + right`` whose halves are both tokens of lower
rank.  The merge list is therefore ordered by the rank of the merged token,
which is the order tiktoken uses.  (A first version kept only splits into
lower-ranked halves; the 10M-character certification found two qwen3.6
divergences, see ``derive_merges``.)  The result is certified against
``tiktoken.Encoding`` (``toktier.campaigns.conversion``), never assumed.
"""

from __future__ import annotations

import base64
import gzip
import json
import struct
from collections.abc import Iterable, Mapping


def byte_level_alphabet() -> list[str]:
    """The byte-level map: each byte 0..255 to one printable unicode character.

    Printable Latin-1 bytes map to themselves; the other 68 bytes are moved,
    in order, to code points from U+0100 on.  This is the alphabet of the HF
    ByteLevel pre-tokenizer and decoder.
    """
    keep = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    out, shift = [], 0
    for b in range(256):
        if b in keep:
            out.append(chr(b))
        else:
            out.append(chr(0x100 + shift))
            shift += 1
    return out


BYTE_TO_CHAR = byte_level_alphabet()
CHAR_TO_BYTE = {c: b for b, c in enumerate(BYTE_TO_CHAR)}


def to_byte_level(token: bytes) -> str:
    return "".join(BYTE_TO_CHAR[b] for b in token)


def from_byte_level(token: str) -> bytes:
    return bytes(CHAR_TO_BYTE[c] for c in token)


def read_tiktoken_ranks(data: bytes) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file (optionally gzip-compressed): ``base64 rank`` per line."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    ranks: dict[bytes, int] = {}
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            b64, rank = line.split()
            ranks[base64.b64decode(b64, validate=True)] = int(rank)
        except ValueError as exc:
            raise ValueError(f"malformed tiktoken line {lineno}: {line[:60]!r}") from exc
    ids = sorted(ranks.values())
    if ids != list(range(len(ids))):
        raise ValueError("tiktoken ranks are not the dense range 0..n-1")
    return ranks


# Mistral's control tokens (mistral-common's ``SpecialTokens``), ids 0..19 of a Tekken file
# that carries no ``special_tokens`` list (tekken_240718 / _240911); ids 20..999 are fillers.
TEKKEN_LEGACY_SPECIALS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)  # fmt: skip
TEKKEN_FILLER = "<SPECIAL_{i}>"


def read_tekken(data: bytes) -> tuple[dict[bytes, int], str, list[tuple[int, str]], int]:
    """Parse a Tekken file (Mistral's tiktoken-style JSON): (ranks, pattern, specials, offset).

    The file lists ``num_vocab_tokens`` byte strings by rank; the tokenizer uses the
    first ``default_vocab_size - default_num_special_tokens`` of them, and a token's id
    is its rank plus the number of special tokens, which take ids 0..n-1 (the file's
    ``special_tokens`` list when present, else the 20 legacy control tokens, then
    ``<SPECIAL_i>`` fillers).  ``ranks`` here are the tiktoken ranks (from 0).
    """
    doc = json.loads(data)
    cfg = doc["config"]
    n_special = int(cfg["default_num_special_tokens"])
    inner = int(cfg["default_vocab_size"]) - n_special
    vocab = doc["vocab"]
    if len(vocab) < inner:
        raise ValueError(f"Tekken file lists {len(vocab)} tokens, fewer than the {inner} it uses")
    ranks: dict[bytes, int] = {}
    for i, entry in enumerate(vocab[:inner]):
        if int(entry["rank"]) != i:
            raise ValueError(f"Tekken vocabulary entry {i} has rank {entry['rank']}")
        ranks[base64.b64decode(entry["token_bytes"], validate=True)] = i
    if len(ranks) != inner:
        raise ValueError("Tekken vocabulary repeats a byte string")
    listed = doc.get("special_tokens")
    if listed is None:
        names = list(TEKKEN_LEGACY_SPECIALS)
    else:
        listed = sorted(listed, key=lambda t: int(t["rank"]))
        if [int(t["rank"]) for t in listed] != list(range(len(listed))):
            raise ValueError("Tekken special tokens are not ranked 0..k-1")
        names = [str(t["token_str"]) for t in listed]
    if len(names) > n_special:
        raise ValueError(f"{len(names)} special tokens for {n_special} special ids")
    names += [TEKKEN_FILLER.format(i=i) for i in range(len(names), n_special)]
    return ranks, str(cfg["pattern"]), list(enumerate(names)), n_special


def derive_merges(ranks: Mapping[bytes, int]) -> list[tuple[bytes, bytes]]:
    """Every split of every token into two tokens, ordered by the merged token's rank.

    tiktoken merges the adjacent pair whose *concatenation* ranks lowest, however the
    two parts were formed -- a part may rank higher than the token it joins (the
    qwen3_6 ranks do this: "س" + "كري" (162278) -> "سكري" (157289)).  So every split
    whose halves are both tokens is a merge, prioritized by the merged rank.  Within
    one token the splits are ordered by (rank of left, rank of right), so the list is
    deterministic.
    """
    merges: list[tuple[int, int, int, bytes, bytes]] = []
    for token, rank in ranks.items():
        if len(token) < 2:
            continue
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            lr, rr = ranks.get(left), ranks.get(right)
            if lr is not None and rr is not None:
                merges.append((rank, lr, rr, left, right))
    merges.sort()
    return [(left, right) for _, _, _, left, right in merges]


def expand_specials(spec: Mapping) -> list[tuple[int, str]]:
    """Special tokens from a manifest recipe: explicit pairs plus optional reserved ranges."""
    pairs = [(int(i), str(s)) for i, s in spec.get("tokens", [])]
    taken = {i for i, _ in pairs}
    for rng in spec.get("reserved", []):
        fmt, start, stop = rng["format"], int(rng["start"]), int(rng["stop"])
        pairs += [(i, fmt.format(i=i)) for i in range(start, stop) if i not in taken]
    pairs.sort()
    ids = [i for i, _ in pairs]
    if len(set(ids)) != len(ids) or len({s for _, s in pairs}) != len(pairs):
        raise ValueError("special tokens must have distinct ids and distinct contents")
    return pairs


def tiktoken_to_hf(
    ranks: Mapping[bytes, int],
    pattern: str,
    specials: Iterable[tuple[int, str]],
    *,
    normalizer: str | None = None,
    ignore_merges: bool = False,
    id_offset: int = 0,
) -> dict:
    """Build the tokenizer.json document (a dict) for a byte-level BPE tokenizer.

    A token's id is its rank plus ``id_offset`` (Tekken numbers its special tokens first).
    """
    specials = list(specials)
    n = len(ranks)
    for i, s in specials:
        if id_offset <= i < id_offset + n:
            raise ValueError(
                f"special token {s!r} id {i} collides with the BPE ids "
                f"({id_offset}..{id_offset + n - 1})"
            )
    vocab = {
        to_byte_level(tok): rank + id_offset
        for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1])
    }
    # The reference re-numbers added tokens that are absent from the model
    # vocabulary to follow it densely; tiktoken's special ids can leave gaps
    # (cl100k: 100256 unused).  Listing the specials in the model vocabulary
    # too makes the reference keep their ids.  Extraction of added tokens runs
    # before BPE, so no piece can ever equal one of these entries.
    for i, s in specials:
        if s in vocab:
            raise ValueError(f"special token {s!r} is also a BPE token")
        vocab[s] = i
    merges = [[to_byte_level(a), to_byte_level(b)] for a, b in derive_merges(ranks)]
    norm = None
    if normalizer == "NFC":
        norm = {"type": "NFC"}
    elif normalizer is not None:
        raise ValueError(f"unsupported normalizer in recipe: {normalizer!r}")
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": s,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for i, s in specials
        ],
        "normalizer": norm,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": pattern},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {
                    "type": "ByteLevel",
                    "add_prefix_space": False,
                    "trim_offsets": True,
                    "use_regex": False,
                },
            ],
        },
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": True,
            "trim_offsets": True,
            "use_regex": True,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": ignore_merges,
            "vocab": vocab,
            "merges": merges,
        },
    }


def dump_canonical(doc: dict) -> bytes:
    """Deterministic bytes for a tokenizer.json document (its sha256 is the pin)."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# --- SentencePiece ----------------------------------------------------------------------
SP_NORMAL, SP_UNKNOWN, SP_CONTROL, SP_USER_DEFINED, SP_UNUSED, SP_BYTE = 1, 2, 3, 4, 5, 6
SP_BPE = 2  # TrainerSpec.model_type
METASPACE = "\u2581"  # "▁", SentencePiece's visible space


def _varint(b: bytes, i: int) -> tuple[int, int]:
    x = shift = 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return x, i


def _proto_fields(b: bytes):
    """(field number, wire type, value) of a protobuf message: the wire format, no schema."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(b, i)
        elif wire == 1:
            value, i = b[i : i + 8], i + 8
        elif wire == 5:
            value, i = b[i : i + 4], i + 4
        elif wire == 2:
            n, i = _varint(b, i)
            value, i = b[i : i + n], i + n
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield field, wire, value


def read_sentencepiece(data: bytes) -> dict:
    """The parts of a SentencePiece ``ModelProto`` the conversion needs (field numbers of
    sentencepiece_model.proto): pieces (text, score, type), the trainer's model type and
    byte fallback, and the normalizer (name, dummy prefix, whitespace handling)."""
    pieces, trainer, norm = [], {}, {}
    for field, wire, value in _proto_fields(data):
        if field == 1 and wire == 2:
            p = {f: v for f, _, v in _proto_fields(value)}
            score = struct.unpack("<f", p[2])[0] if 2 in p else 0.0
            pieces.append((p.get(1, b"").decode("utf-8"), score, int(p.get(3, SP_NORMAL))))
        elif field == 2 and wire == 2:
            trainer = {f: v for f, _, v in _proto_fields(value)}
        elif field == 3 and wire == 2:
            norm = {f: v for f, _, v in _proto_fields(value)}
    return {
        "pieces": pieces,
        "model_type": int(trainer.get(3, 1)),
        "byte_fallback": bool(trainer.get(35, 0)),
        "normalizer": norm.get(1, b"nmt_nfkc").decode(),
        "add_dummy_prefix": bool(norm.get(3, 1)),
        "remove_extra_whitespaces": bool(norm.get(4, 1)),
        "escape_whitespaces": bool(norm.get(5, 1)),
    }


def sentencepiece_to_hf(model: dict) -> dict:
    """Build the tokenizer.json document of a SentencePiece BPE model.

    SentencePiece's BPE merges, at each step, the adjacent pair whose concatenation is
    the highest-scoring piece: the tiktoken rule with rank = order by score, so the merges
    are every split of every normal piece into two normal pieces, by the merged piece's
    score (``derive_merges``).  Spaces become "▁" and one "▁" is prepended (the
    normalizer), characters outside the vocabulary fall back to ``<0xXX>`` byte tokens
    (``byte_fallback``), unknown and control pieces are special added tokens, user-defined
    pieces plain added tokens.  Only the configuration the Mistral models use is
    converted (identity normalizer, dummy prefix, whitespace kept); anything else raises.
    """
    if model["model_type"] != SP_BPE:
        raise ValueError(f"SentencePiece model type {model['model_type']} is not BPE")
    if model["normalizer"] != "identity" or model["remove_extra_whitespaces"]:
        raise ValueError(
            f"SentencePiece normalizer {model['normalizer']!r} "
            f"(remove_extra_whitespaces={model['remove_extra_whitespaces']}) is not converted"
        )
    if not (model["add_dummy_prefix"] and model["escape_whitespaces"]):
        raise ValueError("only models with a dummy prefix and escaped whitespace are converted")
    pieces = model["pieces"]
    vocab = {p: i for i, (p, _, _) in enumerate(pieces)}
    if len(vocab) != len(pieces):
        raise ValueError("SentencePiece model repeats a piece")
    normal = [i for i, (_, _, t) in enumerate(pieces) if t == SP_NORMAL]
    order = sorted(normal, key=lambda i: (-pieces[i][1], i))  # highest score merges first
    ranks = {pieces[i][0].encode("utf-8"): r for r, i in enumerate(order)}
    merges = [[a.decode("utf-8"), b.decode("utf-8")] for a, b in derive_merges(ranks)]
    unk = next((p for p, _, t in pieces if t == SP_UNKNOWN), None)
    added = [
        {
            "id": i, "content": p, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": t != SP_USER_DEFINED,
        }
        for i, (p, _, t) in enumerate(pieces)
        if t in (SP_UNKNOWN, SP_CONTROL, SP_USER_DEFINED)
    ]  # fmt: skip
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {"type": "Prepend", "prepend": METASPACE},
                {"type": "Replace", "pattern": {"String": " "}, "content": METASPACE},
            ],
        },
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": METASPACE}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            ],
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": unk,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": bool(model["byte_fallback"]),
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges,
        },
    }
