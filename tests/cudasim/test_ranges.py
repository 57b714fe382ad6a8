"""The rules as device functions, one simulated GPU thread per certified range.

``gpu.ranges`` runs the CPU engine's whole range encoder (``rules.encode_range``:
pre-tokenization, BPE with its piece caches, spans) as device code on ranges cut
at certified boundaries; IDs, spans and piece ends must equal the reference.
"""

from __future__ import annotations

import numpy as np
import pytest

import toktier
from toktier.engine.cpu import engine_for
from toktier.engine.gpu import ranges

from .checks import NAMES, check_ids, check_split, representatives, stdlib_text

BASE = [
    "Hello, world! It's 2026 -- 12345 spaces   \n\n\tx\r\n don't 'LL x'\u017f",
    "    def f(x):\n        return x**2  # ok\n\n\n",
    "\u4e2d\u6587\u30c6\u30ad\u30b9\u30c8\u30fb\u3072 123 abc",
    "\U0001f600 na\u00efve \u0391\u0392\u0393 \u03b1\u03b2 CamelCaseWord x\t 1",
]


@pytest.mark.parametrize("name", NAMES)
def test_encode_range_as_device_code(name):
    tok = toktier.load(name)
    eng = engine_for(tok)
    lits = [t.content for t in tok.added_tokens[:3]]
    texts = [*BASE, stdlib_text(1200), "".join(representatives(tok)[:200])]
    texts.append(" ".join(lits) + "x" + lits[0])
    for text in texts:
        ids, s, e = ranges.encode_ranges(eng, text, ranges=3)
        check_ids(tok, text, ids, s, e, "ranges")
        ends = ranges.split(eng, text)
        check_split(tok, text, np.concatenate([[0], ends[:-1]]).astype(np.int64), ends)
    assert len(texts) == 7
