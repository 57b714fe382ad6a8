"""In-process append cost by continuation size: P50 of ``Tier.append`` and of its one
compiled call (``plan_engine``), llama3, 48K characters of CPython-stdlib code.

A warm process with nothing interleaved (experiment 10 interleaves every method, so its
caches are colder): the difference between the two columns is the Python around the
compiled call.  Usage: ``.venv/bin/python tools/append-profile/delta_sweep.py [NAME]``.
"""

import sys
import time

import numpy as np

from toktier import Tier
from toktier.campaigns import corpus

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
code = "".join(corpus.stdlib_documents())[:60_000]
tier = Tier(name, gpu=None, verify_rate=0.0)
planner = tier._planner
compiled = planner._plan_engine
inner: list[int] = []


def timed_plan(*args):
    t0 = time.perf_counter_ns()
    out = compiled(*args)
    inner.append(time.perf_counter_ns() - t0)
    return out


planner._plan_engine = timed_plan
for delta in (1, 10, 100, 1100):
    tier.close("s")
    tier.encode(code[:48_000], session="s")
    pos, outer = 48_000, []
    inner.clear()
    for _ in range(300):
        d = code[pos : pos + delta]
        pos = pos + delta if pos + 2 * delta < len(code) else 48_000
        t0 = time.perf_counter_ns()
        tier.append("s", d)
        outer.append(time.perf_counter_ns() - t0)
    print(f"{name} delta {delta:5d} chars: append P50 {np.median(outer) / 1e3:6.1f} us, "
          f"plan_engine P50 {np.median(inner) / 1e3:6.1f} us")  # fmt: skip
