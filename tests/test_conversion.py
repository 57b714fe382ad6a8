"""The tiktoken -> tokenizer.json converter: unit properties on toy vocabularies and a slice
of the certification campaign on the real pinned files."""

import random

import pytest
import tiktoken
import tokenizers
from hypothesis import given
from hypothesis import strategies as st

from toktier import convert
from toktier.campaigns import conversion


def test_byte_level_alphabet_is_a_bijection_onto_printable_characters():
    alpha = convert.byte_level_alphabet()
    assert len(set(alpha)) == 256
    assert all(c.isprintable() and not c.isspace() for c in alpha)
    for b in range(256):
        assert convert.from_byte_level(convert.to_byte_level(bytes([b]))) == bytes([b])


def test_read_tiktoken_ranks_rejects_malformed_input():
    with pytest.raises(ValueError, match="malformed"):
        convert.read_tiktoken_ranks(b"YQ== 0\nnot-a-line\n")
    with pytest.raises(ValueError, match="dense"):
        convert.read_tiktoken_ranks(b"YQ== 0\nYg== 2\n")


def test_expand_specials_handles_reserved_ranges_and_refuses_duplicates():
    pairs = convert.expand_specials(
        {"tokens": [[10, "<|a|>"]], "reserved": [{"format": "<|r{i}|>", "start": 9, "stop": 12}]}
    )
    assert pairs == [(9, "<|r9|>"), (10, "<|a|>"), (11, "<|r11|>")]
    with pytest.raises(ValueError):
        convert.expand_specials({"tokens": [[1, "<|a|>"], [1, "<|b|>"]]})


def _toy_ranks(seed: int, n_merges: int) -> dict[bytes, int]:
    """A toy BPE vocabulary grown like real training: repeatedly add a concatenation of two tokens."""
    rng = random.Random(seed)
    ranks = {bytes([b]): b for b in range(256)}
    alphabet = [bytes([b]) for b in b"ab \n'.1"]
    pool = list(alphabet)
    while len(ranks) < 256 + n_merges:
        tok = rng.choice(pool) + rng.choice(pool)
        if tok not in ranks and len(tok) <= 8:
            ranks[tok] = len(ranks)
            pool.append(tok)
    return ranks


TOY_PATTERN = r"""(?i:'s|'t)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


@given(seed=st.integers(0, 50), text=st.text(alphabet="ab \n'.1", max_size=60))
def test_toy_conversion_matches_tiktoken(seed, text):
    """tiktoken emits a piece that is a vocabulary entry whole, which is ignore_merges;
    with it, the derived merges must reproduce tiktoken on any text."""
    ranks = _toy_ranks(seed, 60)
    specials = [(len(ranks) + 1, "<|s|>")]
    doc = convert.tiktoken_to_hf(ranks, TOY_PATTERN, specials, ignore_merges=True)
    hf = tokenizers.Tokenizer.from_str(convert.dump_canonical(doc).decode())
    enc = tiktoken.Encoding(
        "toy", pat_str=TOY_PATTERN, mergeable_ranks=ranks, special_tokens={"<|s|>": len(ranks) + 1}
    )
    full = text + "<|s|>" + text
    assert hf.encode(full, add_special_tokens=False).ids == enc.encode(full, allowed_special="all")


def test_special_ids_survive_gaps_in_the_id_space():
    """cl100k's specials start at 100257 with 100256 unused; the reference must keep those ids."""
    ranks = _toy_ranks(0, 10)
    n = len(ranks)
    doc = convert.tiktoken_to_hf(ranks, TOY_PATTERN, [(n + 1, "<|x|>"), (n + 7, "<|y|>")])
    hf = tokenizers.Tokenizer.from_str(convert.dump_canonical(doc).decode())
    assert hf.encode("<|x|>a<|y|>", add_special_tokens=False).ids == [n + 1, ranks[b"a"], n + 7]


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["qwen3", "qwen3.6", "gpt-oss", "cl100k", "tekken", "mistral-sp-v1", "mistral-sp-v3"]
)
def test_conversion_certification_slice(name):
    """The workflow runs >= 1M characters per tokenizer; CI runs a 60K slice plus every vocab entry."""
    res = conversion.certify(name, 60_000, seed=7)
    assert res.characters >= 60_000
    assert res.vocab_entries_checked > 30_000
    assert res.mismatches == 0, res.first_mismatch
    assert res.vocab_mismatches == 0


@pytest.mark.parametrize("ignore_merges", [False, True])
def test_merge_into_a_token_ranked_below_its_part(ignore_merges):
    """tiktoken joins "a" + "bc" into "abc" even though "abc" ranks *below* "bc" (the qwen3_6
    ranks do this); the converted merges must too (found by the 10M-character campaign)."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"abc"] = 256  # ranked before its own right half
    ranks[b"bc"] = 257
    doc = convert.tiktoken_to_hf(ranks, TOY_PATTERN, [], ignore_merges=ignore_merges)
    hf = tokenizers.Tokenizer.from_str(convert.dump_canonical(doc).decode())
    enc = tiktoken.Encoding("toy", pat_str=TOY_PATTERN, mergeable_ranks=ranks, special_tokens={})
    for text in ("abcd", "xabc", "abc abcb"):
        assert hf.encode(text, add_special_tokens=False).ids == enc.encode(text) != []
    assert enc.encode("abcd") == [256, ord("d")]


def _toy_tekken(ranks: dict[bytes, int], *, used: int, n_special: int, specials=None) -> bytes:
    import base64
    import json

    vocab = [
        {"rank": r, "token_bytes": base64.b64encode(b).decode(), "token_str": None}
        for b, r in sorted(ranks.items(), key=lambda kv: kv[1])
    ]
    doc = {
        "config": {"pattern": TOY_PATTERN, "num_vocab_tokens": len(vocab),
                   "default_vocab_size": used + n_special,
                   "default_num_special_tokens": n_special, "version": "v3"},
        "vocab": vocab,
    }  # fmt: skip
    if specials is not None:
        doc["special_tokens"] = [
            {"rank": i, "token_str": s, "is_control": True} for i, s in enumerate(specials)
        ]
    return json.dumps(doc).encode()


def test_read_tekken_numbers_specials_first_and_uses_only_the_configured_vocabulary():
    ranks = _toy_ranks(3, 20)
    data = _toy_tekken(ranks, used=len(ranks) - 5, n_special=30)
    got, pattern, specials, offset = convert.read_tekken(data)
    assert pattern == TOY_PATTERN and offset == 30
    assert got == {b: r for b, r in ranks.items() if r < len(ranks) - 5}  # the last 5 unused
    assert [s for _, s in specials[:4]] == ["<unk>", "<s>", "</s>", "[INST]"]  # legacy controls
    assert specials[20] == (20, "<SPECIAL_20>") and len(specials) == 30
    listed = convert.read_tekken(_toy_tekken(ranks, used=10, n_special=4, specials=["<a>", "<b>"]))
    assert listed[2] == [(0, "<a>"), (1, "<b>"), (2, "<SPECIAL_2>"), (3, "<SPECIAL_3>")]
    with pytest.raises(ValueError, match="special tokens for"):
        convert.read_tekken(_toy_tekken(ranks, used=10, n_special=1, specials=["<a>", "<b>"]))
    with pytest.raises(ValueError, match="fewer than"):
        convert.read_tekken(_toy_tekken(ranks, used=len(ranks) + 1, n_special=2))


@given(seed=st.integers(0, 50), text=st.text(alphabet="ab \n'.1", max_size=60))
def test_toy_tekken_conversion_matches_tiktoken_plus_the_offset(seed, text):
    """What mistral-common does: tiktoken on the unshifted ranks, then every id + n_special;
    the converted file gives those ids and extracts the control tokens."""
    ranks = _toy_ranks(seed, 40)
    data = _toy_tekken(ranks, used=len(ranks), n_special=25)
    got, pattern, specials, offset = convert.read_tekken(data)
    doc = convert.tiktoken_to_hf(got, pattern, specials, id_offset=offset)
    hf = tokenizers.Tokenizer.from_str(convert.dump_canonical(doc).decode())
    enc = tiktoken.Encoding("toy", pat_str=pattern, mergeable_ranks=got, special_tokens={})
    assert hf.encode(text, add_special_tokens=False).ids == [t + 25 for t in enc.encode(text)]
    assert hf.encode("[INST]" + text, add_special_tokens=False).ids[:1] == [3]


def test_special_ids_may_not_overlap_the_shifted_ranks():
    ranks = _toy_ranks(0, 5)
    with pytest.raises(ValueError, match="collides"):
        convert.tiktoken_to_hf(ranks, TOY_PATTERN, [(12, "<x>")], id_offset=10)


def _proto(*fields) -> bytes:
    """A protobuf message from (field, value) pairs: ints as varints, bytes length-delimited,
    floats as fixed32 (what read_sentencepiece reads)."""
    import struct

    def varint(x):
        out = bytearray()
        while True:
            b, x = x & 0x7F, x >> 7
            out.append(b | (0x80 if x else 0))
            if not x:
                return bytes(out)

    out = b""
    for f, v in fields:
        if isinstance(v, bytes):
            out += varint(f << 3 | 2) + varint(len(v)) + v
        elif isinstance(v, float):
            out += varint(f << 3 | 5) + struct.pack("<f", v)
        else:
            out += varint(f << 3) + varint(v)
    return out


def _toy_sentencepiece(model_type=2) -> bytes:
    pieces = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("[X]", 0.0, 4)]
    pieces += [(f"<0x{b:02X}>", 0.0, 6) for b in range(256)]
    for k, p in enumerate(["▁", "a", "b", "▁a", "ab", "▁ab", "ba"]):
        pieces.append((p, -float(k), 1))
    msg = b"".join(_proto((1, _proto((1, p.encode()), (2, s), (3, t)))) for p, s, t in pieces)
    msg += _proto((2, _proto((3, model_type), (35, 1))))
    msg += _proto((3, _proto((1, b"identity"), (3, 1), (4, 0), (5, 1))))
    return msg


def test_sentencepiece_conversion_merges_by_score_and_falls_back_to_bytes():
    model = convert.read_sentencepiece(_toy_sentencepiece())
    assert model["model_type"] == 2 and model["byte_fallback"] and len(model["pieces"]) == 266
    doc = convert.sentencepiece_to_hf(model)
    hf = tokenizers.Tokenizer.from_str(convert.dump_canonical(doc).decode())
    vocab = doc["model"]["vocab"]
    # "▁ab" beats "ba" (higher score) and is itself built from "▁a" + "b"
    assert hf.encode("ab ba", add_special_tokens=False).ids == [
        vocab["▁ab"], vocab["▁"], vocab["ba"]
    ]  # fmt: skip
    assert hf.encode("c", add_special_tokens=False).ids == [vocab["▁"], vocab["<0x63>"]]
    assert [t["content"] for t in doc["added_tokens"]] == ["<unk>", "<s>", "[X]"]


def test_sentencepiece_models_we_do_not_convert_are_refused():
    with pytest.raises(ValueError, match="not BPE"):
        convert.sentencepiece_to_hf(convert.read_sentencepiece(_toy_sentencepiece(model_type=1)))
