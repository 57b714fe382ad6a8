"""Property: random adversarial batches (class representatives, literals, contraction
letters, long runs) encode and split exactly on the simulated GPU.

A simulated example costs about a second: the example count is
``TOKTIER_GPU_EXAMPLES`` when set, else a tenth of the suite's ``TOKTIER_EXAMPLES``
(at least 2).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .checks import check_ids, check_split, representatives

EXAMPLES = int(
    os.environ.get("TOKTIER_GPU_EXAMPLES")
    or max(2, int(os.environ.get("TOKTIER_EXAMPLES", "40")) // 10)
)


@pytest.mark.parametrize("name", ["llama3", "gpt-oss"])
def test_random_batches_are_exact(name, engine):
    eng = engine(name)
    tok = eng.tokenizer
    atoms = representatives(tok)[::3] + list("'sStTdDlLvVeErRmM\u017f \n\r\t")
    atoms += [t.content for t in tok.added_tokens[:4]]
    atoms += [" " * 9, "1" * 7, "a" * 35, "!" * 12]
    doc = st.lists(st.sampled_from(atoms), max_size=40).map("".join)
    runs = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.lists(doc, min_size=1, max_size=6))
    def prop(docs):
        runs.append(len(docs))
        for d, (ids, s, e) in zip(docs, eng.encode_batch(docs), strict=True):
            check_ids(tok, d, ids, s, e, "property")
        for d, (s, e) in zip(docs, eng.split_batch(docs), strict=True):
            check_split(tok, d, s, e)

    prop()
    assert len(runs) >= min(EXAMPLES, 2)
