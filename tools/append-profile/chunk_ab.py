"""A/B in one process: the session text's chunk merging unbounded (the old policy) vs chunks of
``store.TEXT_CHUNK_FROZEN`` characters never merged again; two sessions seeded with 1M
characters of stdlib code receive the same 1,100-character appends, alternating which goes
first.  Usage: ``.venv/bin/python tools/append-profile/chunk_ab.py``.
"""

import time

import numpy as np

import toktier.store as store
from toktier import Tier
from toktier.campaigns import corpus

context, appends = 1_000_000, 2500
code = "".join(corpus.stdlib_documents())
need = context + appends * 1100
code = (code * (need // len(code) + 1))[:need]
tier = Tier("llama3", gpu=None, verify_rate=0.0)
caps = {"unbounded": 1 << 62, "frozen 64K": 1 << 16}
for s in caps:
    tier.encode(code[:context], session=s)
times = {s: [] for s in caps}
for k in range(appends):
    d = code[context + k * 1100 : context + (k + 1) * 1100]
    order = list(caps) if k % 2 == 0 else list(caps)[::-1]
    for s in order:
        store.TEXT_CHUNK_FROZEN = caps[s]
        t0 = time.perf_counter_ns()
        tier.append(s, d)
        times[s].append(time.perf_counter_ns() - t0)
for s, t in times.items():
    us = np.array(t) / 1e3
    q = {p: np.percentile(us, p) for p in (50, 90, 99, 99.9)}
    print(f"{s:12s} P50 {q[50]:6.1f} P90 {q[90]:6.1f} P99 {q[99]:7.1f} P99.9 {q[99.9]:7.1f} "
          f"max {us.max():8.1f} mean {us.mean():6.1f} chunks {len(tier.store.get(s)._chunks)}")
