"""The WordPiece engine's compiled calls through ``jit.BoundKernel`` against numba's
dispatcher, same engine, same process: ``encode_ids`` on one thread of 40 slices of
1,100 and 48,000 characters of code + multilingual prose, three alternated rounds, best
P50 of each.  Used for ``results/runs/engine-ab/wordpiece-walk.txt``.
Usage: ``.venv/bin/python tools/engine-experiments/wordpiece_bound.py``.
"""

import time

import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import wordpiece as W
from toktier.registry import load

KERNELS = (W._decode, W._unsafe_positions, W._encode_range)
engine = W.WordPieceEngine(load("bert-uncased"))
engine.warmup()
text = corpora()["code + multilingual"]
for size in (1100, 48000):
    texts = ["".join(list(x)) for x in slices(text, size, 40)]
    for x in texts:
        engine.encode_ids(x, threads=1)
    best: dict[str, list[float]] = {}
    for _ in range(3):
        for label in ("bound", "dispatcher"):
            bound = [W._jit.BoundKernel(f) for f in KERNELS] if label == "bound" else KERNELS
            engine._decode, engine._unsafe_positions, engine._encode_range = bound
            times = []
            for x in texts:
                t0 = time.perf_counter()
                engine.encode_ids(x, threads=1)
                times.append(time.perf_counter() - t0)
            best.setdefault(label, []).append(float(np.median(times)))
    print(f"{size:>6,} characters: " + ", ".join(f"{k} {min(v) * 1e6:.1f} us" for k, v in best.items()))
