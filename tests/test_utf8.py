"""The compiled UTF-8 pass (``engine.utf8``) writes exactly ``str.encode``'s bytes, for any
character range, and reports a lone surrogate at its index in the whole text."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toktier.engine.utf8 import BLOCK, encode_range
from toktier.errors import InvalidTextError
from toktier.textcheck import COMPILED_MIN_CHARS, utf8_array

NON_SURROGATE = st.characters(blacklist_categories=("Cs",), max_codepoint=0xFFFF)


def _same(text, lo=0, hi=None):
    got = encode_range(text, lo, hi)
    assert isinstance(got, np.ndarray), got
    assert got.tobytes() == text[lo:hi].encode("utf-8")


def test_every_code_point_below_u10000():
    """Every non-surrogate code point of both storage kinds, each between ASCII stretches
    that end at every offset within a block (the ASCII copy's edges)."""
    latin1 = "".join(map(chr, range(0x100)))  # stored one byte a character
    _same(latin1)
    bmp = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF)
    _same(bmp)
    for k in range(2 * BLOCK + 1):
        for c in ("é", "Ω", "\u4e00", "\uffff", "\x80", "\xff"):
            _same("a" * k + c + "b" * (2 * BLOCK - k))


def test_a_str_stored_four_bytes_a_character_is_left_to_str_encode():
    text = "x" * 100 + "\U0001F600"
    assert encode_range(text) is None
    long = text * (COMPILED_MIN_CHARS // 50)
    assert utf8_array(long).tobytes() == long.encode("utf-8")  # the fallback, same bytes


@given(st.text(NON_SURROGATE, min_size=0, max_size=300), st.data())
def test_any_range_of_any_text(text, data):
    lo = data.draw(st.integers(0, len(text)))
    hi = data.draw(st.integers(lo, len(text)))
    _same(text, lo, hi)


@given(st.lists(st.tuples(st.integers(0, 80), NON_SURROGATE), max_size=12))
def test_mostly_ascii_text(runs):
    """Code-like text: long ASCII stretches with a character here and there."""
    text = "".join("q" * n + c for n, c in runs)
    _same(text)


def test_a_lone_surrogate_is_reported_at_its_index_in_the_whole_text():
    text = "é" * 50 + "\ud83d" + "a" * 50
    assert encode_range(text) == 50
    assert encode_range(text, 40, 60) == 50  # the range's surrogate, at the text's index
    _same(text, 0, 50)  # a range without it encodes
    big = "é" + "a" * COMPILED_MIN_CHARS + "\udc00" + "b" * 10
    with pytest.raises(InvalidTextError, match=f"U\\+DC00 at index {COMPILED_MIN_CHARS + 1}"):
        utf8_array(big)
    with pytest.raises(InvalidTextError, match=f"at index {COMPILED_MIN_CHARS + 1}"):
        utf8_array(big, lo=5, hi=len(big))  # a range: still the whole text's index
    with pytest.raises(InvalidTextError, match=f"at index {COMPILED_MIN_CHARS + 1}"):
        utf8_array(big, lo=COMPILED_MIN_CHARS - 5, hi=len(big))  # a short range: str.encode
    with pytest.raises(ValueError, match="outside"):
        encode_range(text, 5, len(text) + 1)


def test_utf8_array_of_a_long_text_and_its_ranges():
    text = ("def f(x):\n    return x  # é\n" * 3000)[: 2 * COMPILED_MIN_CHARS]
    u8 = utf8_array(text)
    assert not u8.flags.writeable and u8.tobytes() == text.encode("utf-8")
    part = utf8_array(text, lo=7, hi=len(text) - 3)
    assert part.tobytes() == text[7:-3].encode("utf-8")
    with pytest.raises(TypeError):
        utf8_array(b"bytes")
