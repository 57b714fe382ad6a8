"""Fresh 1,100-character continuations with and without byte pairs merged up front
(``tables.build_premerge``): two tiers on private engines (one with the up-front merges
switched off), the same sessions and continuations, alternated per session; experiment 10's
cell layout at 48K (sessions seeded, one untimed append, four timed).  Every engine meets
each text once, so every piece of a continuation is fresh to it.
Usage: ``.venv/bin/python tools/append-profile/premerge_windows.py [NAME]``.
"""

import sys

import numpy as np
from alternated_sessions import alternated_appends

from toktier import Tier, load
from toktier.bench import continuation as C
from toktier.bench.streams import load_trajectories
from toktier.bench.timing import private_engine
from toktier.campaigns import corpus
from toktier.engine import rules as R
from toktier.workload import archives

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
trajs = load_trajectories(archives.find_archive("mini-swe-agent"))
multi = "".join(corpus.pycountry_documents())
streams = C.standard_streams(trajs, name, 48000 + 2 * 1100 * 102 * 2, multi)
tok = load(name)
tiers = {}
for label, on in (("plain merges", False), ("pairs up front", True)):
    eng = private_engine(tok)
    if not on:
        eng.bpe = eng.bpe._replace(pm_index=R.premerge_off()[0], pm_rows=R.premerge_off()[1])
    tiers[label] = Tier(tok, engine=eng, verify_rate=0, delta_aware=False)
tails = C.continuation_tails([48000], 1100, 5, 20)
for corp, stream in streams.items():
    cells = C.session_cells(stream, 48000, 1100, 5, 20, tails[48000])
    times = alternated_appends(tiers, cells)
    old, new = (np.array(v) for v in times.values())
    print(f"{name} {corp}, 48K, {old.size} appends each: P50 plain {np.median(old) * 1e3:.1f} us, "
          f"up front {np.median(new) * 1e3:.1f} us; paired median {np.median(old / new):.3f}x")  # fmt: skip
