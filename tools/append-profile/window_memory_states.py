"""What an append's window costs the engine in different states of the CPU's caches (not a
change): 1,418-character windows (318 characters of old text + a 1,100-character
continuation, the repair window's size) of pycountry's catalogs (``multi``) or CPython's
stdlib (``code``) from a third of the way in, each encoded (``encode_ids``, one thread) the
first time, again at once, after a 64 MB sweep of the CPU caches (the piece caches still
hold its pieces), and after touching one byte per 4 KiB page of that buffer (the TLB and a
megabyte of lines); P50 of 180 windows.
Usage: ``.venv/bin/python tools/append-profile/window_memory_states.py [NAME] [multi|code]``.
"""

import sys
import time

import numpy as np

from toktier import load
from toktier.bench.timing import private_engine
from toktier.campaigns import corpus

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
kind = sys.argv[2] if len(sys.argv) > 2 else "multi"
docs = corpus.pycountry_documents() if kind == "multi" else corpus.stdlib_documents()
stream = "".join(docs)
stream = stream[len(stream) // 3 :]
eng = private_engine(load(name))
eng.warmup()
eng.encode_ids(stream[:48_000])
junk = np.ones(64 << 20, np.uint8)
clock = time.perf_counter_ns
times = {"first": [], "again": [], "after a 64 MB sweep": [], "after a page-stride touch": []}
pos = 48_000
for _ in range(200):
    w = stream[pos - 318 : pos + 1100]
    pos += 1100
    t0 = clock()
    eng.encode_ids(w, threads=1)
    t1 = clock()
    eng.encode_ids(w, threads=1)
    t2 = clock()
    junk[::64] += 1
    t3 = clock()
    eng.encode_ids(w, threads=1)
    t4 = clock()
    junk[::4096] += 1
    t5 = clock()
    eng.encode_ids(w, threads=1)
    t6 = clock()
    for label, dt in zip(times, (t1 - t0, t2 - t1, t4 - t3, t6 - t5), strict=True):
        times[label].append(dt)
print(f"{name} {kind}, 1,418-character windows, P50 us: " + ", ".join(
    f"{k} {np.median(np.array(v[20:])) / 1e3:.1f}" for k, v in times.items()))  # fmt: skip
