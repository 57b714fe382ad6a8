"""The compiled SentencePiece BPE engine against the reference: IDs and character spans.

What is special to SentencePiece and has to come out exactly as the reference gives it:
the "▁" prepended to every segment (the text's start and after every added literal),
spaces and typed "▁" (the same symbol), runs of spaces, byte fallback (``<0xXX>``
tokens for characters that are no vocabulary entry, each with the character's span),
pieces cut where no vocabulary entry holds two characters adjacent, and the parallel
path's chunks that start inside a segment (no "▁" of their own).
"""

from __future__ import annotations

import json
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import toktier
from toktier.campaigns import engine_campaign
from toktier.engine.cpu import engine_for, new_engine
from toktier.engine.sentencepiece import SentencePieceEngine, build_sp_tables
from toktier.engine.tables import EngineUnsupported
from toktier.errors import InvalidTextError
from toktier.registry import Tokenizer

from .warmup_probe import compiled_after_warmup

NAMES = ["mistral-sp-v1", "mistral-sp-v3"]


@pytest.fixture(scope="module", params=NAMES)
def engine(request):
    eng = engine_for(toktier.load(request.param))
    assert isinstance(eng, SentencePieceEngine)
    return eng


def _reference(eng, text):
    enc = eng.tokenizer.hf.encode(text, add_special_tokens=False)
    off = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
    return enc.ids, off[:, 0].tolist(), off[:, 1].tolist()


def _assert_exact(eng, text, got=None):
    ids, s, e = got if got is not None else eng.encode(text)
    ref = _reference(eng, text)
    assert (ids.tolist(), s.tolist(), e.tolist()) == ref, text[:200]


# Pieces of text where SentencePiece differs from byte-level BPE.
_PARTS = [" ", "  ", "   ", "▁", "▁▁", " ▁", "\n", "\t", "\r\n", "x", "the", " the", "The",
          "hello", "(", ")", "_", ".", "'", "éa", "中文", "日本語", "Привет", "😀", "\ue000",
          "\x01", "\u0301", "123", "0", "[INST]", "[/INST]", "</s>", "<s>", "<unk>", "▁x",
          "self.x", "a=b", "def", "  return", "ü", "ß", "İ", "\u200b"]  # fmt: skip


@given(st.lists(st.sampled_from(_PARTS) | st.text(max_size=3), max_size=24))
def test_engine_equals_reference_on_adversarial_texts(engine, parts):
    text = "".join(parts)
    _assert_exact(engine, text)


@given(st.lists(st.sampled_from(_PARTS) | st.text(max_size=3), min_size=2, max_size=60))
def test_parallel_chunks_equal_the_reference(engine, parts):
    """Chunks cut at certified cuts inside a segment get no "▁"; after a literal they do."""
    text = "".join(parts) * 3
    _assert_exact(engine, text, engine.encode_parallel(text, threads=2, min_chars=0))


def test_a_text_beyond_the_workspace_budget_goes_in_parts(engine):
    """Beyond the workspace budget ``encode_parallel`` makes more chunks than threads, and
    ``encode`` (one thread) takes the text in parts one after another through its workspace
    (with the "▁" rule at each isolated cut): the reference's IDs and spans either way, and
    no part is larger than the budget."""
    small = SentencePieceEngine(engine.tokenizer, workspace_bytes=1 << 12)
    calls = []
    inner = small._encode_u8
    small._encode_u8 = lambda u8, pre: calls.append(u8.size) or inner(u8, pre)
    rng = np.random.default_rng(3)
    text = "".join(rng.choice(_PARTS) for _ in range(12_000)) + "[INST] " + "word " * 3000
    _assert_exact(small, text, small.encode_parallel(text, threads=2, min_chars=0))
    assert len(calls) >= 8, len(calls)
    calls.clear()
    _assert_exact(small, text)
    assert len(calls) >= 8 and max(calls) <= small.workspace_bytes, calls
    calls.clear()
    short = text[:1000]
    _assert_exact(small, short)
    assert calls == [len(short.encode())]  # within the budget: one compiled call


def test_parallel_cuts_are_isolated_from_literals(engine):
    """Every part of ``encode_parallel`` but the first starts inside a segment: no literal
    ends at a cut (the reference's own offsets say where literals are), and each cut is
    one where the text after it, encoded with no "▁" of its own, matches the reference."""
    rng = np.random.default_rng(5)
    lits = [t.content for t in engine.tokenizer.added_tokens if t.content][:8]
    words = [*_PARTS, *lits, *(lit + "x" for lit in lits)]
    text = "".join(rng.choice(words) for _ in range(20_000))
    u8 = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    bounds = engine._part_bounds(u8, 24)
    assert len(bounds) > 12, "dense literals still leave cuts"
    enc = engine.tokenizer.hf.encode(text, add_special_tokens=False)
    special = {t.id for t in engine.tokenizer.added_tokens}
    literal_ends = {
        len(text[:e].encode("utf-8"))
        for tid, (_s, e) in zip(enc.ids, enc.offsets, strict=True)
        if tid in special
    }
    assert not literal_ends & set(bounds[1:-1])
    _assert_exact(engine, text, engine.encode_parallel(text, threads=2, min_chars=0))


def test_real_text_and_every_edge(engine):
    from toktier.campaigns.corpus import mixed_documents

    docs, _ = mixed_documents(60_000, seed=4)
    for doc in docs:
        _assert_exact(engine, doc)
    big = "[INST]".join(docs)
    _assert_exact(engine, big, engine.encode_parallel(big, threads=2, min_chars=0))
    for text in ["", " ", "▁", "\n", "[INST]", "[INST] ", " [INST]", "[INST]\n[INST]\n", "😀",
                 " 😀", "a 😀 b", "x" * 300, " " * 300, "▁" * 40 + "x"]:  # fmt: skip
        _assert_exact(engine, text)
    with pytest.raises(InvalidTextError):
        engine.encode("bad \ud800 surrogate")


def test_piece_cache_never_changes_output(engine):
    """Fill the piece cache, corrupt rows anywhere, let other pieces evict: still exact
    (a hit needs the piece's exact bytes and a valid check word over the row)."""
    rng = np.random.default_rng(0)
    words = ["the", " return", "    x", " données", " 漢字", "😀", "(self", "__init__",
             " [INST] hi", "▁▁y", " Camel", "Case", " ok"]  # fmt: skip
    text = "".join(rng.choice(words) for _ in range(800))
    _assert_exact(engine, text)  # fills the cache
    cache = engine._cache()
    used = np.flatnonzero(cache[:, 0])
    assert used.size
    hit = rng.choice(used, size=min(64, used.size), replace=False)
    cols = rng.integers(0, cache.shape[1], size=hit.size)
    cache[hit, cols] ^= rng.integers(1, 1 << 40, size=hit.size)
    cache[hit[:8], 3:] = rng.integers(0, 1 << 17, size=(min(8, hit.size), cache.shape[1] - 3))
    _assert_exact(engine, text)
    _assert_exact(engine, text[::-1])
    _assert_exact(engine, text)


def test_clearing_the_piece_cache_empties_it_and_stays_exact(engine):
    """``clear_piece_caches`` (the empty-cache measurement) leaves no row a lookup can hit,
    and the next encodes merge every piece again, exactly."""
    text = " données 漢字 (self.__init__) [INST] Camel Case ok " * 40
    _assert_exact(engine, text)  # fills the cache
    assert np.flatnonzero(engine._cache()[:, 0]).size
    engine.clear_piece_caches()
    assert not engine._cache().any()
    _assert_exact(engine, text)
    assert np.flatnonzero(engine._cache()[:, 0]).size  # stored again


def test_pieces_only_cut_where_no_entry_spans(engine):
    """Every pair the engine treats as unjoinable is adjacent in no vocabulary entry."""
    from toktier.engine.sentencepiece import _joinable

    vocab = engine.tokenizer.document()["model"]["vocab"]
    pairs = {(a, b) for t in vocab if len(t) > 1 and not t.startswith("<0x") for a, b in pairwise(t)}
    sp = engine.sp
    for a, b in list(pairs)[:3000]:
        assert _joinable(sp.bigrams, sp.ascii_pairs, ord(a), ord(b))
    for a, b in [("a", "😀"), ("\x00", "q"), ("中", "\ue000")]:
        assert (a, b) not in pairs and not _joinable(sp.bigrams, sp.ascii_pairs, ord(a), ord(b))
    assert _joinable(sp.bigrams, sp.ascii_pairs, 32, ord("t"))  # a space is "▁"


def test_tokenizers_the_engine_does_not_implement_are_refused(tmp_path):
    doc = toktier.load("mistral-sp-v1").document()
    doc["model"]["byte_fallback"] = False
    path = tmp_path / "nofallback" / "tokenizer.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    tok = toktier.load(path)
    if tok.family == "sentencepiece":  # still the family: no byte fallback, no engine
        with pytest.raises(EngineUnsupported, match="byte fallback"):
            build_sp_tables(tok)
    assert engine_for(tok) is None
    with pytest.raises(EngineUnsupported):
        build_sp_tables(toktier.load("llama3"))


def test_engine_campaign_runs_on_sentencepiece():
    """The certification campaign: no split level (no pre-tokenizer), cuts proven on the
    reference's tokens of the whole text, code points: 0 divergences (the parallel check
    needs 200K characters: see test_parallel_chunks_equal_the_reference)."""
    tok = toktier.load("mistral-sp-v3")
    r = engine_campaign.run_campaign(tok, 40_000, seed=3, codepoint_stride=997, triples=False,
                                     progress=False)  # fmt: skip
    assert r.split_inputs == 0 and r.id_inputs > 50 and r.cuts_checked > 50
    assert r.parallel_inputs >= 1 and r.parts_inputs >= 1
    assert r.divergences == 0, r.examples


def test_engine_is_chosen_and_served(tmp_path):
    tok = toktier.load("mistral-sp-v1")
    assert isinstance(new_engine(tok), SentencePieceEngine)
    assert isinstance(tok, Tokenizer) and tok.engine is engine_for(tok)
    text = "Hello [INST] world\n😀 ▁x"
    assert tok.encode(text).tolist() == tok.reference(text)


def test_warmup_leaves_no_compile_to_a_request():
    """``warmup()`` also runs the compiled UTF-8 pass a long non-ASCII request takes (before,
    that request compiled it); the byte-level engines' check is in test_engine."""
    new = compiled_after_warmup("mistral-sp-v3")
    assert not new, f"compiled on a request after warmup: {new}"
