"""The WordPiece engine (bert-uncased) against the reference: IDs and spans, split level,
parallel parts, certified cuts, and the reference stretches around unsafe characters."""

from __future__ import annotations

import random
import re
import threading
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


def _assert_ids_only_exact(eng, text, tok=None):
    tok = tok or eng.tokenizer
    ref = tok.hf.encode(text, add_special_tokens=False).ids
    assert eng.encode_ids(text, threads=1).tolist() == ref, text[:200]
    assert eng.encode_ids(text, threads=2).tolist() == ref, text[:200]


# Words at the word cache's edges: 15 and 16 characters (cached / not), 15 tokens of one
# character each, an [UNK] word, words that differ only past the sixth or in the last
# character (the key's later words), and punctuation (a word of its own).
_CACHE_WORDS = ["a" * 15, "a" * 16, "a" * 14 + "b", "ⅻ" * 15, "ⅻ" * 8, "абвгдеёжзийклмн",
                "абвгдеёжзийклмо", "😀", "x😀", "unaffable", "unaffablf", "playing", "played",
                "don't", ",", "!", "the", "The", "THE", "##", "naïve", "naive", "中", "ab1"]  # fmt: skip


@given(st.lists(st.sampled_from(_CACHE_WORDS + _PARTS) | st.text(max_size=6), max_size=60))
def test_word_cache_answers_what_the_walk_does(parts):
    """Every text twice (the second time from the cache) through engines with the default
    cache, a two-row cache (words evict each other on every line) and none: IDs and spans
    equal to the reference's, and the IDs-only path too."""
    text = " ".join(parts)
    for eng in _ENGINES():
        for _ in range(2):
            _assert_exact(eng, text)
            _assert_ids_only_exact(eng, text)


def test_word_cache_is_per_thread_and_kept_across_calls(engine):
    """A thread's first encode fills its own rows with exactly the text's distinct words of
    at most WC_MAX_CHARS characters (but one-character words answered by ``single``);
    encoding again changes nothing; the calling thread's rows are another array."""
    text = " ".join(_CACHE_WORDS * 30)
    eng = WordPieceEngine(engine.tokenizer)
    seen = []

    def in_a_new_thread():
        _assert_exact(eng, text)
        rows = eng._word_cache()
        seen.append((rows, int((rows[:, 0] != 0).sum())))
        _assert_exact(eng, text)  # answered from the rows now
        seen.append((rows, int((rows[:, 0] != 0).sum())))

    th = threading.Thread(target=in_a_new_thread)
    th.start()
    th.join()
    (rows, used), (_same, used_again) = seen
    assert rows.shape == (wordpiece.WC_ROWS, wordpiece.WC_COLS)
    hf = eng.tokenizer.hf
    words = {w for w, _ in hf.pre_tokenizer.pre_tokenize_str(hf.normalizer.normalize_str(text))}
    cached = {w for w in words if 1 < len(w) <= wordpiece.WC_MAX_CHARS
              or (len(w) == 1 and ord(w) >= wordpiece.SINGLE_MAX)}  # fmt: skip
    assert used == used_again == len(cached)
    assert used < len(words)  # longer words and most one-character words are not cached
    assert eng._word_cache() is not rows


def test_bad_input_gets_a_clear_error_on_every_method(engine):
    """A lone surrogate (short text, and long non-ASCII text, whose UTF-8 comes from the
    compiled pass) raises InvalidTextError at its index; a non-str raises TypeError."""
    from toktier.errors import InvalidTextError

    long = "é" * 40_000 + "\ud800" + "x"
    methods = [engine.encode, engine.encode_ids, engine.encode_parallel, engine.certified_cuts,
               lambda t: engine.encode_ids(t, threads=2),
               lambda t: engine.encode_parallel(t, threads=2, min_chars=0)]  # fmt: skip
    for fn in methods:
        for text, at in (("ab\udc00c", "U+DC00 at index 2;"), (long, "U+D800 at index 40000;")):
            with pytest.raises(InvalidTextError, match=re.escape(at)):
                fn(text)
        for bad in (None, b"abc", 3):
            with pytest.raises(TypeError, match="must be str"):
                fn(bad)
    _assert_exact(engine, "still fine after the errors")


def _assert_parts_exact(eng, text, parts):
    """``text`` through the str-parts path cut for ``parts`` parts: IDs and spans (and the
    IDs alone) equal to the reference's; the bounds each just after a ``cut_after``
    character.  Returns the bounds."""
    bounds = eng._str_part_bounds(text, parts)
    if not text:
        assert bounds == [0, 0]
        return bounds
    assert bounds[0] == 0 and bounds[-1] == len(text) and bounds == sorted(set(bounds))
    assert all(eng.tables.cut_after[ord(text[p - 1])] for p in bounds[1:-1])
    ref = eng.tokenizer.hf.encode(text, add_special_tokens=False)
    ids, s, e = eng._encode_str_parts(text, bounds, 2, True)
    assert ids.tolist() == ref.ids, text[:200]
    assert list(zip(s.tolist(), e.tolist(), strict=True)) == ref.offsets, text[:200]
    assert eng._encode_str_parts(text, bounds, 2, False)[0].tolist() == ref.ids
    return bounds


def test_parallel_parts_are_cut_in_the_str_and_join_exactly(engine, trajectory_archive):
    """Two threads on a long text: cut in the str itself after whitespace (no whole-text
    UTF-8 or decode first), each part from its own UTF-8 on its thread, spans shifted by
    the part's start -- exact against the reference, on every real text and part count."""
    calls = []
    spy = WordPieceEngine(engine.tokenizer)
    inner = spy._encode_text
    spy._encode_text = lambda text, u8, base, *a: calls.append(base) or inner(text, u8, base, *a)
    for text in _real_texts(trajectory_archive):
        for parts in (2, 3, 8, 64):
            assert len(_assert_parts_exact(engine, text, parts)) == parts + 1
        calls.clear()
        _assert_exact(spy, text, parallel=True)  # the parts' starts, each decoded alone
        assert len(calls) >= 2 and sorted(calls) == sorted(set(calls)) and min(calls) == 0
        _assert_ids_only_exact(spy, text)


@given(st.lists(st.sampled_from(_PARTS) | st.text(max_size=3), max_size=120),
       st.integers(2, 12))  # fmt: skip
def test_str_parts_are_exact_wherever_the_cuts_fall(parts, count):
    """Parts cut next to unsafe marks, literals, CRLF, removed controls and CJK: the join
    is the whole text's encoding."""
    _assert_parts_exact(_ENGINE(), "".join(parts), count)


def test_a_literal_holding_a_cut_character_keeps_the_decoded_cuts(engine):
    """Where an added token holds a character the str path would cut after, a literal could
    cross that cut: the engine keeps the decoded path (every cut checked against the
    literals found), and stays exact."""
    cut_after = engine.tables.cut_after
    assert wordpiece._cut_char_pattern(cut_after, ["[CLS]", "[MASK]"]) is not None
    assert wordpiece._cut_char_pattern(cut_after, ["[CLS]", "<a b>"]) is None
    assert wordpiece._cut_char_pattern(cut_after, ["x\u3000y"]) is None
    eng = WordPieceEngine(engine.tokenizer)
    eng._cut_chars = None
    text = " ".join(_CACHE_WORDS * 400)
    _assert_exact(eng, text, parallel=True)
    _assert_ids_only_exact(eng, text)


def test_a_lone_surrogate_in_a_later_part_is_reported_at_the_first(engine):
    text = "ab cd " * 30_000 + "\udc01 x " + "é " * 1000 + "\ud800"
    assert len(engine._str_part_bounds(text, 4)) > 2
    from toktier.errors import InvalidTextError

    for fn in (lambda t: engine.encode_ids(t, threads=2),
               lambda t: engine.encode_parallel(t, threads=2)):  # fmt: skip
        with pytest.raises(InvalidTextError, match=re.escape("U+DC01 at index 180000;")):
            fn(text)
    _assert_exact(engine, "still fine after the errors", parallel=True)


def test_word_cache_rows_must_be_a_power_of_two(engine):
    for bad in (3, -2, 1000):
        with pytest.raises(ValueError, match="power of two"):
            WordPieceEngine(engine.tokenizer, word_cache_rows=bad)


def test_walk_table_holds_exactly_the_trie_edges(engine):
    """Each walk slot decodes to one edge of the vocabulary trie (node, code point) ->
    child, with the child's terminal bit; every edge is there once; the table is at
    most WALK_LOAD full."""
    t = engine.tables
    walk = t.walk[t.walk != -1]
    assert walk.size <= t.walk.size * wordpiece.WALK_LOAD
    node = walk & wordpiece.WALK_NODE
    cp = (walk >> wordpiece.WALK_NODE_BITS) & ((1 << 21) - 1)
    child = (walk >> 41) & wordpiece.WALK_NODE
    terminal = (walk & wordpiece.WALK_TERMINAL) != 0
    got = set(zip(node.tolist(), cp.tolist(), child.tolist(), terminal.tolist(), strict=True))
    keys = t.tkeys[t.tkeys != -1]
    kids = t.tchild[t.tkeys != -1].astype(np.int64)
    want = set(zip((keys >> 32).tolist(), (keys & 0xFFFFFFFF).tolist(), kids.tolist(),
                   (t.term[kids] >= 0).tolist(), strict=True))  # fmt: skip
    assert got == want and len(got) == walk.size


def test_walk_stops_only_where_no_longer_entry_exists(engine):
    """``WALK_DEEPER`` on an edge says exactly that some vocabulary entry (under that root)
    strictly extends the string the edge's child spells -- read off the vocabulary
    itself, not the trie: a wrong bit would stop a walk before its longest match."""
    t, vocab = engine.tables, engine.tokenizer.hf.get_vocab()
    prefix = "##"
    spelled = {0: ""}  # trie node -> the string from its root (node 0's children are roots)
    keys = t.tkeys[t.tkeys != -1]
    kids = t.tchild[t.tkeys != -1].astype(np.int64)
    order = np.argsort(kids)  # build_trie numbers every child after its parent
    for k, c in zip(keys[order].tolist(), kids[order].tolist(), strict=True):
        spelled[c] = spelled[k >> 32] + chr(k & 0xFFFFFFFF)
    entries = {"\x01" + w for w in vocab} | {
        "\x02" + w[len(prefix) :] for w in vocab if w.startswith(prefix) and len(w) > len(prefix)
    }
    extended = set()  # every proper prefix of an entry
    for e in entries:
        extended.update(e[:k] for k in range(1, len(e)))
    walk = t.walk[t.walk != -1]
    child = (walk >> 41) & wordpiece.WALK_NODE
    deeper = (walk & wordpiece.WALK_DEEPER) != 0
    assert deeper.any() and not deeper.all()
    for c, d in zip(child.tolist(), deeper.tolist(), strict=True):
        assert d == (spelled[c] in extended), spelled[c]


def test_root_steps_are_the_walk_slots_of_the_roots_edges(engine):
    """``roots``: for every character below SINGLE_MAX and each root, the walk slot of
    that edge, or -1 exactly where no entry (first piece / "##" piece) starts with it."""
    t, vocab = engine.tables, engine.tokenizer.hf.get_vocab()
    firsts = {w[0] for w in vocab}
    conts = {w[2] for w in vocab if w.startswith("##") and len(w) > 2}
    for r, (root, starts) in enumerate(((t.root_first, firsts), (t.root_cont, conts))):
        got = t.roots[r * wordpiece.SINGLE_MAX : (r + 1) * wordpiece.SINGLE_MAX]
        have = got != -1
        assert [chr(x) in starts for x in range(wordpiece.SINGLE_MAX)] == have.tolist()
        assert ((got[have] & wordpiece.WALK_NODE) == root).all()
        cps = (got[have] >> wordpiece.WALK_NODE_BITS) & ((1 << 21) - 1)
        assert cps.tolist() == np.flatnonzero(have).tolist()
        assert set(got[have].tolist()) <= set(t.walk.tolist())


def test_one_character_words_take_their_vocabulary_entry_or_unk(engine):
    """``single``: for every character below SINGLE_MAX, the reference's answer for a word
    of that one character -- its vocabulary entry, else [UNK]."""
    t, vocab = engine.tables, engine.tokenizer.hf.get_vocab()
    want = [vocab.get(chr(x), t.unk) if not 0xD800 <= x < 0xE000 else t.single[x]
            for x in range(wordpiece.SINGLE_MAX)]  # fmt: skip
    assert t.single.tolist() == want
    assert t.single[ord("a")] == vocab["a"] and t.single[ord(",")] == vocab[","]


_CACHE: dict = {}


def _ENGINE() -> WordPieceEngine:  # one engine for the hypothesis tests
    if "e" not in _CACHE:
        _CACHE["e"] = WordPieceEngine(toktier.load("bert-uncased"))
    return _CACHE["e"]


def _ENGINES() -> list[WordPieceEngine]:
    """The shared engine, one with a two-row word cache and one with none."""
    if "all" not in _CACHE:
        tok = _ENGINE().tokenizer
        _CACHE["all"] = [_ENGINE(), WordPieceEngine(tok, word_cache_rows=2),
                         WordPieceEngine(tok, word_cache_rows=0)]  # fmt: skip
    return _CACHE["all"]
