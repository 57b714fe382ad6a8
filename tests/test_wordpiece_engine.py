"""The WordPiece engine (bert-uncased) against the reference: IDs and spans, split level,
parallel parts, certified cuts, and the reference stretches around unsafe characters."""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import toktier
from toktier.campaigns import corpus
from toktier.engine import wordpiece
from toktier.engine.wordpiece import WordPieceEngine

# Characters where the BERT pipeline does something: case, accents (precomposed and
# combining), CJK padding, removed controls, whitespace kinds, punctuation, characters
# whose lowercase or decomposition grows, unknown characters, kept combining marks with
# a nonzero class (unsafe: the reference's canonical reordering), added-token literals
# and their halves, and a word past max_input_chars_per_word.
_PARTS = ["a", "Z", "é", "E\u0301", "ñ", "中", "文", "한", "\x00", "\x07", "\u200b", "\ufffd",
          " ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", ".", ",", "'", "-", "#", "##",
          "İ", "Σ", "ς", "ß", "ﬁ", "Ⅻ", "½", "😀", "\U0001D165", "\U0001D16D", "\u0301",
          "[CLS]", "[MASK]", "[SEP", "CLS]", "[unk]", "don't", "the", "ing", "unaffable", "x" * 101,
          "123", "٣"]  # fmt: skip


@pytest.fixture(scope="module")
def engine():
    eng = WordPieceEngine(toktier.load("bert-uncased"))
    eng.warmup()
    return eng


def _assert_exact(eng, text, *, parallel=False, tok=None):
    tok = tok or eng.tokenizer
    ref = tok.hf.encode(text, add_special_tokens=False)
    ids, s, e = eng.encode_parallel(text, threads=2, min_chars=0) if parallel else eng.encode(text)
    assert ids.dtype == np.uint32 and s.dtype == np.int64 and e.dtype == np.int64
    assert ids.tolist() == ref.ids, text[:200]
    assert list(zip(s.tolist(), e.tolist(), strict=True)) == ref.offsets, text[:200]


def _real_texts(archive) -> list[str]:
    docs = []
    for d in corpus.trajectory_documents(archive):
        docs.append(d)
        if sum(map(len, docs)) > 60_000:
            break
    ml = "".join(corpus.pycountry_documents())
    code = "".join(corpus.stdlib_documents())
    return ["".join(docs), ml[:60_000], ml[-60_000:], code[:60_000]]


def test_real_text_is_exact_on_every_path(engine, trajectory_archive):
    small = WordPieceEngine(engine.tokenizer, workspace_bytes=1 << 12)  # many parts
    for text in _real_texts(trajectory_archive):
        _assert_exact(engine, text)
        _assert_exact(engine, text, parallel=True)
        _assert_exact(small, text)


@given(st.lists(st.sampled_from(_PARTS) | st.text(max_size=3), max_size=40))
def test_adversarial_text_is_exact(parts):
    eng = _ENGINE()
    text = "".join(parts)
    _assert_exact(eng, text)
    _assert_exact(eng, text, parallel=True)


@given(st.lists(st.sampled_from(_PARTS) | st.text(max_size=3), max_size=40))
def test_split_level_equals_the_reference_pre_tokenizer(parts):
    eng = _ENGINE()
    text = "".join(parts)
    ref = eng.tokenizer.hf.pre_tokenizer.pre_tokenize_str(text)
    starts, ends = eng.split(text)
    assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == [o for _p, o in ref]


def test_certified_cuts_split_the_reference_alike(engine, trajectory_archive):
    """Every certified cut p: ref(text[:p]) ++ ref(text[p:]) == ref(text), by the reference
    alone (IDs and shifted spans)."""
    enc = engine.tokenizer.hf.encode
    rng = random.Random(3)
    texts = [t[:4000] for t in _real_texts(trajectory_archive)]
    texts.append("".join(rng.choice(_PARTS) for _ in range(600)))
    checked = 0
    for text in texts:
        full = enc(text, add_special_tokens=False)
        cuts = engine.certified_cuts(text).tolist()
        assert cuts, "no certified cut in a real text"
        for p in rng.sample(cuts, min(40, len(cuts))):
            left, right = (
                enc(text[:p], add_special_tokens=False),
                enc(text[p:], add_special_tokens=False),
            )
            assert left.ids + right.ids == full.ids
            assert left.offsets + [(a + p, b + p) for a, b in right.offsets] == full.offsets
            checked += 1
    assert checked >= 100


def test_unsafe_characters_go_to_the_reference_only_around_them(engine):
    """A kept combining mark with a nonzero class (U+1D165/U+1D16D: the reference reorders
    them) sends the stretch between the certified cuts around it to the reference; the
    rest stays on the engine, and the whole is exact."""
    tok = engine.tokenizer
    assert engine.tables.unsafe[0x1D165] and engine.tables.unsafe[0x1D16D]
    assert not engine.tables.unsafe[ord("e")] and not engine.tables.unsafe[0x301]  # removed
    words = ["alpha", "Beta,", "gamma.", "x\U0001d16d\U0001d165y", "delta"] * 200
    text = " ".join(words)
    seen = []

    class Spy:
        def encode(self, s, add_special_tokens=False):
            seen.append(s)
            return tok.hf.encode(s, add_special_tokens=add_special_tokens)

    spy = WordPieceEngine(tok)
    spy.tokenizer = SimpleNamespace(hf=Spy())
    _assert_exact(spy, text, tok=tok)
    assert seen and all(len(s) <= 12 for s in seen), seen[:3]
    assert sum(map(len, seen)) < len(text) // 5


def test_long_and_unknown_words_are_one_unk(engine):
    unk = engine.tables.unk
    ids, s, e = engine.encode("ok " + "b" * 101 + " 😀 x")
    assert ids.tolist()[1:3] == [unk, unk]
    assert (s[1], e[1]) == (3, 104)
    _assert_exact(engine, "ok " + "b" * 100 + " " + "b" * 101)


def test_tables_come_from_the_reference_one_character_at_a_time(engine):
    t = engine.tables
    norm = engine.tokenizer.hf.normalizer.normalize_str
    rng = random.Random(5)
    for c in [0x41, 0xC9, 0x130, 0x3A3, 0x4E2D, 0xAC00, 0x0, 0x200B, 0xFB01, 0x1D165,
              *rng.sample(range(0x30000), 300)]:  # fmt: skip
        if 0xD800 <= c < 0xE000:
            continue
        form = "".join(map(chr, t.norm_pool[t.norm_off[c] : t.norm_off[c + 1]]))
        assert form == norm(chr(c)), hex(c)
    assert t.kind[ord(" ")] == wordpiece.K_SPACE and t.kind[ord(",")] == wordpiece.K_PUNCT
    assert t.kind[ord("a")] == wordpiece.K_WORD and t.cut_after[ord("\n")]


_CACHE: dict = {}


def _ENGINE() -> WordPieceEngine:  # one engine for the hypothesis tests
    if "e" not in _CACHE:
        _CACHE["e"] = WordPieceEngine(toktier.load("bert-uncased"))
    return _CACHE["e"]
