"""Is a between-sample step of ``bench-engine-targets`` what holds its two-core ratio down?

The same fresh 1M slices, one thread (engine A) against all cores (engine B), the arms'
order alternated per slice, each call on its own fresh str; new engines per condition, so
every condition sees the same texts fresh.  Conditions (comma-separated, repeatable):
``bare``; ``settle`` (the allocator settled before each clock); ``hf`` (the reference's
encode of the slice after both arms); ``giga`` (a new Gigatoken object encoding it);
``fast`` (fastokens encoding it).  Prints P50s and the paired ratio per condition.
Record: ``results/runs/engine-ab/grid-factors.txt``.  Usage:
``.venv/bin/python tools/engine-experiments/grid_factors.py NAME KIND [CONDS [SLICES]]``.
"""

import sys
import time

import fastokens
import gigatoken
import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str, private_engine, settle_allocator
from toktier.registry import load

NAME, KIND = sys.argv[1], sys.argv[2]
CONDS = sys.argv[3].split(",") if len(sys.argv) > 3 else ["bare", "settle", "hf", "giga", "fast"]
N = int(sys.argv[4]) if len(sys.argv) > 4 else 6
CHARS = 1_000_000


def engines(tok, warm_text):
    """Two new engines (own piece caches), compiled and warmed on a slice no sample uses."""
    a, b = private_engine(tok), private_engine(tok)
    for e in (a, b):
        e.warmup()
        e.encode_ids(fresh_str(warm_text), threads=1)
        e.encode_ids(fresh_str(warm_text))
    return a, b


def between(cond, tok, fk, text):
    """The step a condition adds after both arms of a sample."""
    if cond == "hf":
        tok.hf.encode(text, add_special_tokens=False)
    elif cond == "giga":
        g = gigatoken.Tokenizer(tok.checked_path())
        g.encode(fresh_str(text))
    elif cond == "fast":
        fk.encode(fresh_str(text), add_special_tokens=False)


def main():
    tok = load(NAME)
    fk = fastokens.Tokenizer.from_file(tok.checked_path())
    sl = slices(corpora()[KIND], CHARS, N + 1)
    for cond in CONDS:
        a, b = engines(tok, sl[-1])
        times = {1: [], None: []}
        for i, s in enumerate(sl[:N]):
            arms = [(a, 1), (b, None)] if i % 2 == 0 else [(b, None), (a, 1)]
            for eng, threads in arms:
                t = fresh_str(s)
                if cond == "settle":
                    settle_allocator()
                t0 = time.perf_counter()
                eng.encode_ids(t, threads=threads) if threads else eng.encode_ids(t)
                times[threads].append((time.perf_counter() - t0) * 1e3)
            between(cond, tok, fk, s)
        one, both = np.array(times[1]), np.array(times[None])
        print(f"{NAME} {KIND} {cond:7s}: 1t P50 {np.median(one):6.2f}  all P50 {np.median(both):6.2f}"
              f"  paired ratio median {np.median(one / both):.2f}"
              f"  ratios {np.round(one / both, 2).tolist()}", flush=True)


if __name__ == "__main__":
    main()
