"""The whole kernel chain against the reference, for all six byte-level tokenizers.

Device UTF-8 decode, literal walk, boundary predicate and segment scan,
thread-per-segment pre-tokenization, BPE by piece length (thread / warp / block),
output compaction and spans must reproduce the reference's IDs and character
offsets and, at split level, ``pre_tokenizer.pre_tokenize_str``'s piece ends.
The inputs force the warp and block BPE paths (the run reports how many pieces
took each); every document of a batch must equal its own reference; the
single-request deliveries agree with each other and make the promised host
synchronizations; the device's cut positions equal the CPU engine's certified
cuts.
"""

from __future__ import annotations

import numpy as np
import pytest

from .checks import NAMES, check_ids, check_split, representatives, stdlib_text

BASE = [
    "Hello, world! It's 2026 -- 12345 spaces   \n\n\tx\r\n don't 'LL x'\u017f IT'S we'VE",
    "    def f(x):\n        return x**2  # ok\r\n\r\n\n",
    "\u4e2d\u6587\u30c6\u30ad\u30b9\u30c8\u30fb\u3072 123 abc 1234567 \u0661\u0662\u0663\u0664",
    "\U0001f600\U0001f601 na\u00efve \u0391\u0392\u0393 \u03b1\u03b2 CamelCaseWord x\t 1 \u00a0 x",
    "",
]
# pieces past 32 bytes (warp path) and past 128 bytes (block path), multi-byte included
LONG = [
    "Pneumonoultramicroscopicsilicovolcanoconiosis and " + "x" * 40 + " " + "!" * 37,
    " " * 44 + "y\n" + "\U0001f600" * 11 + " " + "=" * 60 + "\n",
    "\u4e2d\u6587" * 24 + " " + "\u0434\u043e\u043c" * 20 + ".",  # 144 bytes: block
]


def documents(tok) -> tuple[list[str], str]:
    lits = [t.content for t in tok.added_tokens[:3] if t.content]
    norm = [t.content for t in tok.added_tokens if t.content and t.normalized][:2]  # pass 2
    literal_doc = " ".join(lits) + "x" + lits[0] + lits[1][:-1] + "\n" + lits[0] + lits[0]
    literal_doc += " " + "".join(norm) + "y" + "".join(norm[:1])
    docs = [*BASE[:4], stdlib_text(900), BASE[4], "".join(representatives(tok)[:160])]
    return [*docs, literal_doc, *LONG], literal_doc


@pytest.mark.parametrize("name", NAMES)
def test_chain_matches_the_reference(name, engine):
    eng = engine(name)
    tok = eng.tokenizer
    docs, literal_doc = documents(tok)
    assert len(docs) == 11
    # batch path: one pipeline run, every document exact on its own
    out = eng.encode_batch(docs)
    info = eng.stats()["last_request"]
    assert info["host_syncs"] == 2 and info["docs"] == len(docs), info
    assert info["warp_pieces"] >= 4 and info["block_pieces"] >= 1, info
    assert info["literals"] >= 4, info
    for doc, (ids, s, e) in zip(docs, out, strict=True):
        check_ids(tok, doc, ids, s, e, "batch")
    # split level: the pre-tokenizer's own piece ends, every document
    for doc, (s, e) in zip(docs, eng.split_batch(docs), strict=True):
        check_split(tok, doc, s, e)
    # single-request deliveries on one text with literals and long pieces
    text = literal_doc + BASE[0] + " " + "!" * 37 + "\u4e2d\u6587\U0001f600"  # one warp piece
    ids, s, e = eng.encode(text)
    check_ids(tok, text, ids, s, e, "encode")
    assert eng.stats()["last_request"]["host_syncs"] == 2
    packed = eng.export_spans(text)
    assert packed.shape == (3, len(ids)) and packed.dtype == np.int64
    assert (packed[0] == ids).all() and (packed[1] == s).all() and (packed[2] == e).all()
    assert eng.stats()["last_request"]["host_syncs"] == 2  # count + one packed copy
    assert eng.encode_list(text) == ids.tolist()
    a_ids, _a_s, a_e = eng.encode_arrays(text)
    assert eng.stats()["last_request"]["host_syncs"] == 1
    assert np.asarray(a_ids).tolist() == ids.tolist() and np.asarray(a_e).tolist() == e.tolist()
    # the device predicate (rules.cut_ok over lmark) == the CPU's _cut_ok, everywhere
    cuts = eng.certified_cuts(text)
    assert len(cuts) and cuts.tolist() == eng._cpu.certified_cuts(text).tolist()


@pytest.mark.parametrize("name", ["llama3", "gpt-oss"])
def test_short_map_on_the_device_matches_the_reference_and_is_read(name, engine):
    """The short-piece map on the device (the default for byte-level BPE): pieces that are
    whole tokens come from the CPU engine's map instead of the merges -- the same IDs and
    spans as the reference, with the map and without it (``short_map=False``, every piece
    merged); and the map is really read: an engine whose map gives one short piece a wrong
    token emits it."""
    from toktier.engine import gpu
    from toktier.engine.cpu import CpuEngine

    base = engine(name)
    tok = base.tokenizer
    off = gpu.GpuEngine(tok, short_map=False, cpu=base._cpu)
    assert base.short_map and base.stats()["short_map"] and not off.stats()["short_map"]
    docs, _ = documents(tok)
    for eng, label in ((base, "short map"), (off, "no short map")):
        for doc, (ids, s, e) in zip(docs, eng.encode_batch(docs), strict=True):
            check_ids(tok, doc, ids, s, e, label)
    text = " hello world"
    ids, s, e = base.encode(text)
    check_ids(tok, text, ids, s, e, "short map single")
    # corrupt the entry of " hello" (a whole token of both vocabularies) in a copy of the map
    smap = base._cpu.bpe.smap.copy()
    want = tok.hf.encode(" hello", add_special_tokens=False).ids
    assert len(want) == 1
    rows = np.flatnonzero(smap[:, 3] == want[0])
    assert rows.size == 1
    smap[rows[0], 3] = want[0] + 1
    cpu = CpuEngine(tok)
    cpu.bpe = cpu.bpe._replace(smap=smap)
    bad = gpu.GpuEngine(tok, short_map=True, cpu=cpu)
    got = bad.encode(text)[0].tolist()
    assert got[0] == want[0] + 1 and got != tok.hf.encode(text, add_special_tokens=False).ids
