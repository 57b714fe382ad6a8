"""16-bit uploads (``GpuEngine(units=True)``): the host writes a non-ASCII request's
characters (all below U+10000) as 16-bit units, the device writes its UTF-8 (stage 0) -- and
the chain after it must give the reference's IDs and spans, as the UTF-8 upload does.

The host pass must equal the text's UTF-16 (which for such a text is its characters) and
count the UTF-8 bytes exactly; a lone surrogate must be refused as the UTF-8 check refuses
it; ASCII requests and texts with a character beyond U+FFFF keep the UTF-8 upload.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numba import cuda

from toktier.engine import gpu

from .checks import check_ids
from .test_chain import BASE, LONG, documents

NON_ASCII = [
    "caf\u00e9 na\u00efve \u00c0 la carte",  # Latin-1 only (one byte a character in the str)
    "\u4e2d\u6587 \u0434\u043e\u043c \u03b1\u03b2\u03b3 x",  # 2- and 3-byte characters
    "a\u007f\u0080b\u07ff\u0800\ud7ff\ue000\ufffd\uffff z",  # UTF-8 length boundaries
    "\U0001f600 smile \U0001f601 and \U00010348 gothic",  # beyond U+FFFF: UTF-8 upload
]


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=60))  # TOKTIER_EXAMPLES
def test_host_units_are_the_characters_and_count_utf8_bytes(text):
    from toktier.engine.gpu import UnitBuffer

    out = UnitBuffer().convert(text)
    if any(ord(c) > 0xFFFF for c in text):
        assert out is None  # stored four bytes a character: the UTF-8 upload serves it
        return
    units, nb = out
    assert units.dtype == np.uint16
    assert units.tobytes() == text.encode("utf-16-le")  # no surrogate pairs: the characters
    assert nb == len(text.encode("utf-8"))


def test_host_units_refuse_a_lone_surrogate_as_the_utf8_check_does():
    from toktier.engine.gpu import UnitBuffer
    from toktier.errors import InvalidTextError

    buf = UnitBuffer()
    for bad, at in (("ab\ud800cd", 2), ("\u00e9x\udfff", 2)):
        with pytest.raises(InvalidTextError, match=f"lone surrogate U\\+{ord(bad[at]):04X} at index {at}"):
            buf.convert(bad)
    assert buf.convert("\U0001f600x\udfff") is None  # four bytes a character: UTF-8 checks it
    units, nb = buf.convert("ok \u00e9")  # still usable afterwards
    assert units.tobytes() == "ok \u00e9".encode("utf-16-le") and nb == 5


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_units_upload_matches_the_reference_and_the_utf8_upload(name, engine):
    from toktier.errors import InvalidTextError

    base = engine(name)
    tok = base.tokenizer
    eng = gpu.GpuEngine(tok, units=True, cpu=base._cpu)
    assert eng.stats()["units"] and not base.stats()["units"]
    _docs, literal_doc = documents(tok)
    texts = [*NON_ASCII, *BASE[:4], *LONG, literal_doc + " \u00e9\U0001f600"]
    for text in texts:
        ids, s, e = eng.encode(text)
        info = eng.stats()["last_request"]
        # non-ASCII below U+10000: the 16-bit upload (stage 0 on the device); else UTF-8
        narrow = not text.isascii() and max(map(ord, text)) <= 0xFFFF
        assert info["units"] == narrow, (text[:40], info)
        check_ids(tok, text, ids, s, e, "units")
        b_ids, b_s, b_e = base.encode(text)
        assert ids.tolist() == b_ids.tolist() and s.tolist() == b_s.tolist()
        assert e.tolist() == b_e.tolist()
    # the other deliveries take the same path
    text = NON_ASCII[1] + " " + BASE[0]
    ref = tok.hf.encode(text, add_special_tokens=False).ids
    assert eng.encode_list(text) == ref
    assert np.asarray(eng.encode_arrays(text)[0]).tolist() == ref
    assert eng.export_spans(text)[0].tolist() == ref
    assert eng.stats()["last_request"]["units"]
    for bad in ("x\u00e9\ud834y", "\U0001f600\ud834"):  # 16-bit and UTF-8 uploads refuse it
        with pytest.raises(InvalidTextError, match="lone surrogate"):
            eng.encode(bad)
    check_ids(tok, NON_ASCII[1], *eng.encode(NON_ASCII[1]), "after a refused request")


@cuda.jit
def k_units_write_broken(meta, units, uoff, u8):
    """Stage 0 gone wrong: every non-ASCII character (two bytes in the test's text) is
    written as "x "."""
    if cuda.grid(1) == 0:
        for k in range(meta[gpu.M_NUNITS]):
            u = int(units[k])
            if u < 0x80:
                u8[uoff[k]] = u
            else:
                u8[uoff[k]] = 0x78
                u8[uoff[k] + 1] = 0x20


def test_units_upload_is_really_what_the_device_decodes(engine):
    """The bytes the chain tokenizes come from stage 0: a stage-0 kernel that writes wrong
    bytes changes the IDs (so the equalities above are not the UTF-8 upload's)."""
    from toktier.engine.gpu import stages

    base = engine("llama3")
    tok = base.tokenizer
    eng = gpu.GpuEngine(tok, units=True, cpu=base._cpu)
    text = "na\u00efve caf\u00e9"
    good = eng.encode(text)[0].tolist()
    orig = stages.k_units_write
    stages.k_units_write = k_units_write_broken
    try:
        bad = eng.encode(text)[0].tolist()
    finally:
        stages.k_units_write = orig
    assert good == tok.hf.encode(text, add_special_tokens=False).ids
    assert bad == tok.hf.encode("nax ve cafx ", add_special_tokens=False).ids != good


def test_units_upload_serves_sentencepiece_too(engine):
    """Stage 0 sits before the chain SentencePiece shares (decode, literals, cuts)."""

    base = engine("mistral-sp-v3")
    tok = base.tokenizer
    eng = gpu.GpuEngine(tok, units=True, cpu=base._cpu)
    for text in (*NON_ASCII[:3], "[INST] \u4e2d done na\u00efve", "\u2581x \u2581\u2581 y"):
        ids, s, e = eng.encode(text)
        assert eng.stats()["last_request"]["units"]
        enc = tok.hf.encode(text, add_special_tokens=False)
        assert ids.tolist() == enc.ids, text
        assert list(zip(s.tolist(), e.tolist(), strict=True)) == [tuple(o) for o in enc.offsets]
