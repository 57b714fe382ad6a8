"""One thread: a long text in parts of ``SERIAL_PART_BYTES`` against parts only beyond half the
workspace budget (before), on one engine (the same tables and caches; the part size is set
before each call), arms alternated, warm slices of ``bench-engine-targets``' corpora.  Prints
P50 ms per arm and the ratio per cell, and checks both arms' IDs equal.
Needs ``serial_parts.patch`` applied (measured 2026-12-01, not kept). Usage:
``.venv/bin/python tools/engine-experiments/serial_parts_ab.py NAME [CHARS] [SLICES]``.
"""

import sys
import time

import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu
from toktier.registry import load

name = sys.argv[1]
chars = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
n = int(sys.argv[3]) if len(sys.argv) > 3 else 4
eng = cpu.new_engine(load(name))
eng.warmup()
arms = {"parts": cpu.SERIAL_PART_BYTES, "before": eng.workspace_bytes // 2}
for kind, text_all in corpora().items():
    texts = slices(text_all, chars, n)
    for t in texts:
        eng.encode_ids(t, threads=1)  # warm: the slices' pieces are cached
    ts = {a: [] for a in arms}
    for rnd in range(5):
        for i, t in enumerate(texts):
            order = list(arms) if (rnd + i) % 2 == 0 else list(arms)[::-1]
            ids = {}
            for a in order:
                eng.serial_part_bytes = arms[a]
                t0 = time.perf_counter()
                ids[a] = eng.encode_ids(t, threads=1)
                ts[a].append((time.perf_counter() - t0) * 1e3)
            assert np.array_equal(ids["parts"], ids["before"])
    p = {a: float(np.median(v)) for a, v in ts.items()}
    print(f"{name} {kind:20s} {chars:>9,}: parts {p['parts']:8.2f} ms, before {p['before']:8.2f} ms,"
          f" {p['parts'] / p['before']:.3f}x", flush=True)
