"""SentencePiece BPE on the GPU engine (the CUDA simulator): IDs and spans equal the reference.

The same rules as the CPU's SentencePiece engine (``rules.sp_segment``) run as one
thread per segment: segments start at certified cuts (no "▁" of their own), at the
document start and after every literal (the prepended "▁"), and a literal is its own
segment.  Batches cut documents apart, so every document gets its own "▁".
"""

from __future__ import annotations

import numpy as np
import pytest

import toktier
from toktier.engine.tables import EngineUnsupported

NAMES = ["mistral-sp-v1", "mistral-sp-v3"]
TEXTS = [
    "Hello, world! It's 2026 -- 12345 spaces   \n\n\tx\r\n don't",
    " hello  there ▁x ▁▁ y",
    "\n  def f(x):\n        return x**2  # ok\r\n",
    "[INST] hi [/INST] ok</s>[INST]\n[INST] 😀 done",
    "中文テキスト Привет мир 😀👍🏽 \ue000\x01 naïve",
    " " * 40 + "long" + "x" * 60 + " " + "=" * 30,
    "",
    "▁",
    "[INST]",
]


def _reference(tok, text):
    enc = tok.hf.encode(text, add_special_tokens=False)
    off = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
    return enc.ids, off[:, 0].tolist(), off[:, 1].tolist()


@pytest.mark.parametrize("name", NAMES)
def test_single_requests_equal_the_reference(engine, name):
    eng = engine(name)
    tok = eng.tokenizer
    for text in TEXTS:
        ids, s, e = eng.encode(text)
        assert (ids.tolist(), s.tolist(), e.tolist()) == _reference(tok, text), text
        assert eng.stats()["last_request"]["delegated"] == 0  # the device chain, not the CPU


@pytest.mark.parametrize("name", NAMES)
def test_batches_give_every_document_its_own_prepended_space(engine, name):
    eng = engine(name)
    tok = eng.tokenizer
    out = eng.encode_batch(TEXTS)
    for text, (ids, s, e) in zip(TEXTS, out, strict=True):
        assert (ids.tolist(), s.tolist(), e.tolist()) == _reference(tok, text), text


def test_cuts_equal_the_cpu_engine_and_no_split_level(engine):
    eng = engine("mistral-sp-v3")
    text = TEXTS[0] + TEXTS[3] + TEXTS[4]
    gpu_cuts = eng.certified_cuts(text)
    cpu_cuts = eng._cpu.certified_cuts(text)
    assert gpu_cuts.tolist() == cpu_cuts.tolist()
    with pytest.raises(EngineUnsupported, match="no split level"):
        eng.split(text)


def test_engine_is_built_from_the_sentencepiece_cpu_engine(engine):
    eng = engine("mistral-sp-v1")
    assert eng.sp_tables is not None and eng.tokenizer.family == "sentencepiece"
    assert type(eng._cpu).__name__ == "SentencePieceEngine"
    assert toktier.load("mistral-sp-v1").family == "sentencepiece"
