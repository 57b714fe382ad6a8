"""Which freed blocks a new Gigatoken object's first encode sorts (not a change).

48K code slices, a new object per call; the text copied before the object is built (as the
grids did before the allocator was settled) or after it (the copy's own allocation then sorts
up to 10,000 freed blocks first), settled or not; P50 ms and the settle requests taken.
Usage: ``.venv/bin/python tools/engine-experiments/gigatoken_construction.py``; record:
``results/runs/engine-ab/after-reference.txt``.
"""

import time

import gigatoken
import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str, settle_allocator
from toktier.registry import load

ARMS = ("copy before building, not settled", "copy before building, settled",
        "copy after building, not settled")  # fmt: skip


def main() -> None:
    code = corpora()["code"]
    for name in ("llama3", "gpt-oss"):
        path = load(name).checked_path()
        for arm in ARMS:
            ms, took = [], []
            for s in slices(code, 48_000, 5) * 2:
                if arm.startswith("copy before"):
                    text = fresh_str(s)
                    g = gigatoken.Tokenizer(path)
                else:
                    g = gigatoken.Tokenizer(path)
                    text = fresh_str(s)
                if arm.endswith(", settled"):
                    took.append(settle_allocator())
                t0 = time.perf_counter()
                g.encode(text)
                ms.append((time.perf_counter() - t0) * 1e3)
            print(f"{name} code 48K, new Gigatoken object, {arm:36s} P50 {np.median(ms):6.2f} ms"
                  f"  settle requests {took}")  # fmt: skip


if __name__ == "__main__":
    main()
