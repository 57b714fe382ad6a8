"""Tail of ``Tier.append`` over many continuations of one long session: P50, P99 and the
worst append, llama3, 1,100-character continuations of CPython-stdlib code appended to a
session seeded with CONTEXT characters (default 1M).  An append whose text update copies
the whole context shows up in the max.  Usage:
``.venv/bin/python tools/append-profile/tail_sweep.py [CONTEXT] [APPENDS]``.
"""

import sys
import time

import numpy as np

from toktier import Tier
from toktier.campaigns import corpus

context = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
appends = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
code = "".join(corpus.stdlib_documents())
need = context + appends * 1100
code = (code * (need // len(code) + 1))[:need]
tier = Tier("llama3", gpu=None, verify_rate=0.0)
tier.encode(code[:context], session="s")
times = []
for k in range(appends):
    d = code[context + k * 1100 : context + (k + 1) * 1100]
    t0 = time.perf_counter_ns()
    tier.append("s", d)
    times.append(time.perf_counter_ns() - t0)
us = np.array(times) / 1e3
st = tier.store.get("s")
print(f"context {context:,} + {appends} appends: P50 {np.percentile(us, 50):.1f} us, "
      f"P99 {np.percentile(us, 99):.1f}, P99.9 {np.percentile(us, 99.9):.1f}, "
      f"max {us.max():.1f}; text chunks at the end: {len(st._chunks)}")  # fmt: skip
