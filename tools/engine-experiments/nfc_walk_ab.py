"""Which NFC stretches changed, found by a compiled walk over both texts (``cpu.nfc_changes``
now) against splitting the normalized and original joins and comparing the parts in Python
(before), in whole one-thread engine calls: one engine, warm piece caches, variants
alternated per slice, each call on a fresh str copy; outputs checked equal.

Usage: ``.venv/bin/python tools/engine-experiments/nfc_walk_ab.py NAME KIND [CHARS] [N]``.
"""

import sys
import time

import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str
from toktier.engine import cpu
from toktier.registry import load

NEW = cpu.nfc_changes


def split_compare(normalize, cps, ra, rb):
    """The previous ``nfc_changes``: both joins split at the separator, parts compared."""
    m = len(ra)
    if m == 0:
        return np.zeros(0, dtype=bool)
    joined, sep = cpu._join_stretches(cps, ra, rb)
    if m >= 2 and sep >= 0:
        s = cpu._utf32(joined)
        normed = normalize(s)
        if normed == s:
            return np.zeros(m, dtype=bool)
        parts = normed.split(chr(sep))
        if len(parts) == m:
            return np.array([q != p for q, p in zip(parts, s.split(chr(sep)), strict=True)])
    pieces = [cpu._utf32(cps[a:b]) for a, b in zip(ra.tolist(), rb.tolist(), strict=True)]
    return np.array([normalize(p) != p for p in pieces], dtype=bool)


def main(name: str, kind: str, chars: int = 1_000_000, n: int = 8) -> None:
    tok = load(name)
    eng = cpu.CpuEngine(tok, threads=1)
    eng.warmup()
    text = corpora()[kind]
    variants = {"split and compare (old)": split_compare, "compiled walk (new)": NEW}
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
    old = np.median(res["split and compare (old)"])
    print(f"# {name} {kind} {chars:,} chars, {n} slices x 3 rounds, one thread, warm, P50 ms")
    for v, t in res.items():
        print(f"{v:26s} {np.median(t):8.3f}   old / this {old / np.median(t):5.3f}x")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], *(int(x) for x in a[2:]))
