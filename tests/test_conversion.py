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
@pytest.mark.parametrize("name", ["qwen3", "qwen3.6", "gpt-oss", "cl100k"])
def test_conversion_certification_slice(name):
    """The workflow runs >= 1M characters per tokenizer; CI runs a 60K slice plus every vocab entry."""
    res = conversion.certify(name, 60_000, seed=7)
    assert res.characters >= 60_000
    assert res.vocab_entries_checked > 90_000
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
