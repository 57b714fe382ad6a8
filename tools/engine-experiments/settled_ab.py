"""In-process A/B of two CPU engine versions in the grid's protocol: every timed call with the
allocator settled first (``bench.timing.settle_allocator``) and the reference encoding the slice
between the engines' calls, so each engine meets its tables after a flush, as in
``bench-engine-targets`` -- not with its tables in the caches, as ``inproc_ab.py`` measures.

A is this checkout's ``toktier``, B another copy under ``/tmp/abpkg/toktier_b`` (``inproc_ab.py``
says how to make one).  Per slice: each engine encodes it fresh (its caches hold the earlier
slices), the reference encodes it (flush), each engine encodes it again; order alternating,
outputs checked equal to the reference.  P50 ms over the slices and the median per-slice ratio.
Usage: ``.venv/bin/python tools/engine-experiments/settled_ab.py NAME KIND [SAMPLES [CHARS]]``.
"""

import os
import sys
import time

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")
sys.path.insert(0, "/tmp/abpkg")

from inproc_ab import warm_engines

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str, settle_allocator
from toktier.registry import load


def clocked(fn) -> tuple[float, object]:
    settle_allocator()
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1e3, out


def main(name: str, kind: str, samples: int = 8, chars: int = 1_000_000) -> None:
    tok = load(name)
    text = corpora()[kind]
    engines = warm_engines(tok, text)
    rec = {(k, st): [] for k in engines for st in ("fresh", "again")}
    for i, s in enumerate(slices(text, int(chars), int(samples) + 1)[1:]):
        ref = tok.hf.encode(s, add_special_tokens=False).ids
        order = list(engines) if i % 2 else list(engines)[::-1]
        for state in ("fresh", "again"):
            for k in order:
                ms, ids = clocked(lambda k=k, s=s: engines[k].encode_ids(fresh_str(s), threads=1))
                if np.asarray(ids).tolist() != ref:
                    raise SystemExit(f"{k} {state} differs from the reference on slice {i}")
                rec[(k, state)].append(ms)
            tok.hf.encode(s, add_special_tokens=False)  # the flush between the two states
    print(f"{name} {kind} {int(chars):,} chars, {samples} slices, settled, reference between calls")
    for state in ("fresh", "again"):
        a, b = np.array(rec[("A", state)]), np.array(rec[("B", state)])
        print(
            f"  {state:6s} A {np.median(a):8.3f} ms  B {np.median(b):8.3f} ms  "
            f"A/B per slice {np.median(a / b):.3f} ({(a / b).min():.2f}-{(a / b).max():.2f})"
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
