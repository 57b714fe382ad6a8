"""Each distinct NFC stretch normalized once (``cpu.nfc_changes`` now) against every stretch,
repeats and all (before), in whole one-thread engine calls: one engine, warm piece caches, variants
alternated per slice, each call on a fresh str copy; outputs checked equal.

Usage: ``.venv/bin/python tools/engine-experiments/nfc_dedup_ab.py NAME KIND [CHARS] [N]``.
"""

import sys
import time

import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str
from toktier.engine import cpu
from toktier.registry import load

NEW = cpu.nfc_changes


def all_stretches(normalize, cps, ra, rb):
    """Before: every stretch into the reference's normalizer, repeats and all."""
    if len(ra) == 0:
        return np.zeros(0, dtype=bool)
    return cpu._nfc_changes_distinct(normalize, cps, ra, rb)


def main(name: str, kind: str, chars: int = 1_000_000, n: int = 8) -> None:
    tok = load(name)
    eng = cpu.CpuEngine(tok, threads=1)
    eng.warmup()
    text = corpora()[kind]
    variants = {"every stretch (old)": all_stretches, "distinct once (new)": NEW}
    res = {v: [] for v in variants}
    for rnd in range(3):
        for i, s in enumerate(slices(text, chars, n)):
            eng.encode_ids(fresh_str(s), threads=1)
            ref = None
            order = list(variants.items())
            order = order[(i + rnd) % 2 :] + order[: (i + rnd) % 2]
            for v, fn in order:
                cpu.nfc_changes = fn
                t = fresh_str(s)
                t0 = time.perf_counter()
                out = eng.encode_ids(t, threads=1)
                res[v].append((time.perf_counter() - t0) * 1e3)
                ref = out if ref is None else ref
                assert np.array_equal(out, ref), v
    cpu.nfc_changes = NEW
    old = np.median(res["every stretch (old)"])
    print(f"# {name} {kind} {chars:,} chars, {n} slices x 3 rounds, one thread, warm, P50 ms")
    for v, t in res.items():
        print(f"{v:26s} {np.median(t):8.3f}   old / this {old / np.median(t):5.3f}x")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], *(int(x) for x in a[2:]))
