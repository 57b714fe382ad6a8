"""What an append that grows a session's record arrays costs at large contexts, against the
appends that do not (one tier over a private engine, NAME's transcripts stream).

For each context (200K and 1M characters) six sessions are seeded and take the stream's own
next 1,100-character continuations until the s-th growth of their arrays
(``SessionState.reserve``: doubling, a copy of every record); the appends in which the
capacity changed are "growing".  Usage:
``.venv/bin/python tools/append-profile/growth_large.py [NAME]``.
"""

import sys

import numpy as np

from toktier import Tier, load
from toktier.bench import streams
from toktier.bench.timing import private_engine, time_ms
from toktier.workload import archives

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
trajs = streams.load_trajectories(archives.find_archive("mini-swe-agent"))
text = streams.stream_text(trajs, name, 4_000_000)
tok = load(name)
tier = Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False)
tier.engine.encode(text[:200_000])
for ctx in (200_000, 1_000_000):
    grow, other = [], []
    for s in range(6):
        tier.close("x")
        tier.encode(text[s * 1000 : s * 1000 + ctx], session="x")
        state = tier.store.get("x")
        pos = s * 1000 + ctx
        for _ in range(400):
            cap = state.ids.size
            d = text[pos : pos + 1100]
            pos += 1100
            us = time_ms(lambda d=d: tier.append("x", d)) * 1e3
            (grow if state.ids.size != cap else other).append(us)
            if len(grow) > s:
                break
    assert np.array_equal(tier.session_records("x")[0], tok.reference(text[5000 : pos]))
    print(f"{ctx}: growing appends {len(grow)}: P50 {np.median(grow):.0f} us "
          f"({[round(g) for g in grow]}); others {len(other)}: P50 {np.median(other):.0f} us")
