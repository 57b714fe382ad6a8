"""One thread's cost of cutting a warm 1M slice into k certified chunks, encoded one after another
(``_encode_bytes`` each): the sum per k, the k's in a rotating order (the first call after a
change of slice pays for the slice before it: a fixed order read 1 chunk ~12% slow).
Usage: ``.venv/bin/python tools/engine-experiments/chunk_overhead.py NAME KIND``.
"""
import sys
import time
from itertools import pairwise

import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu
from toktier.registry import load
from toktier.textcheck import utf8_array

name, kind = sys.argv[1], sys.argv[2]
eng = cpu.new_engine(load(name))
eng.warmup()
texts = slices(corpora()[kind], 1_000_000, 4)
print("ascii:", [t.isascii() for t in texts])
for t in texts:
    eng.encode_ids(t, threads=1)
res = {}
for rnd in range(5):
    for ti, text in enumerate(texts):
        u8 = utf8_array(text)
        ks = (1, 2, 4, 8, 16, 32, 64)
        for q in range(len(ks)):
            k = ks[(q + rnd + ti) % len(ks)]
            b = eng._part_bounds(u8, k) if k > 1 else [0, u8.size]
            jobs = list(pairwise(b))
            t0 = time.perf_counter()
            for a, c in jobs:
                eng._encode_bytes(u8[a:c], False)
            res.setdefault(k, []).append((time.perf_counter() - t0) * 1e3)
for k, v in res.items():
    print(f"chunks {k:3d}: P50 {np.median(v):7.3f} ms  min {min(v):7.3f}")
