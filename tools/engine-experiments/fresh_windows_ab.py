"""In-process A/B of two CPU engine versions on fresh repair-sized windows, alternated.

Consecutive windows of ``WINDOW`` characters (default 1,400: experiment 10's 1,100-character
continuation plus the llama3 repair window's 318) of one of ``bench-engine-targets``'
corpora, each encoded once, with spans, by each engine -- text neither engine's piece caches
have seen, as a repair window of a held-out continuation meets it.  A is this checkout's
``toktier``, B another revision's package copied to ``/tmp/abpkg/toktier_b`` (as for
``inproc_ab.py``).  Outputs checked equal.  Usage:
``.venv/bin/python tools/engine-experiments/fresh_windows_ab.py NAME KIND [WINDOWS [WINDOW]]``.
"""

import os
import sys
import time

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")
sys.path.insert(0, "/tmp/abpkg")

import toktier_b.engine.cpu as B

from toktier.bench.engine_targets import corpora
from toktier.engine import cpu as A
from toktier.registry import load


def main(name: str, kind: str, windows: int = 600, width: int = 1400) -> None:
    tok = load(name)
    engines = {"A": A.CpuEngine(tok), "B": B.CpuEngine(tok)}
    text = corpora()[kind]
    if tok.hf.normalizer is not None:
        text = tok.hf.normalizer.normalize_str(text)
    for e in engines.values():
        e.warmup()
        e.encode(text[:200_000])  # warm-up traffic, never a window below
    res = {"A": [], "B": []}
    start = 200_000
    for i in range(windows):
        w = text[start + i * width : start + (i + 1) * width]
        order = ["A", "B"] if i % 2 == 0 else ["B", "A"]
        outs = []
        for k in order:
            t0 = time.perf_counter_ns()
            out = engines[k].encode(w)
            res[k].append((time.perf_counter_ns() - t0) / 1e3)
            outs.append(out)
        assert all(np.array_equal(x, y) for x, y in zip(outs[0], outs[1], strict=True))
    a, b = np.array(res["A"]), np.array(res["B"])
    print(f"{name:7s} {kind:14s} {windows} fresh windows of {width:,} chars: "
          f"A P50 {np.median(a):7.1f} us, B P50 {np.median(b):7.1f} us, "
          f"A/B {np.median(a) / np.median(b):.3f} (per-window median {np.median(a / b):.3f})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(x) for x in sys.argv[3:5]))
