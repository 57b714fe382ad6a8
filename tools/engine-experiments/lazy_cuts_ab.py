"""A/B in one process: a two-thread encode of a non-ASCII str with its cuts found up front
(``char_part_bounds``, then the parts: the engine's path) vs each part's cuts found by the
thread that encodes it (a memo shared by the threads; a cut must fall before the next
part's target, so neighbours agree and parts never overlap).  Eight non-ASCII 1M slices
of ``bench-engine-targets``' corpora, two rounds each, the order alternating per slice; every
answer compared with one thread's.  Usage:
``.venv/bin/python tools/engine-experiments/lazy_cuts_ab.py NAME [code|multilingual]``.
"""

import sys
import time

import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import private_engine
from toktier.engine import cpu
from toktier.registry import load
from toktier.textcheck import utf8_array

NAME = sys.argv[1] if len(sys.argv) > 1 else "llama3"
KIND = sys.argv[2] if len(sys.argv) > 2 else "code"
tok = load(NAME)
one, eager, lazy = (private_engine(tok) for _ in range(3))
for e in (one, eager, lazy):
    e.warmup()


def lazy_parts(engine, text: str, threads: int = 2) -> np.ndarray:
    """``encode_ids`` on ``threads`` threads, each part's cuts found by its own thread."""
    n, parts, cut_args = len(text), cpu.chunk_count(len(text), threads), engine._cut_args()
    memo = {}

    def cut(k):  # part k's start: a certified cut in [target k, target k + 1), or -1
        if k <= 0 or k >= parts:
            return 0 if k <= 0 else n
        if k not in memo:
            target = n * k // parts
            c = cpu.char_cut_near(text, target, cpu.CUT_FIRST_SEARCH, cut_args)
            if c < 0:
                c = cpu.char_cut_near(text, target, cpu.CUT_SEARCH, cut_args)
            memo[k] = c if target <= c < n * (k + 1) // parts else -1
        return memo[k]

    def encode(k):
        lo = cut(k)
        if lo < 0:
            return None  # no cut here: the part before runs on to the next one
        j = k + 1
        while (hi := cut(j)) < 0:
            j += 1
        return engine._encode_bytes(utf8_array(text, lo=lo, hi=hi), False)

    results = cpu.run_chunks(engine._parts, list(range(parts)), threads, encode)
    return cpu._join_parts([r for r in results if r is not None], False)[0]


clock = time.perf_counter_ns
rows = []
corpus_text = corpora()["multilingual" if KIND != "code" else "code"]
texts = [t for t in slices(corpus_text, 1_000_000, 16) if not t.isascii()][:8]  # the str path
for k, text in enumerate(texts):
    for _ in range(2):
        t0 = clock()
        want = one.encode_ids(text, threads=1)
        t1 = clock()
        runs = [("eager", lambda t=text: eager.encode_ids(t, threads=2)),
                ("lazy", lambda t=text: lazy_parts(lazy, t))]  # fmt: skip
        ms = {}
        for label, f in runs if k % 2 == 0 else runs[::-1]:
            t2 = clock()
            got = f()
            ms[label] = clock() - t2
            assert np.array_equal(got, want), (label, k)
    rows.append((t1 - t0, ms["eager"], ms["lazy"]))
r = np.array(rows, dtype=float)
print(f"{NAME} {KIND} 1M, P50 ms: 1 thread {np.median(r[:, 0]) / 1e6:.2f} | 2 threads, cuts up "
      f"front {np.median(r[:, 1]) / 1e6:.2f} ({np.median(r[:, 0] / r[:, 1]):.2f}x) | cuts in "
      f"the parts' threads {np.median(r[:, 2]) / 1e6:.2f} ({np.median(r[:, 0] / r[:, 2]):.2f}x) "
      f"| paired up front / in threads {np.median(r[:, 1] / r[:, 2]):.3f}")
