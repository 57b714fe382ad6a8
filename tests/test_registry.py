import json
import shutil

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import Regex, pre_tokenizers

import toktier
from toktier.errors import InvalidTextError, TokenizerFileError, UnknownTokenizerError
from toktier.families import detect_family
from toktier.families.classes import CLASS_BITS

SAMPLE = "Hello, world! It's 2026 — naïve café 漢字 😀\r\n\tdef f(x):  return x**2 <|endoftext|>"


@pytest.mark.parametrize("name", toktier.known())
def test_encode_is_the_reference_as_uint32(name):
    tok = toktier.load(name)
    ids = tok.encode(SAMPLE)
    assert isinstance(ids, np.ndarray) and ids.dtype == np.uint32
    assert (
        ids.tolist() == tok.hf.encode(SAMPLE, add_special_tokens=False).ids == tok.reference(SAMPLE)
    )
    enc = tok.reference_encoding(SAMPLE)
    assert enc.ids == ids.tolist() and len(enc.offsets) == len(ids)


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(UnknownTokenizerError) as exc:
        toktier.load("llama-9")
    msg = str(exc.value)
    for name in toktier.known():
        assert name in msg


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(TokenizerFileError, match="not found"):
        toktier.load(tmp_path / "nope" / "tokenizer.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TokenizerFileError, match=r"not a valid tokenizer\.json"):
        toktier.load(bad)
    bad.write_text('{"version": "1.0"}')
    with pytest.raises(TokenizerFileError):
        toktier.load(bad)


def test_bad_text_inputs():
    tok = toktier.load("llama3")
    with pytest.raises(TypeError, match="must be str"):
        tok.encode(b"bytes")
    with pytest.raises(TypeError):
        tok.reference(None)
    with pytest.raises(InvalidTextError, match="lone surrogate U\\+D800 at index 3"):
        tok.encode("abc\ud800def")
    assert isinstance(InvalidTextError("x"), ValueError)


@given(st.text(max_size=40), st.integers(0xD800, 0xDFFF), st.integers(0, 40))
def test_lone_surrogates_are_always_refused(text, surrogate, pos):
    tok = toktier.load("cl100k")
    pos = min(pos, len(text))
    with pytest.raises(InvalidTextError):
        tok.encode(text[:pos] + chr(surrogate) + text[pos:])
    clean = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    assert tok.encode(clean).tolist() == tok.hf.encode(clean, add_special_tokens=False).ids


def _copy_doc(name, tmp_path, mutate=None, dirname="mytok"):
    doc = json.loads(toktier.load(name).path.read_text(encoding="utf-8"))
    if mutate:
        mutate(doc)
    out = tmp_path / dirname / "tokenizer.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc), encoding="utf-8")
    return out


def test_family_comes_from_structure_not_name(tmp_path):
    path = _copy_doc("llama3", tmp_path, dirname="definitely-not-llama")
    tok = toktier.load(path)
    assert tok.family == "cl100k" and tok.name == "definitely-not-llama"
    assert tok.reference(SAMPLE) == toktier.load("llama3").reference(SAMPLE)
    # a loaded directory works too
    assert toktier.load(path.parent).sha256 == tok.sha256


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["pre_tokenizer"]["pretokenizers"][0]["pattern"].update(Regex=r"\p{L}+|\s+|."),
        lambda d: d["pre_tokenizer"]["pretokenizers"][-1].update(use_regex=True),
        lambda d: d.update(normalizer={"type": "Lowercase"}),
        lambda d: d.update(
            truncation={
                "max_length": 8,
                "strategy": "LongestFirst",
                "stride": 0,
                "direction": "Right",
            }
        ),
        lambda d: d["added_tokens"][0].update(lstrip=True),
    ],
    ids=["other-pattern", "byte-level-regex", "lowercase", "truncation", "lstrip-added-token"],
)
def test_unrecognised_shapes_are_unsupported(tmp_path, mutate):
    doc = json.loads(toktier.load("llama3").path.read_text(encoding="utf-8"))
    mutate(doc)
    assert detect_family(doc) == "unsupported"


def test_probed_facts():
    tok = toktier.load("gpt-oss")
    assert tok.longest_added_chars == max(len(t.content) for t in tok.added_tokens)
    assert {t.content for t in tok.added_tokens} >= {
        "<|start|>",
        "<|message|>",
        "<|end|>",
        "<|endoftext|>",
    }
    vocab = tok.hf.get_vocab(with_added_tokens=False)
    added = {t.content for t in tok.added_tokens}
    # the longest token covers at least as many characters as any decoded vocabulary entry
    decoded = max(
        len(tok.hf.decode([i]))
        for s, i in vocab.items()
        if s not in added and "\ufffd" not in tok.hf.decode([i])
    )
    assert tok.longest_token_chars >= decoded
    assert toktier.load("bert-uncased").longest_token_chars < 30


def test_class_table_shape_and_known_members():
    ct = toktier.load("llama3").class_table
    assert ct.bits.shape == (0x110000,) and ct.bits.dtype == np.uint16
    assert len(ct.members("WS")) == 25  # the White_Space code points
    bits = ct.bits
    letter = (bits & CLASS_BITS["L"][0]) > 0
    sub = np.zeros_like(letter)
    for k in ("Lu", "Ll", "Lt", "Lm", "Lo"):
        sub |= (bits & CLASS_BITS[k][0]) > 0
    assert (letter == sub).all()
    for ch, cls in (
        ("a", "Ll"),
        ("Q", "Lu"),
        ("7", "N"),
        ("\u0301", "M"),
        (" ", "WS"),
        ("漢", "Lo"),
        ("!", "P"),
    ):
        assert ct.has(ord(ch), cls)
    assert not ct.has(0xD800, "L")  # surrogates are never probed


def test_qwen_table_marks_code_points_nfc_rewrites():
    ct = toktier.load("qwen3").class_table
    assert ct.has(0x212B, "NORM_CHANGES")  # ANGSTROM SIGN -> Å
    assert not ct.has(ord("A"), "NORM_CHANGES")
    assert len(toktier.load("llama3").class_table.members("NORM_CHANGES")) == 0


@given(
    st.integers(0, 0x10FFFF).filter(lambda c: not 0xD800 <= c <= 0xDFFF),
    st.sampled_from(sorted(CLASS_BITS)),
)
def test_class_table_agrees_with_the_reference_regex(cp, cls):
    """One character at a time, asked a different way (isolated split), gives the same answer."""
    ct = toktier.load("qwen3.6").class_table
    split = pre_tokenizers.Split(Regex(CLASS_BITS[cls][1]), behavior="isolated")
    text = "\x00" + chr(cp) + "\x00"  # U+0000 is in none of the probed classes
    pieces = [p for p, _ in split.pre_tokenize_str(text)]
    assert ct.has(cp, cls) == (chr(cp) in pieces)


def test_class_table_is_cached_on_disk(tmp_path, monkeypatch):
    from toktier import paths

    tok = toktier.load("cl100k")
    _ = tok.class_table
    cached = list(paths.probe_cache().glob(f"classes-v*-{tok.class_table.probe_key}-*.npy"))
    assert len(cached) == 1
    shutil.copy(cached[0], tmp_path / "copy.npy")
    assert (np.load(tmp_path / "copy.npy") == tok.class_table.bits).all()


def test_classify_names_the_reason_a_file_is_unsupported():
    from toktier.families import classify

    doc = toktier.load("llama3").document()
    assert classify(doc) == ("cl100k", "")
    family, why = classify({**doc, "model": {**doc["model"], "byte_fallback": True}})
    assert family == "unsupported" and "outside the SentencePiece shape" in why
    assert classify({**doc, "model": {"type": "Unigram"}})[1] == "model type 'Unigram'"
    assert classify({**doc, "normalizer": {"type": "NFKC"}})[1] == "a normalizer other than NFC"
    assert classify({**doc, "truncation": {"max_length": 8}})[0] == "unsupported"


def test_tekken_is_served_exactly_by_the_reference_route():
    from toktier.tier import Tier

    tok = toktier.load("tekken")
    tier = Tier(tok, verify_rate=0)
    text = "[INST] Wie geht's? 12345 — Привет [/INST]"
    assert tier.encode(text, session="s").ids.tolist() == tok.reference(text)
    assert tier.append("s", " more\n").ids.tolist() == tok.reference(text + " more\n")
