"""The bit-parallel ASCII pre-tokenizer (``engine.ascii_pretok``) against the family matcher
(``rules.pretokenize_segment``), the reference's own pre-tokenizer and, through the engine,
the reference's IDs; for deepseek-v4 also its scalar matcher over bytes (short ranges)."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from toktier.engine import ascii_pretok, cpu, rules
from toktier.registry import load

from .enumeration import next_string, same_ends

# ``BpeTables.ascii_pre`` of each tokenizer it reaches: digits | variant << 2
LINEAGE = {
    "llama3": 3, "cl100k": 3, "qwen3": 1, "qwen3.6": 1,
    "gpt-oss": 3 | ascii_pretok.O200K << 2, "tekken": 1 | ascii_pretok.TEKKEN << 2,
    "deepseek-v4": 3 | ascii_pretok.DEEPSEEK << 2,
}  # fmt: skip
pretokenize_segment = cpu.RULES.pretokenize_segment

# Pieces of ASCII text the patterns tell apart: contraction letters in both cases, capitals
# after small letters (o200k), digits, every kind of whitespace, CR/LF in both orders, lone and
# repeated punctuation, '/' (absorbed after CR/LF by o200k).
ALPHABET = [
    *"abzsStTmMdDrRvVlLeExQ", "Ab", "aB", "HTTP", "x'S", "0", "7", "1234",
    " ", "  ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x00", "\x01", "\x7f",
    "'", "''", "(", ")", ".", ",", "-", "_", "/", '"', "'s", "'RE", "'ll", "$", "<|", "~",
]  # fmt: skip
# Cases that cross a 64-bit word of masks, or that the scalar fix-ups handle.
LONG = [
    " " * 70 + "x",
    "x" + " " * 63 + ".",
    "\n" + " " * 100 + "\n" + "   x",
    "\n" + " " * 100 + "\n",
    "." * 64 + "\n" * 70 + "  y",
    "1" * 200 + "a",
    "a" * 63 + "'s" + "b" * 10,
    "(" * 62 + "'ll" + "x",
    "a" * 62 + "'lL'sx'Re",
    "x" * 63 + "A" + "b" * 64 + "CD" + "e",
    "." + "\n/" * 40 + "(x" + "/" * 70 + "\r\n/" + "x",
    "./" * 33 + "\n" + "/" * 64 + " /\n",
    "\r\n" * 40 + "\t" * 30 + "(",
    "x" + "\t " * 40 + "\n" + " " * 30 + "\n" + " " * 40 + "z",
    "\x00" * 63 + "\x01a" + "\x7f" * 70 + " ",  # controls (deepseek: unmatched, or leading)
    "x" + " " * 62 + "1" + " " * 64 + "9",  # blanks before a digit end their stretch
    ".." + " " * 61 + ".a" + "$" * 64 + "\r\n" * 3 + "b",
]
_engines: dict = {}


def _engine(name):
    if name not in _engines:
        _engines[name] = cpu.engine_for(load(name))
    return _engines[name]


@numba.njit(cache=False)
def _both(u8, lo, hi, fold, digits, bits, family):
    """(bit-parallel ends, matcher ends) of ``u8[lo:hi]``, the buffers as small as allowed."""
    scratch = np.full(ascii_pretok.scratch_words(hi - lo), -1, dtype=np.int64)
    a = np.full(hi - lo + 1, -7, dtype=np.int64)
    ma = ascii_pretok.pretokenize_ascii(u8, lo, hi, fold, digits, scratch, a, 0)
    cps = u8.astype(np.uint32)
    fl = np.empty(u8.size, dtype=np.uint16)
    for i in range(u8.size):
        fl[i] = bits[u8[i]]
    b = np.empty(hi - lo + 1, dtype=np.int64)
    mb = pretokenize_segment(cps, fl, fold, lo, hi, family, b, 0)
    return a[:ma].copy(), b[:mb].copy()


def _split(name, text, lo=0, hi=None, pad=b""):
    """Both ends of ``text[lo:hi]`` with ``pad`` around it (bytes the range must not see)."""
    eng = _engine(name)
    t = eng.tables
    raw = pad + text.encode("ascii") + pad
    u8 = np.frombuffer(raw, dtype=np.uint8).copy()
    hi = len(text) if hi is None else hi
    got, want = _both(u8, lo + len(pad), hi + len(pad), t.fold, LINEAGE[name], t.bits,
                      t.family_code)  # fmt: skip
    return (got - len(pad)).tolist(), (want - len(pad)).tolist()


@pytest.mark.parametrize("name", sorted(LINEAGE))
def test_every_byte_level_tokenizer_gets_it_and_reads_ascii_as_bytes(name):
    eng = _engine(name)
    assert eng.bpe.ascii_pre == LINEAGE[name]
    assert eng._ascii_direct


def test_ascii_bytes_follow_the_tables():
    """deepseek-v4 has no automaton: an all-ASCII text is read as bytes only while its ASCII
    pre-tokenizer is on (the tables and the flag are set together), and gives the reference
    IDs either way."""
    eng = _engine("deepseek-v4")
    tok = load("deepseek-v4")
    text = "x = f(a, b)  # 12345 tokens\n\tif y:\n        return '$z'\n" * 9
    on = eng.bpe
    try:
        eng.bpe = on._replace(ascii_pre=0)
        assert not eng._ascii_direct
        got_off = eng.encode_ids(text, threads=1).tolist()
    finally:
        eng.bpe = on
    assert eng._ascii_direct
    want = tok.hf.encode(text, add_special_tokens=False).ids
    assert eng.encode_ids(text, threads=1).tolist() == got_off == want


@pytest.mark.parametrize("name", ["llama3", "gpt-oss", "deepseek-v4"])
def test_other_ascii_classes_turn_it_off(name):
    """A tokenizer whose classes of some ASCII byte differ keeps the automaton (for o200k,
    a letter's case as well; for deepseek, punctuation and marks too)."""
    t = _engine(name).tables
    assert ascii_pretok.ascii_mode(t.family_code, t.bits) == LINEAGE[name]
    changes = [(0x1C, rules.B_WS), (ord("_"), rules.B_L), (ord("a"), 0), (ord("5"), 0)]
    if name == "deepseek-v4":
        changes += [(ord("$"), 0), (0x01, rules.B_P), (ord("a"), rules.B_L | rules.B_M)]
    if name == "gpt-oss":
        changes += [(ord("a"), rules.B_L | rules.B_LU), (ord("Q"), rules.B_L | rules.B_LL),
                    (ord("z"), rules.B_L | rules.B_LL | rules.B_LO)]  # fmt: skip
    for cp, bit in changes:
        bits = t.bits.copy()
        bits[cp] = bit
        assert ascii_pretok.ascii_mode(t.family_code, bits) == 0, hex(cp)


@pytest.mark.parametrize("name", sorted(LINEAGE))
def test_long_and_fixed_up_cases_split_as_the_matcher_and_the_reference(name):
    pre = load(name).hf.pre_tokenizer
    for text in LONG:
        for pad in (b"", b"'s \n1"):
            got, want = _split(name, text, pad=pad)
            assert got == want, repr(text)
        assert got == [e for _, (_, e) in pre.pre_tokenize_str(text)], repr(text)


@pytest.mark.parametrize("name", sorted(LINEAGE))
@given(parts=st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=120), data=st.data())
@example(parts=["\n", " ", "\n", " ", "x"], data=None)
@example(parts=["x", "'", "s", "s"], data=None)
def test_random_strings_split_as_the_matcher(name, parts, data):
    text = "".join(parts)
    got, want = _split(name, text)
    assert got == want
    if data is not None:  # a segment inside the text (as literals cut it), bytes around it
        lo = data.draw(st.integers(0, len(text)))
        hi = data.draw(st.integers(lo, len(text)))
        pad = data.draw(st.text(st.sampled_from("a '\n.1"), max_size=70)).encode()
        got, want = _split(name, text, lo, hi, pad)
        assert got == want


@pytest.mark.parametrize("name", sorted(LINEAGE))
@given(text=st.text(st.characters(max_codepoint=127), min_size=1, max_size=200))
def test_any_ascii_splits_as_the_reference(name, text):
    got, _ = _split(name, text)
    pieces = load(name).hf.pre_tokenizer.pre_tokenize_str(text)
    assert got == [e for _, (_, e) in pieces]


@numba.njit(cache=False)
def _first_mismatch(reps, length, at, fold, digits, bits, family):
    """Every string of ``length`` characters over ``reps``, placed at byte ``at`` of a
    128-byte buffer of letters: the first whose ends differ from the matcher's, else []."""
    k = reps.size
    idx = np.zeros(length, dtype=np.int64)
    u8 = np.full(128, 120, dtype=np.uint8)
    while True:
        for j in range(length):
            u8[at + j] = reps[idx[j]]
        a, b = _both(u8, at, at + length, fold, digits, bits, family)
        if not same_ends(a, a.size, b, b.size):
            return idx.copy()
        if not next_string(idx, k):
            return np.zeros(0, dtype=np.int64)


REPRESENTATIVES = "asSleRx1 \t\n\r'("  # 15: contraction letters, digit, blanks, CR/LF, P
# o200k's: a capital, '/' (and no second contraction letter of the same case to make room)
REPRESENTATIVES_O200K = "asSlLx1 \t\n\r'(/A"
# deepseek's: a letter, digit, space, tab, CR, LF, two punctuation, a control and a symbol
REPRESENTATIVES_DEEPSEEK = "ax1 \t\n\r.(\x00$\x7fZ5\x0b"


@pytest.mark.parametrize("name", ["llama3", "qwen3", "gpt-oss", "tekken", "deepseek-v4"])
def test_every_short_string_splits_as_the_matcher(name):
    """Exhaustive up to 5 characters over 15 representatives (813,615 strings), across a
    word boundary of the masks."""
    t = _engine(name).tables
    variant = LINEAGE[name] >> 2
    chars = {ascii_pretok.CL100K: REPRESENTATIVES,
             ascii_pretok.DEEPSEEK: REPRESENTATIVES_DEEPSEEK}.get(variant, REPRESENTATIVES_O200K)
    reps = np.frombuffer(chars.encode(), dtype=np.uint8).copy()
    for length in range(1, 6):
        bad = _first_mismatch(reps, length, 61, t.fold, LINEAGE[name], t.bits, t.family_code)
        assert bad.size == 0, repr("".join(chars[d] for d in bad))


@numba.njit(cache=False)
def _scalar_and_matcher(u8, lo, hi, fold, bits, family):
    """(deepseek's scalar byte matcher's ends, the family matcher's) of ``u8[lo:hi]``."""
    a = np.full(hi - lo + 1, -7, dtype=np.int64)
    ma = ascii_pretok.deepseek_ascii_segment(u8, lo, hi, a, 0)
    cps = u8.astype(np.uint32)
    fl = np.empty(u8.size, dtype=np.uint16)
    for i in range(u8.size):
        fl[i] = bits[u8[i]]
    b = np.empty(hi - lo + 1, dtype=np.int64)
    mb = pretokenize_segment(cps, fl, fold, lo, hi, family, b, 0)
    return a[:ma].copy(), b[:mb].copy()


@given(parts=st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=40), data=st.data())
def test_deepseek_short_ranges_split_as_the_matcher(parts, data):
    """The scalar matcher that takes deepseek's short ASCII ranges (and any whose scratch
    would not fit) splits as the family matcher, inside a padded buffer too, and
    ``pretokenize_ascii`` hands it the short ones."""
    t = _engine("deepseek-v4").tables
    text = "".join(parts)
    pad = data.draw(st.text(st.sampled_from("a '\n.1\x00"), max_size=5)).encode()
    u8 = np.frombuffer(pad + text.encode() + pad, dtype=np.uint8).copy()
    lo, hi = len(pad), len(pad) + len(text)
    got, want = _scalar_and_matcher(u8, lo, hi, t.fold, t.bits, t.family_code)
    assert got.tolist() == want.tolist()
    if hi - lo < rules.ASCII_PRETOK_MIN:  # no scratch at all: the scalar one answers
        ends = np.zeros(hi - lo + 1, dtype=np.int64)
        m = ascii_pretok.pretokenize_ascii(u8, lo, hi, t.fold, LINEAGE["deepseek-v4"],
                                           np.zeros(0, dtype=np.int64), ends, 0)  # fmt: skip
        assert ends[:m].tolist() == want.tolist()


@pytest.mark.parametrize("name", ["llama3", "qwen3", "gpt-oss", "tekken", "deepseek-v4"])
def test_the_engine_gives_the_reference_ids_either_way(name):
    """Whole encodes of ASCII text with added-token literals (segments) and every kind of
    piece: the same IDs with the bit-parallel pre-tokenizer and with the automaton, and the
    reference's."""
    eng = _engine(name)
    tok = load(name)
    lit = next(x.content for x in tok.added_tokens if x.content.isascii() and x.special)
    text = ("def fooBar(x):\n    return x's  1234567 \r\n\n  \t(y) # a/b.\n/HTTPServer'll\n" * 40
            + lit) * 3 + " tail\n  "
    on = eng.bpe
    try:
        got_on = eng.encode(text)[0].tolist()
        eng.bpe = on._replace(ascii_pre=0)
        got_off = eng.encode(text)[0].tolist()
    finally:
        eng.bpe = on
    want = tok.hf.encode(text, add_special_tokens=False).ids
    assert got_on == got_off == want


# deepseek over decoded text: class representatives of every kind its stages tell apart --
# ASCII and other letters, marks, digits of three scripts, CJK (letters, a mark, punctuation,
# a symbol, unassigned code points inside the ranges), every kind of blank, CR/LF, NEL, ASCII
# and other punctuation and symbols, controls, format and private-use characters, astral ones.
UNICODE_ALPHABET = [
    *"abzQX", "Ab", "0", "7", "1234", "١٢", "²", " ", "  ", "\t", "\n", "\r", "\r\n", "\x0b",
    "\x85", "\xa0", "\u3000", "\u2028", "\x00", "\x7f", "\u200d", "\ue000", "'", "(", ".", "$",
    "<", "|", "«", "€", "…", "・", "゠", "゛", "゙", "ー", "カ", "あ", "中", "文", "é", "e\u0301",
    "\u0301", "ж", "ß", "Ω", "ا", "한", "😀", "𝔘", "\u3040", "\u3097",
]  # fmt: skip
REPRESENTATIVES_DEEPSEEK_CPS = "aé\u03011 \t\n.«・カ中\x00\xa0X"  # 15


@numba.njit(cache=False)
def _cps_both(cps, fl, lo, hi, fold, family):
    """(bit-parallel ends over decoded text, matcher ends) of ``cps[lo:hi]``."""
    scratch = np.full(ascii_pretok.scratch_words_cps(hi - lo), -1, dtype=np.int64)
    a = np.full(hi - lo + 1, -7, dtype=np.int64)
    ma = ascii_pretok.pretokenize_deepseek_cps(cps, fl, lo, hi, scratch, a, 0)
    b = np.empty(hi - lo + 1, dtype=np.int64)
    mb = pretokenize_segment(cps, fl, fold, lo, hi, family, b, 0)
    return a[:ma].copy(), b[:mb].copy()


def _cps_split(text, lo=0, hi=None):
    t = _engine("deepseek-v4").tables
    cps = np.array([ord(c) for c in text], dtype=np.uint32)
    fl = t.bits[cps].astype(np.uint16)
    got, want = _cps_both(cps, fl, lo, len(text) if hi is None else hi, t.fold, t.family_code)
    return got.tolist(), want.tolist()


@given(parts=st.lists(st.sampled_from(UNICODE_ALPHABET), min_size=1, max_size=120),
       data=st.data())  # fmt: skip
@example(parts=["(", "゠", "(", "Ab"], data=None)  # a CJK change before an ASCII lead
@example(parts=[".", "a", "é", "b"], data=None)  # [AP][A-Za-z]+ stops at a letter not ASCII
def test_deepseek_decoded_text_splits_as_the_matcher_and_the_reference(parts, data):
    text = "".join(parts)
    got, want = _cps_split(text)
    assert got == want
    assert got == [e for _, (_, e) in load("deepseek-v4").hf.pre_tokenizer.pre_tokenize_str(text)]
    if data is not None:  # a segment inside the text (as literals cut it)
        lo = data.draw(st.integers(0, len(text)))
        hi = data.draw(st.integers(lo, len(text)))
        got, want = _cps_split(text, lo, hi)
        assert got == [e for e in want]


@numba.njit(cache=False)
def _first_cps_mismatch(reps, length, at, bits, fold, family):
    """Every string of ``length`` characters over ``reps`` at position ``at`` of 128 letters:
    the first whose ends differ from the matcher's, else []."""
    k = reps.size
    idx = np.zeros(length, dtype=np.int64)
    cps = np.full(128, 120, dtype=np.uint32)
    fl = np.empty(128, dtype=np.uint16)
    while True:
        for j in range(length):
            cps[at + j] = reps[idx[j]]
        for i in range(128):
            fl[i] = bits[cps[i]]
        a, b = _cps_both(cps, fl, at, at + length, fold, family)
        if not same_ends(a, a.size, b, b.size):
            return idx.copy()
        if not next_string(idx, k):
            return np.zeros(0, dtype=np.int64)


def test_deepseek_every_short_decoded_string_splits_as_the_matcher():
    """Exhaustive up to 5 characters over 15 representatives of every class (letters ASCII
    and not, a mark, a digit, blanks, LF, punctuation ASCII and not, CJK punctuation, a kana,
    a han, a control, NBSP, X), across a word boundary of the masks."""
    t = _engine("deepseek-v4").tables
    reps = np.array([ord(c) for c in REPRESENTATIVES_DEEPSEEK_CPS], dtype=np.uint32)
    for length in range(1, 6):
        bad = _first_cps_mismatch(reps, length, 61, t.bits, t.fold, t.family_code)
        assert bad.size == 0, repr("".join(REPRESENTATIVES_DEEPSEEK_CPS[d] for d in bad))


def test_deepseek_engine_gives_the_reference_ids_on_any_text_either_way():
    """Whole encodes of text that is not all ASCII (code, prose in other scripts, CJK, literals,
    long runs across words): the same IDs with the bit-parallel pre-tokenizer over decoded text
    and with the matcher, and the reference's."""
    eng = _engine("deepseek-v4")
    tok = load("deepseek-v4")
    lit = next(x.content for x in tok.added_tokens if x.special)
    text = ("def f(x):  # 12345 ⇒ «ok»\n\tréponse = 'カタカナ・テスト'中文字符 ok\r\n" * 30
            + lit + "ж" * 70 + " " * 70 + "١٢٣٤" + "\u3000" * 3) * 3  # fmt: skip
    on = eng.bpe
    try:
        got_on = eng.encode(text)[0].tolist()
        eng.bpe = on._replace(ascii_pre=0)
        got_off = eng.encode(text)[0].tolist()
    finally:
        eng.bpe = on
    assert got_on == got_off == tok.hf.encode(text, add_special_tokens=False).ids
