"""Bulk one-thread throughput of two engine versions in one process, arms alternated: 2M
characters of the stdlib corpus (experiment 06's bulk text), ``encode_ids(threads=1)``, four
calls each (the first fresh); MB/s of the best.  B is another revision's package copied as
``toktier_b`` (``inproc_ab.py``'s recipe).  Usage:
``.venv/bin/python tools/engine-experiments/bulk_ab.py NAME``; record:
``results/runs/engine-ab/ascii-literals-offsets.txt``.
"""

import os
import sys
import time

os.environ.setdefault("TOKTIER_HOME", "data/build")  # toktier_b has no checkout of its own
sys.path.insert(0, "/tmp/abpkg")

import toktier_b.engine.cpu as B

from toktier.campaigns import corpus
from toktier.engine import cpu as A
from toktier.registry import load


def main(name: str) -> None:
    text = "".join(corpus.stdlib_documents())[:2_000_000]
    mb = len(text.encode()) / 1e6
    tok = load(name)
    engines = {"A": A.new_engine(tok), "B": B.new_engine(tok)}
    for eng in engines.values():
        eng.warmup()
    ms = {"A": [], "B": []}
    for r in range(4):
        for arm in ("A", "B") if r % 2 == 0 else ("B", "A"):
            t0 = time.perf_counter()
            engines[arm].encode_ids(text, threads=1)
            ms[arm].append((time.perf_counter() - t0) * 1e3)
    print(name, {k: [round(x, 1) for x in v] for k, v in ms.items()})
    print(name, "MB/s best: A", round(mb / (min(ms["A"]) / 1e3), 1),
          "B", round(mb / (min(ms["B"]) / 1e3), 1))


if __name__ == "__main__":
    main(sys.argv[1])
