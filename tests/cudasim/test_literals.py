"""The parallel literal match and the serial walk over its matches, at their edges.

``k_lit_match`` finds each candidate's longest literal up to the document's end;
``k_lit_walk`` then needs, in a gap of the raw pass, the longest normalized literal
that ends inside the gap -- shorter than the unconstrained one when a raw literal
starts inside it.  No registry tokenizer has such a pair of added tokens, so this
file makes one: llama3 plus normalized "abcd" and "ab" and raw "cde".
"""

from __future__ import annotations

import pytest
from tokenizers import AddedToken

from .checks import check_ids


@pytest.fixture(scope="module")
def overlapping(tmp_path_factory):
    import toktier
    from toktier.engine import gpu

    base = toktier.load("llama3")
    hf = base.hf.__class__.from_str(base.hf.to_str())
    hf.add_tokens([AddedToken("abcd", normalized=True), AddedToken("ab", normalized=True),
                   AddedToken("cde", normalized=False)])  # fmt: skip
    path = tmp_path_factory.mktemp("overlap") / "tokenizer.json"
    hf.save(str(path))
    return gpu.GpuEngine(toktier.load(path))


def test_normalized_literal_cut_short_by_a_raw_one(overlapping):
    tok = overlapping.tokenizer
    # "abcde": raw "cde" at 2 first; in the gap [0, 2) "abcd" overruns, "ab" fits
    docs = ["abcde", "xabcde abcd ab cde abcdcde", "abcdabcde", "ab", "cde abcd"]
    for d, (ids, s, e) in zip(docs, overlapping.encode_batch(docs), strict=True):
        check_ids(tok, d, ids, s, e, "overlap batch")
    ids, s, e = overlapping.encode("abcde")
    check_ids(tok, "abcde", ids, s, e, "overlap single")
    assert overlapping.stats()["last_request"]["literals"] == 2
