"""Piece-cache sizes timed in one process (results/runs/engine-ab/cache-sets.txt).

Engines of the same code with different cache sizes (``cpu.CACHE_SLOTS`` / ``cpu.LONG_SLOTS``
are read when an engine allocates its caches), alternated per sample; each first warm on
an untimed slice, then 5 slices as ``bench-engine-targets`` takes them; ``encode_ids`` on
one thread.  Usage: ``VAR='(("old", 262144, 32768), ("new", 524288, 65536))'
.venv/bin/python tools/engine-experiments/cache_ab.py NAME KIND CHARS``.
"""

import ast
import os
import sys
import time

import numpy as np

from toktier import load
from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu

name, kind, chars = sys.argv[1], sys.argv[2], int(sys.argv[3])
tok = load(name)
engines = {}
for label, short_rows, long_rows in ast.literal_eval(os.environ["VAR"]):
    cpu.CACHE_SLOTS, cpu.LONG_SLOTS = short_rows, long_rows
    engines[label] = cpu.CpuEngine(tok)
    engines[label].warmup()
texts = corpora()[kind]
norm = tok.hf.normalizer
warm = slices(texts[chars // 7 :] + texts, chars, 1)[0]
for e in engines.values():
    e.encode_ids(texts[-20000:], threads=1)
    e.encode_ids(warm, threads=1)
res = {k: [] for k in engines}
for i, text in enumerate(slices(texts, chars, 5)):
    if norm is not None:
        text = norm.normalize_str(text)
    for label in list(engines) if i % 2 else list(engines)[::-1]:
        t = time.perf_counter()
        engines[label].encode_ids(text, threads=1)
        res[label].append((time.perf_counter() - t) * 1e3)
print(name, kind, chars, {k: [round(x, 1) for x in v] for k, v in res.items()},
      {k: round(float(np.median(v)), 1) for k, v in res.items()})  # fmt: skip
