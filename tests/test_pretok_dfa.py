"""The pre-tokenizer automaton (``engine.pretok_dfa``) against the family matcher it replaces
on the CPU (``rules.pretokenize_segment``) and against the reference's own pre-tokenizer."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from toktier.engine import cpu, pretok_dfa, rules
from toktier.registry import load

from .enumeration import next_string, same_ends

DFA_TOKENIZERS = ["llama3", "qwen3", "qwen3.6", "cl100k", "gpt-oss", "tekken"]
dfa_segment = cpu.RULES.dfa_segment
pretokenize_segment = cpu.RULES.pretokenize_segment

# One or more characters of every class the automaton tells apart, and the neighbours
# the regex treats differently: the contraction letters in both cases and folded forms
# (U+017F LONG S matches "s"), marks, non-ASCII digits and blanks, CR/LF, apostrophes.
ALPHABET = [
    *"abzsStTmMdDrRvVlLeExQ",
    "\u017f", "\u212a", "é", "中", "\u0301", "\u0915\u093f",  # ſ, KELVIN, é, CJK, a mark, Devanagari
    "0", "7", "\u0663", "\u00b2",  # digits: ASCII, Arabic-Indic, superscript two (No)
    " ", "  ", "\t", "\u3000", "\u00a0", "\n", "\r", "\r\n", "\x0b",
    "'", "''", "(", ")", ".", ",", "-", "_", "/", "\u20ac", "\U0001f600", '"', "\u2019",
]  # fmt: skip
TRICKY = [
    "", " ", "\n", "x", "'", "''s", "'s", "'S", "'re", "'RE", "'ll", "'lL", "'ve", "'d'm'tx",
    "'rx", "'r", "'l", "'lx", "'\u017f", "a'rx", "x's", "(('s", " 's", "\t'st",
    "  \n  \n   x", "\n    def f(self):\n        return 1\n", "\r\n\r\n  ", "  ", " \t ",
    "  (", "\t(", "x  1", "x \t1", "\n \n", "a\n\n  \n  b", "  \n", " \n ", "foo  ", "1234567",
    "x\u0301y", "\u0301\u0301a", " \u0301", "12a", "a12", "\u3000\u3000x", "é'S", ".\n\n x",
]  # fmt: skip


@numba.njit(cache=False)
def _dfa(cps, fl, fold, family, classes, table, pairs, lo, hi):
    ends = np.full(hi - lo + 1, -7, dtype=np.int64)  # exactly as large as the engine's buffers
    m = dfa_segment(cps, fl, fold, family, classes, table, pairs, lo, hi, ends, 0)
    return ends[:m].copy()


@numba.njit(cache=False)
def _matcher(cps, fl, fold, family, lo, hi):
    ends = np.empty(hi - lo + 1, dtype=np.int64)
    m = pretokenize_segment(cps, fl, fold, lo, hi, family, ends, 0)
    return ends[:m].copy()


_engines: dict = {}


def _engine(name):
    if name not in _engines:
        _engines[name] = cpu.engine_for(load(name))
    return _engines[name]


def _decode(eng, text):
    cps = np.array([ord(c) for c in text], dtype=np.uint32)
    return cps, eng.tables.bits[cps].astype(np.uint16)


NO_PAIRS = np.zeros(1, dtype=np.int16)


def _both(name, text, lo=0, hi=None, pairs=True):
    """(automaton's ends, matcher's ends); ``pairs`` False: one table read a character."""
    eng = _engine(name)
    t, bt = eng.tables, eng.bpe
    cps, fl = _decode(eng, text)
    hi = len(text) if hi is None else hi
    got = _dfa(cps, fl, t.fold, t.family_code, bt.pre_classes, bt.pre_table,
               bt.pre_pairs if pairs else NO_PAIRS, lo, hi)  # fmt: skip
    want = _matcher(cps, fl, t.fold, t.family_code, lo, hi)
    return got.tolist(), want.tolist()


@pytest.mark.parametrize("name", DFA_TOKENIZERS)
def test_the_automaton_is_on_for_the_cl100k_lineage(name):
    bt = _engine(name).bpe
    assert bt.pre_table.size > 1 and bt.pre_classes.size == rules_cp_count()


def test_deepseek_keeps_its_matcher():
    assert _engine("deepseek-v4").bpe.pre_table.size == 1


def rules_cp_count():
    return _engine("llama3").tables.bits.size


@pytest.mark.parametrize("name", DFA_TOKENIZERS)
def test_tricky_strings_split_as_the_matcher_and_the_reference(name):
    pre = load(name).hf.pre_tokenizer
    for text in TRICKY:
        got, want = _both(name, text)
        assert got == want, repr(text)
        assert got == [e for _, (_, e) in pre.pre_tokenize_str(text)] or not text, repr(text)


@pytest.mark.parametrize("name", DFA_TOKENIZERS)
@given(parts=st.lists(st.sampled_from(ALPHABET), max_size=40), data=st.data())
@example(parts=["'", "s", "\n", " ", " ", "x"], data=None)
def test_random_strings_split_as_the_matcher(name, parts, data):
    text = "".join(parts)
    for pairs in (True, False):
        got, want = _both(name, text, pairs=pairs)
        assert got == want
    if data is not None and text:  # a segment inside the text, as literals cut it
        lo = data.draw(st.integers(0, len(text)))
        hi = data.draw(st.integers(lo, len(text)))
        got, want = _both(name, text, lo, hi)
        assert got == want


@pytest.mark.parametrize("name", DFA_TOKENIZERS)
@given(parts=st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=30))
def test_random_strings_split_as_the_reference(name, parts):
    text = "".join(parts)
    got, _ = _both(name, text)
    pieces = load(name).hf.pre_tokenizer.pre_tokenize_str(text)
    assert got == [e for _, (_, e) in pieces]


@numba.njit(cache=False)
def _first_mismatch(reps, rep_fl, classes, table, pairs, fold, family, length):
    """Every string of ``length`` characters over ``reps``: the first whose automaton ends
    differ from the matcher's (its digits, most significant first), else an empty array."""
    k = reps.size
    digits = np.zeros(length, dtype=np.int64)
    cps = np.empty(length, dtype=np.uint32)
    fl = np.empty(length, dtype=np.uint16)
    a = np.empty(length + 1, dtype=np.int64)
    b = np.empty(length + 1, dtype=np.int64)
    while True:
        for j in range(length):
            cps[j] = reps[digits[j]]
            fl[j] = rep_fl[digits[j]]
        ma = dfa_segment(cps, fl, fold, family, classes, table, pairs, 0, length, a, 0)
        mb = pretokenize_segment(cps, fl, fold, 0, length, family, b, 0)
        if not same_ends(a, ma, b, mb):
            return digits.copy()
        if not next_string(digits, k):
            return np.zeros(0, dtype=np.int64)


# One character per automaton class, and the neighbours the matcher might tell apart.
REPRESENTATIVES = "asrleSRLE\u017f\u01c51 \t\n\r'/(\u0301\u02b0\u4e2d"  # 22: also Lt, Lm, "/"


@pytest.mark.parametrize("name", DFA_TOKENIZERS)
def test_every_short_string_over_the_classes_splits_as_the_matcher(name):
    """Exhaustive up to 5 characters over 22 representatives (5.4M strings): every
    transition path of up to five steps from a segment's start."""
    eng = _engine(name)
    reps, rep_fl = _decode(eng, REPRESENTATIVES)
    bt = eng.bpe
    for length in range(1, 6):
        bad = _first_mismatch(reps, rep_fl, bt.pre_classes, bt.pre_table, bt.pre_pairs,
                              eng.tables.fold, eng.tables.family_code, length)  # fmt: skip
        assert bad.size == 0, repr("".join(REPRESENTATIVES[d] for d in bad))
    if bt.pre_pairs.size > 1:  # and one read a character (the single table's every step)
        for length in range(1, 5):
            bad = _first_mismatch(reps, rep_fl, bt.pre_classes, bt.pre_table, NO_PAIRS,
                                  eng.tables.fold, eng.tables.family_code, length)  # fmt: skip
            assert bad.size == 0, repr("".join(REPRESENTATIVES[d] for d in bad))


@pytest.mark.parametrize("name", DFA_TOKENIZERS)
def test_the_pair_table_is_two_single_steps(name):
    """Every state and pair of classes: the pair entry is the single table's two steps (the
    state after both as its pair-row offset, a boundary bit for each), or PSLOW where a step
    has another flag."""
    bt = _engine(name).bpe
    cols, k = pretok_dfa.COLS, 1 << pretok_dfa.PAIR_SHIFT
    table, pairs = bt.pre_table, bt.pre_pairs
    assert pairs.size == table.size // cols * pretok_dfa.PAIR_COLS
    assert int(bt.pre_classes.max()) < k
    for row in range(0, table.size, cols):
        for a in range(k):
            for b in range(k):
                y = int(pairs[row // cols * pretok_dfa.PAIR_COLS + a * k + b])
                x1 = int(table[row + a])
                x2 = int(table[(x1 & ~(cols - 1)) + b])
                if (x1 | x2) & (pretok_dfa.E1 | pretok_dfa.EP | pretok_dfa.DEFER | pretok_dfa.E2):
                    assert y == pretok_dfa.PSLOW
                else:
                    # the state after both, as its pair-table row offset
                    assert y & ~7 == (x2 // cols) * pretok_dfa.PAIR_COLS
                    assert bool(y & pretok_dfa.P0) == bool(x1 & pretok_dfa.E0)
                    assert bool(y & pretok_dfa.P1) == bool(x2 & pretok_dfa.E0)


@pytest.mark.parametrize(("states", "build", "ncls"), [
    (pretok_dfa.states, pretok_dfa.build_table, 11),
    (pretok_dfa.o200k_states, lambda d: pretok_dfa.build_o200k_table(d, d == 3), 18),
])  # fmt: skip
def test_table_rows_cover_every_class_of_every_state(states, build, ncls):
    for dmax in (1, 3):
        table = build(dmax).reshape(-1, pretok_dfa.COLS)
        n = table.shape[0]
        assert n == len(states(dmax))
        nxt = table[:, :ncls] & ~31
        assert (nxt % pretok_dfa.COLS == 0).all() and (nxt // pretok_dfa.COLS < n).all()
        # EP (after the last CR/LF) only where E1 comes with it, and only out of CR/LF runs
        flags = table[:, :ncls] & 31
        assert (((flags & pretok_dfa.EP) == 0) | ((flags & pretok_dfa.E1) != 0)).all()


def test_a_fold_letter_that_is_not_a_letter_turns_the_automaton_off():
    t = _engine("llama3").tables
    bits = t.bits.copy()
    fold = t.fold.copy()
    fold[ord("+")] = ord("s")  # "+" would then be a contraction letter
    assert pretok_dfa.build_classes(bits, fold, marks=False) is None
    assert pretok_dfa.build(rules.F_CL100K, bits, fold)[1].size == 1
    assert pretok_dfa.build(rules.F_CL100K, bits, fold)[2].size == 1
    assert pretok_dfa.build(rules.F_O200K, bits, fold)[1].size == 1
