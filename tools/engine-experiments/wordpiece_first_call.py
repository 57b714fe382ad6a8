"""What a WordPiece engine's first call on a fresh 48K slice pays over a repeat (bert-uncased).

Per slice of ``bench-engine-targets``' corpora (8 of 48K characters, a fresh str copy each):
``encode_ids`` on one thread the first time, again at once, and again after 64 MB were written
(CPU caches flushed, the word cache's rows kept); P50 ms per text.  Then one slice twelve times.

    .venv/bin/python tools/engine-experiments/wordpiece_first_call.py
"""

import os
import time

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import wordpiece as W
from toktier.registry import load


def main() -> None:
    eng = W.WordPieceEngine(load("bert-uncased"))
    eng.warmup()
    texts = corpora()
    big = np.ones(64 << 20, np.uint8)

    def once(s: str) -> float:
        t0 = time.perf_counter()
        eng.encode_ids(s, threads=1)
        return (time.perf_counter() - t0) * 1e3

    for kind in ("code", "multilingual"):
        eng.encode_ids(texts[kind][-40000:], threads=1)
        rows = []
        for s in slices(texts[kind], 48_000, 8):
            s = (s + " ")[:-1]
            first, again = once(s), once(s)
            big += 1  # every cache line of 64 MB written: the slice's and tables' lines gone
            rows.append((first, again, once(s)))
        r = np.median(np.array(rows), axis=0)
        print(f"{kind:13s} first {r[0]:.3f}  again {r[1]:.3f}  "
              f"again after flushing caches {r[2]:.3f} ms")  # fmt: skip
    s = list(slices(texts["code"], 48_000, 8))[3]
    print("one code slice, twelve calls (ms):", [round(once(s), 3) for _ in range(12)])


if __name__ == "__main__":
    main()
