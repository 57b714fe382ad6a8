"""toktier's one-thread engine against Gigatoken with an empty cache, in one process, alternated.

``bench-engine-targets`` runs five methods per sample (HF's 1M encode among them), so each
method meets caches the others filled; here only the two run, on ``bench-engine-targets``'
slices: per slice a new Gigatoken object (construction not timed) and toktier's engine
(one object, its piece caches holding the earlier slices) first on the fresh slice, then on
the same slice again (every piece cached); each call on its own copy of the slice
(``bench.timing.fresh_str``: no UTF-8 cached in it).  Outputs checked equal.

Usage: ``.venv/bin/python tools/engine-experiments/gigatoken_inproc.py [NAME] [KIND] [CHARS]``.
"""

import sys
import time
from functools import partial

import gigatoken
import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str
from toktier.engine.cpu import CpuEngine
from toktier.registry import load


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1e3, out


def main(name: str, kind: str, chars: int, samples: int = 10) -> None:
    tok = load(name)
    eng = CpuEngine(tok)
    eng.warmup()
    text = corpora()[kind]
    eng.encode_ids(text[-30_000:], threads=1)
    path = tok.checked_path()
    res = {"Gigatoken, empty cache": [], "toktier, fresh slice": [], "toktier, again": []}
    for i, s in enumerate(slices(text, chars, samples)):
        giga = gigatoken.Tokenizer(path)
        for who in ("giga", "toktier") if i % 2 else ("toktier", "giga"):
            if who == "giga":
                ms, a = timed(partial(giga.encode, fresh_str(s)))
                res["Gigatoken, empty cache"].append(ms)
            else:
                ms, b = timed(partial(eng.encode_ids, fresh_str(s), threads=1))
                res["toktier, fresh slice"].append(ms)
                again = timed(partial(eng.encode_ids, fresh_str(s), threads=1))[0]
                res["toktier, again"].append(again)
        if not np.array_equal(np.asarray(a), np.asarray(b)):
            raise SystemExit(f"slice {i}: the two outputs differ")
    for k, v in res.items():
        print(f"{name} {kind} {chars:,} {k:24s} P50 {np.median(v):7.2f} ms  "
              f"({min(v):.2f}-{max(v):.2f})")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "llama3",
         sys.argv[2] if len(sys.argv) > 2 else "code",
         int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000)  # fmt: skip
