"""Word-cache sizes for the WordPiece engine on a sequence of fresh slices (bert-uncased).

Engines with 65,536 (the default), 0, 4,096 and 16,384 rows per thread (argv[1], the first
is the base), each kept across the slices as the grid's engine is; per text and size (argv[2])
16 fresh 48K slices or 4 of 1M, the engines alternated per slice (order flipped), one-thread
``encode_ids`` on a fresh str copy; P50 ms and the median paired ratio base / engine.

    .venv/bin/python tools/engine-experiments/wordpiece_cache_rows.py 65536,0,4096,16384 48000,1000000
"""

import os
import sys
import time

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import wordpiece as W
from toktier.registry import load

SAMPLES = {48_000: 16, 1_000_000: 4}


def main(rows: list[int], sizes: list[int]) -> None:
    tok = load("bert-uncased")
    engines = {r: W.WordPieceEngine(tok, word_cache_rows=r) for r in rows}
    texts = corpora()
    for e in engines.values():
        e.warmup()
        e.encode_ids(texts["code"][-30000:], threads=1)

    def once(e, s: str) -> float:
        t0 = time.perf_counter()
        e.encode_ids(s, threads=1)
        return (time.perf_counter() - t0) * 1e3

    for kind in ("code", "multilingual", "code + multilingual"):
        for chars in sizes:
            res = {r: [] for r in rows}
            for i, s in enumerate(slices(texts[kind], chars, SAMPLES.get(chars, 3))):
                for r in rows if i % 2 == 0 else rows[::-1]:
                    res[r].append(once(engines[r], (s + " ")[:-1]))
            base = np.array(res[rows[0]])
            cells = [f"{r:>6} rows {np.median(res[r]):7.3f} ms "
                     f"({np.median(base / np.array(res[r])):.2f}x)" for r in rows]  # fmt: skip
            print(f"{kind:20s} {chars:>9,} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1].split(",")], [int(x) for x in sys.argv[2].split(",")])
