"""The appends that grow a session's record arrays, written by the compiled call after the
growth (``Planner._grow_and_apply``, A) or through the general commit as before (B), in one
process: each session seeded, one untimed append, five timed; A and B alternate per session.

    .venv/bin/python tools/append-profile/growth_ab.py llama3 transcripts 12000 [REPEATS]

Prints the P50 per append index (which index grows depends on the context: the seed
headroom is ``store.seed_capacity``), of all appends, of the growing ones, and the time
``SessionState.reserve`` itself took on them.  IDs of A and B are checked equal.
"""

import os
import sys
import time

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")

import toktier
from toktier import store
from toktier.bench import continuation as C
from toktier.bench.streams import load_trajectories
from toktier.bench.timing import private_engine, time_ms
from toktier.campaigns import corpus
from toktier.engine import splice
from toktier.workload import archives

name, corp, ctx = sys.argv[1], sys.argv[2], int(sys.argv[3])
repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 3
trajs = load_trajectories(archives.find_archive("mini-swe-agent"))
multi = "".join(corpus.pycountry_documents()) if corp == "multilingual" else ""
stream = C.standard_streams(trajs, name, ctx + 2 * 1100 * 102 * 2, multi)[corp]
tok = toktier.load(name)
tier = toktier.Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False)
cells = C.session_cells(stream, ctx, 1100, 5, 20, C.continuation_tails([ctx], 1100, 5, 20)[ctx])

shipped = splice.Planner._grow_and_apply


def before(self, state, wk, fresh, ws, new_len):  # B: leave the write to the general commit
    return wk.res.tolist(), fresh


reserve = store.SessionState.reserve
grew: list[float] = []


def timed_reserve(self, need):
    t0 = time.perf_counter()
    growing = need > len(self.ids)
    reserve(self, need)
    if growing:
        grew.append((time.perf_counter() - t0) * 1e6)


store.SessionState.reserve = timed_reserve
per = {"A": [[] for _ in range(5)], "B": [[] for _ in range(5)]}
growing = {"A": [], "B": []}
for rep in range(repeats):
    for s, (prefix, deltas) in enumerate(cells):
        ids = {}
        for lab in ("A", "B") if (s + rep) % 2 == 0 else ("B", "A"):
            splice.Planner._grow_and_apply = shipped if lab == "A" else before
            tier.close("x")
            tier.encode(prefix, session="x")
            tier.append("x", deltas[0])
            for j, d in enumerate(deltas[1:]):
                k = len(grew)
                t = time_ms(lambda d=d: tier.append("x", d)) * 1e3
                per[lab][j].append(t)
                if len(grew) > k:
                    growing[lab].append((t, grew[-1]))
            ids[lab] = tier.session_records("x")[0]
        assert np.array_equal(ids["A"], ids["B"]), f"session {s}: A and B differ"
for lab in ("A", "B"):
    allv = np.concatenate([np.array(v) for v in per[lab]])
    g = np.array(growing[lab]) if growing[lab] else np.zeros((1, 2))
    print(f"{name} {corp} {ctx // 1000}K {lab}: P50 {np.median(allv):.1f} us, mean "
          f"{allv.mean():.1f}; per index " + " ".join(f"{np.median(v):.1f}" for v in per[lab])
          + f"; growing appends {len(growing[lab])}: P50 {np.median(g[:, 0]):.1f} us, "
          f"reserve {np.median(g[:, 1]):.1f} us", flush=True)  # fmt: skip
