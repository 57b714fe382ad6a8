"""The heap merges of long pieces, this checkout's ``merges_only`` (A) against another
revision's (B, ``/tmp/abpkg/toktier_b``, as ``inproc_ab.py``), in one process: the distinct
pieces over ``rules.SMALL_PIECE`` bytes (the heap loop's) in 1M characters of pycountry's
catalogs, every piece merged once per pass, A and B alternated, best of 7 passes each;
outputs checked equal.
Usage: ``.venv/bin/python tools/engine-experiments/long_merges_ab.py [NAME]``.
"""
import os
import sys
import time

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")
sys.path.insert(0, "/tmp/abpkg")
sys.path.insert(0, os.path.dirname(__file__))

import toktier_b.engine.cpu as B
from fresh_piece_set import first_of_each, over_pieces, piece_bounds

from toktier import load
from toktier.campaigns import corpus
from toktier.engine import cpu as A
from toktier.engine import rules

name = sys.argv[1] if len(sys.argv) > 1 else "gpt-oss"
tok = load(name)
eng_a, eng_b = A.engine_for(tok), B.engine_for(tok)
u8 = np.frombuffer("".join(corpus.pycountry_documents())[:1_000_000].encode(), np.uint8)
bs, be = piece_bounds(eng_a, u8)
keep = first_of_each(u8, bs, be, be - bs > rules.SMALL_PIECE)
st, en = bs[keep], be[keep]
longest = int((en - st).max())
runs = {"A": (over_pieces(A.RULES.merges_only), eng_a.bpe),
        "B": (over_pieces(B.RULES.merges_only), eng_a.bpe)}  # fmt: skip
scratch = [np.empty(longest + 1, np.int64) for _ in range(4)] + [np.empty(3 * longest + 3, np.int64)]
outs, best = {}, {k: [] for k in runs}
for rep in range(8):
    for k in (("A", "B") if rep % 2 == 0 else ("B", "A")):
        run, bt = runs[k]
        out = np.empty(int((en - st).sum()) + 1, np.int64)
        offs = np.empty(st.size + 1, np.int64)
        t0 = time.perf_counter_ns()
        n = run(u8, st, en, bt, *scratch, out, offs)
        if rep:  # the first pass compiles
            best[k].append(time.perf_counter_ns() - t0)
        outs[k] = out[:n].copy()
    assert np.array_equal(outs["A"], outs["B"])
a, b = min(best["A"]) / 1e6, min(best["B"]) / 1e6
print(f"{name}: {st.size} distinct pieces of {rules.SMALL_PIECE + 1}-{longest} bytes "
      f"({int((en - st).sum())} bytes, {outs['A'].size} tokens): A {a:.2f} ms, B {b:.2f} ms, "
      f"B/A {b / a:.3f}")  # fmt: skip
