"""Experiment 10's tier-append protocol re-created in one process (sessions seeded, one
untimed append, five timed), with timers around the steps of ``Tier.append``: P50 of each.
Pass 0 meets fresh text (the engine's piece caches have not seen it), pass 1 the same
texts again.  Usage: ``.venv/bin/python tools/append-profile/protocol_parts.py [NAME]``.
"""

import collections
import sys
import time

import numpy as np
from session_loop import protocol_tier

import toktier.store as S
import toktier.tier as T
from toktier.bench import continuation as C
from toktier.bench.timing import time_ms

name = sys.argv[1]
streams, tier = protocol_tier(name)
acc = collections.defaultdict(list)


def wrap(obj, attr, label):
    f = getattr(obj, attr)

    def w(*a, **k):
        t0 = time.perf_counter_ns()
        o = f(*a, **k)
        acc[label].append(time.perf_counter_ns() - t0)
        return o

    setattr(obj, attr, w)


pl = tier._planner
wrap(pl, "_plan_engine", "compiled")
wrap(pl, "first_window_call", "first_window_call")
wrap(tier, "_append", "_append")
wrap(tier.store, "get", "store.get")
wrap(tier.store, "refresh", "store.refresh")
wrap(T, "check_text", "check_text")
wrap(S.SessionState, "tail", "state.tail")
wrap(S.SessionState, "appended_text", "state.appended_text")
wrap(S.SessionState, "publish", "state.publish")
wrap(S.SessionState, "snapshot", "state.snapshot")
tails = C.continuation_tails([48000], 1100, 5, 20)
for corp, stream in streams.items():
    cells = C.session_cells(stream, 48000, 1100, 5, 20, tails[48000])
    for rep in range(2):
        outer = []
        for _s, (prefix, deltas) in enumerate(cells):
            tier.close("x")
            tier.encode(prefix, session="x")
            tier.append("x", deltas[0])
            acc.clear()
            for d in deltas[1:]:
                outer.append(time_ms(lambda d=d: tier.append("x", d)))
        print(
            f"{corp} pass {rep}: append P50 {np.median(outer) * 1e3:.1f} us | "
            + ", ".join(f"{k} {np.median(v) / 1e3:.1f}" for k, v in acc.items())
        )
