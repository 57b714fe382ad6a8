"""The segmented (NFC) path without span lifting for IDs-only calls (``encode_ids``: the
ranges' kernels skip the spans, the interleave copies IDs alone) against the same path
lifting and copying spans it then drops (before), in whole one-thread engine calls: one
engine, warm piece caches, alternated per slice, fresh str copies; outputs checked equal.

Usage: ``.venv/bin/python tools/engine-experiments/segmented_ids_ab.py NAME KIND [CHARS] [N]``.
"""

import sys
import time

import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str
from toktier.engine import cpu
from toktier.registry import load

NEW = cpu.CpuEngine._encode_segmented


def with_spans(self, *args, **kw):
    """Before: the segmented path always lifted and copied spans."""
    kw["spans"] = True
    return NEW(self, *args, **kw)


def main(name: str, kind: str, chars: int = 1_000_000, n: int = 8) -> None:
    tok = load(name)
    eng = cpu.CpuEngine(tok, threads=1)
    eng.warmup()
    text = corpora()[kind]
    variants = {"spans lifted (old)": with_spans, "IDs alone (new)": NEW}
    res = {v: [] for v in variants}
    for rnd in range(3):
        for i, s in enumerate(slices(text, chars, n)):
            eng.encode_ids(fresh_str(s), threads=1)
            ref = None
            order = list(variants.items())
            order = order[(i + rnd) % 2 :] + order[: (i + rnd) % 2]
            for v, fn in order:
                cpu.CpuEngine._encode_segmented = fn
                t = fresh_str(s)
                t0 = time.perf_counter()
                out = eng.encode_ids(t, threads=1)
                res[v].append((time.perf_counter() - t0) * 1e3)
                ref = out if ref is None else ref
                assert np.array_equal(out, ref), v
    cpu.CpuEngine._encode_segmented = NEW
    old = np.median(res["spans lifted (old)"])
    print(f"# {name} {kind} {chars:,} chars, {n} slices x 3 rounds, one thread, warm, P50 ms")
    for v, t in res.items():
        print(f"{v:22s} {np.median(t):8.3f}   old / this {old / np.median(t):5.3f}x")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], *(int(x) for x in a[2:]))
