"""Where a two-core encode's time goes, against one thread (one process, warm engine):
per 1M slice, P50 over slices and rounds of the serial steps around the parts and the parts
themselves on two threads (``run_chunks``), the parts one after another on one thread, and
the whole text in one call -- timed on the path ``encode_parallel`` takes for that slice:
an all-ASCII str makes its UTF-8 up front (``utf8_array``, serial) and finds its cuts in the
bytes (``_part_bounds``); any other str finds its cuts in the str (``char_part_bounds``) and
each part makes its own UTF-8 on the thread that encodes it (``_encode_str_parts``), so its
"utf8" row is 0 (the per-part encodes are inside the parts' rows).  Usage:
``.venv/bin/python tools/engine-experiments/parallel_parts.py NAME KIND [SLICES]``.
"""

import sys
import time
from itertools import pairwise

import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu
from toktier.registry import load
from toktier.textcheck import utf8_array


def _ms(fn, *a):
    t0 = time.perf_counter()
    out = fn(*a)
    return (time.perf_counter() - t0) * 1e3, out


def _part_encoder(eng, u8):
    return lambda j: eng._encode_bytes(u8[j[0] : j[1]], False)


def _str_part_encoder(eng, text):
    return lambda j: eng._encode_bytes(utf8_array(text, lo=j[0], hi=j[1]), False)


def _serially(one, jobs):
    return [one(j) for j in jobs]


def main(name: str, kind: str, n: int = 8) -> None:
    eng = cpu.new_engine(load(name))
    eng.warmup()
    texts = slices(corpora()[kind], 1_000_000, n)
    rec = {k: [] for k in ("utf8", "bounds", "parts 2 threads", "join", "parts serially",
                           "one call", "encode_ids 2 threads", "encode_ids 1 thread")}
    for text in texts:  # warm: every slice's pieces are in the caches once
        eng.encode_ids(text, threads=1)
    for _ in range(3):
        for text in texts:
            u8 = utf8_array(text)
            if text.isascii():  # encode_parallel's byte path
                t, u8 = _ms(utf8_array, text)
                rec["utf8"].append(t)
                t, bounds = _ms(eng._part_bounds, u8, cpu.chunk_count(u8.size, 2))
                one = _part_encoder(eng, u8)
            else:  # its str path: cuts in the str, each part's UTF-8 made in the part
                rec["utf8"].append(0.0)
                t, bounds = _ms(cpu.char_part_bounds, text, cpu.chunk_count(len(text), 2),
                                eng._cut_args())  # fmt: skip
                one = _str_part_encoder(eng, text)
            rec["bounds"].append(t)
            jobs = list(pairwise(bounds))
            t, results = _ms(cpu.run_chunks, eng._parts, jobs, 2, one)
            rec["parts 2 threads"].append(t)
            t, _ = _ms(cpu._join_parts, results, False)
            rec["join"].append(t)
            t, _ = _ms(_serially, one, jobs)
            rec["parts serially"].append(t)
            t, _ = _ms(eng._encode_bytes, u8, False)
            rec["one call"].append(t)
            t, _ = _ms(eng.encode_ids, text, 2)
            rec["encode_ids 2 threads"].append(t)
            t, _ = _ms(eng.encode_ids, text, 1)
            rec["encode_ids 1 thread"].append(t)
    print(f"{name} {kind}, 1M slices x {n}, 3 rounds, warm; P50 ms (chunks: "
          f"{cpu.chunk_count(1_000_000, 2)})")
    for k, v in rec.items():
        print(f"  {k:22s} {np.median(v):8.3f}")
    p = rec
    print(f"  two threads over one: {np.median(p['encode_ids 1 thread']) / np.median(p['encode_ids 2 threads']):.2f}x;"
          f" parts serially / 2 threads: {np.median(p['parts serially']) / np.median(p['parts 2 threads']):.2f}x")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 8)
