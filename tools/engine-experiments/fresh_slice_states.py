"""A fresh 48K slice of bench-engine-targets' corpora through a warm engine (its piece caches
hold a 20K opening and the earlier slices, as in the targets run), one thread, ids only: the
first time, again at once, and again after a 64 MB sweep of the CPU caches; P50 of 25 slices
(not a change).  The gap between "first" and "after a sweep" is the slice's never-seen pieces.
Usage: ``.venv/bin/python tools/engine-experiments/fresh_slice_states.py [NAME] [KIND]``.
"""

import sys
import time

import numpy as np

from toktier import load
from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str, private_engine

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
kind = sys.argv[2] if len(sys.argv) > 2 else "multilingual"
eng = private_engine(load(name))
eng.warmup()
texts = corpora()[kind]
eng.encode_ids(texts[-20000:])
junk = np.ones(64 << 20, np.uint8)
clock = time.perf_counter_ns
first, again, swept = [], [], []
for w in slices(texts, 48_000, 30):
    t0 = clock()
    eng.encode_ids(fresh_str(w), threads=1)
    t1 = clock()
    eng.encode_ids(fresh_str(w), threads=1)
    t2 = clock()
    junk[::64] += 1
    t3 = clock()
    eng.encode_ids(fresh_str(w), threads=1)
    t4 = clock()
    first.append(t1 - t0)
    again.append(t2 - t1)
    swept.append(t4 - t3)


def p50(x):
    return np.median(np.array(x[5:])) / 1e6


print(f"{name} {kind} 48K: first {p50(first):.2f} ms, again {p50(again):.2f}, "
      f"after a 64 MB sweep {p50(swept):.2f}")  # fmt: skip
