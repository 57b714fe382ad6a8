"""In-process A/B of two CPU engine versions on fresh slices with the caches flushed first.

As ``inproc_ab.py`` (A this checkout, B ``/tmp/abpkg/toktier_b``), but 600 MB are written
before every timed call, so each one finds the tables and piece-cache rows in memory, not in
any cache; one thread, ``encode_ids``, alternated per slice.
Usage: ``.venv/bin/python tools/engine-experiments/flushed_ab.py NAME KIND SAMPLES CHARS``.
"""

import os
import sys
import time

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")
sys.path.insert(0, "/tmp/abpkg")
from inproc_ab import warm_engines

from toktier.bench.engine_targets import corpora, slices
from toktier.registry import load

name, kind, n, chars = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tok = load(name)
text = corpora()[kind]
eng = warm_engines(tok, text)
big = np.ones(600 << 20, np.uint8)
res = {"A": [], "B": []}
for i, s in enumerate(slices(text, chars, n)):
    for k in ["A", "B"] if i % 2 == 0 else ["B", "A"]:
        big[::64] += 1
        t0 = time.perf_counter()
        eng[k].encode_ids(s, threads=1)
        res[k].append(time.perf_counter() - t0)
a, b = np.array(res["A"]), np.array(res["B"])
print(
    f"{name} {kind} {chars:,} flushed, fresh: A {np.median(a) * 1e3:.3f} B {np.median(b) * 1e3:.3f} ms, A/B {np.median(a / b):.3f} ({(a / b).min():.2f}-{(a / b).max():.2f})"
)
