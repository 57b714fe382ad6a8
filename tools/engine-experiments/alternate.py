"""The in-process A/B loop the engine experiments share: one engine, warm piece caches (or,
``cold``, emptied before every timed call), variants alternated per slice (the order rotated
per slice and round), each call on its own fresh str copy (``bench.timing.fresh_str``), every
variant's IDs checked equal."""

import time

import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str
from toktier.engine import cpu
from toktier.registry import load


def alternate(name: str, kind: str, chars: int, n: int, variants: dict, *, rounds: int = 3,
              threads: int = 1, engine=None, cold: bool = False) -> dict[str, list[float]]:  # fmt: skip
    """``variants``: label -> a function that switches the code under test to that variant
    (called before each timed call).  Returns label -> the calls' milliseconds.  ``engine``:
    the engine to time (default: a new one); ``cold``: every piece cache emptied before each
    timed call (every piece merged afresh, as in a never-seen text)."""
    eng = engine or cpu.CpuEngine(load(name), threads=threads)
    eng.warmup()
    text = corpora()[kind]
    res = {v: [] for v in variants}
    items = list(variants.items())
    for rnd in range(rounds):
        for i, s in enumerate(slices(text, chars, n)):
            if not cold:
                eng.encode_ids(fresh_str(s), threads=threads)  # warm: every piece cached
            ref = None
            k = (i + rnd) % len(items)
            for v, switch in items[k:] + items[:k]:
                switch()
                if cold:
                    for c in eng._caches:
                        c[:] = 0
                t = fresh_str(s)
                t0 = time.perf_counter()
                out = eng.encode_ids(t, threads=threads)
                res[v].append((time.perf_counter() - t0) * 1e3)
                ref = out if ref is None else ref
                assert np.array_equal(out, ref), v
    return res


def report(title: str, res: dict[str, list[float]]) -> None:
    """P50 of each variant and the first (old) variant's P50 over it."""
    first = next(iter(res.values()))
    old = np.median(first)
    print(f"# {title}, P50 ms")
    for v, t in res.items():
        paired = np.median(np.array(first) / np.array(t))  # call by call, same slice and round
        print(f"{v:26s} {np.median(t):8.3f}   old / this {old / np.median(t):5.3f}x"
              f"   paired median {paired:5.3f}x")  # fmt: skip
