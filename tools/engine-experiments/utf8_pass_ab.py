"""The compiled UTF-8 pass (``engine.utf8``, via ``textcheck.utf8_array``) against
``str.encode`` in whole engine calls: one engine, one and two threads, alternated per slice,
each call on a fresh str copy (``bench.timing.fresh_str``); outputs checked equal.  The old
behaviour is the same code with ``textcheck.COMPILED_MIN_CHARS`` above any text's length
(every conversion by ``str.encode``, each two-thread part slicing the str first).

Usage: ``.venv/bin/python tools/engine-experiments/utf8_pass_ab.py NAME KIND [CHARS] [N]``.
"""

import sys
import time

import numpy as np

from toktier import textcheck
from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str
from toktier.engine.cpu import CpuEngine
from toktier.registry import load

NEW = textcheck.COMPILED_MIN_CHARS


def main(name: str, kind: str, chars: int = 1_000_000, n: int = 8) -> None:
    tok = load(name)
    eng = CpuEngine(tok, threads=2)
    eng.warmup()
    text = corpora()[kind]
    variants = {"str.encode (old)": 1 << 62, "compiled pass (new)": NEW}
    res = {(v, t): [] for v in variants for t in (1, 2)}
    for rnd in range(3):
        for i, s in enumerate(slices(text, chars, n)):
            eng.encode_ids(fresh_str(s), threads=1)  # every piece cached: conversion shows
            ref = None
            order = list(variants.items())
            order = order[(i + rnd) % 2 :] + order[: (i + rnd) % 2]
            for threads in (1, 2):
                for v, limit in order:
                    textcheck.COMPILED_MIN_CHARS = limit
                    t = fresh_str(s)
                    t0 = time.perf_counter()
                    out = eng.encode_ids(t, threads=threads)
                    res[(v, threads)].append((time.perf_counter() - t0) * 1e3)
                    ref = out if ref is None else ref
                    assert np.array_equal(out, ref), (v, threads)
    textcheck.COMPILED_MIN_CHARS = NEW
    print(f"# {name} {kind} {chars:,} chars, {n} slices x 3 rounds, warm piece caches, P50 ms")
    for threads in (1, 2):
        old = np.median(res[("str.encode (old)", threads)])
        for v in variants:
            p50 = np.median(res[(v, threads)])
            print(f"{threads} thread(s)  {v:22s} {p50:8.3f}   old / this {old / p50:5.3f}x")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], *(int(x) for x in a[2:]))
