"""A str's parts make their own UTF-8 (``CpuEngine._encode_str_parts``) against the whole
text's UTF-8 made first on the calling thread (the byte path it replaced for non-ASCII strs),
two threads, in one engine, alternated, each call on a fresh str copy; one thread alongside
for the speed-up.  Outputs checked equal to the one-thread IDs.

Usage: ``.venv/bin/python tools/engine-experiments/str_parts_ab.py NAME KIND [CHARS] [N]``.
"""

import sys
import time

import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str
from toktier.engine.cpu import CpuEngine, chunk_count
from toktier.registry import load
from toktier.textcheck import utf8_array


def bytes_first(eng, text):
    u8 = utf8_array(text)
    bounds = eng._part_bounds(u8, chunk_count(u8.size, 2))
    return eng._encode_parts(u8, bounds, 2, spans=False)[0]


def main(name: str, kind: str, chars: int = 1_000_000, n: int = 8) -> None:
    tok = load(name)
    eng = CpuEngine(tok, threads=2)
    eng.warmup()
    text = corpora()[kind]
    methods = {
        "one thread": lambda t: eng.encode_ids(t, threads=1),
        "2 threads, UTF-8 first (old)": lambda t: bytes_first(eng, t),
        "2 threads, str parts (new)": lambda t: eng.encode_ids(t, threads=2),
    }
    res = {m: [] for m in methods}
    ascii_slices = 0
    for rnd in range(3):
        for i, s in enumerate(slices(text, chars, n)):
            ascii_slices += s.isascii() and rnd == 0
            ref = None
            order = list(methods.items())
            order = order[(i + rnd) % 3 :] + order[: (i + rnd) % 3]
            for m, fn in order:
                t = fresh_str(s)
                t0 = time.perf_counter()
                out = fn(t)
                res[m].append((time.perf_counter() - t0) * 1e3)
                ref = out if ref is None else ref
                assert np.array_equal(out, ref), m
    one = np.median(res["one thread"])
    print(f"# {name} {kind} {chars:,} chars, {n} slices x 3 rounds ({ascii_slices} all ASCII), P50 ms")
    for m, v in res.items():
        print(f"{m:30s} {np.median(v):8.3f}   one thread / this {one / np.median(v):5.2f}x")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], *(int(x) for x in a[2:]))
