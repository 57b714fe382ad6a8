"""How often a recorded trajectory's continuation grows its session's record arrays.

Replays the first SESSIONS trajectories through one tier (every call a full-text request,
as the front end sends them) and counts the continuation calls during which
``SessionState.reserve`` had to grow the arrays; optionally with another seed headroom
minimum (``store._SEED_HEADROOM_MIN``, records):

    .venv/bin/python tools/append-profile/growth_real.py llama3 100 [HEADROOM_MIN]

Also prints the final capacity / used records and the tier's path counters.  No timing.
"""

import os
import sys

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")

import toktier
from toktier import store
from toktier.bench import streams
from toktier.workload import archives
from toktier.workload.templates import render_segments

name, sessions = sys.argv[1], int(sys.argv[2])
if len(sys.argv) > 3:
    store._SEED_HEADROOM_MIN = int(sys.argv[3])
tok = toktier.load(name)
trajs = streams.load_trajectories(archives.find_archive("mini-swe-agent"))[:sessions]
tier = toktier.Tier(tok, ttl_s=None, verify_rate=0)
reserve = store.SessionState.reserve
grown = [0]


def counting_reserve(self, need):
    grown[0] += need > len(self.ids)
    reserve(self, need)


store.SessionState.reserve = counting_reserve
calls = growing = repaired = 0
capacity, used = [], []
for traj in trajs:
    segs = render_segments(traj.messages, tok.name)
    for k, call in enumerate(traj.calls):
        before = grown[0]
        r = tier.encode("".join(segs[: call.prompt_messages]), session=traj.session)
        if k > 0:
            calls += 1
            growing += grown[0] > before
            repaired += r.path == "repair"
    st = tier.store.get(traj.session)
    capacity.append(len(st.ids))
    used.append(st.n)
print(f"{name} sessions {sessions} headroom_min {store._SEED_HEADROOM_MIN}: continuation calls "
      f"{calls}, repaired {repaired}, growing {growing} ({growing / calls:.1%}); final capacity / "
      f"used {np.sum(capacity) / np.sum(used):.3f}")  # fmt: skip
s = tier.stats()
print({k: s[k] for k in ("appends", "first_window", "widened", "fallbacks", "delta_full", "misses")})
