"""Experiment 10's continuation cells through two builds of the request path in one process:
A = this checkout's ``toktier``, B = another revision's package copied as ``toktier_b``
(each tier on its own private engine), sessions alternated, outputs checked equal.  For
changes to the Python side of an append, whose cost after the engine's call is mostly
cache misses (each small call 2-5 us instead of ~0.5), so only a paired run resolves it:

    git worktree add /tmp/wt-b REV && mkdir -p /tmp/abpkg && cp -r /tmp/wt-b/toktier /tmp/abpkg/toktier_b
    .venv/bin/python tools/append-profile/fast_path_ab.py llama3 [CONTEXT [PASSES]]

Pass 0 meets every continuation fresh (neither engine's piece caches have seen it), later
passes the same texts again.  Ratio A/B < 1: A is faster.
"""

import os
import sys

import numpy as np
from alternated_sessions import alternated_appends

os.environ.setdefault("TOKTIER_HOME", "data/build")  # toktier_b has no checkout of its own
sys.path.insert(0, "/tmp/abpkg")

import toktier_b

import toktier
from toktier.bench import continuation as C
from toktier.bench.streams import load_trajectories
from toktier.campaigns import corpus
from toktier.workload import archives

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
context = int(sys.argv[2]) if len(sys.argv) > 2 else 48000
passes = int(sys.argv[3]) if len(sys.argv) > 3 else 2
trajs = load_trajectories(archives.find_archive("mini-swe-agent"))
multi = "".join(corpus.pycountry_documents())
streams = C.standard_streams(trajs, name, context + 2 * 1100 * 102 * 2, multi)
tiers = {}
for label, pkg in (("A", toktier), ("B", toktier_b)):
    from importlib import import_module

    timing = import_module(pkg.__name__ + ".bench.timing")
    tok = pkg.load(name)
    tiers[label] = pkg.Tier(tok, engine=timing.private_engine(tok), verify_rate=0,
                            delta_aware=False)  # fmt: skip
tails = C.continuation_tails([context], 1100, 5, 20)


def same(s, prefix, deltas, records):
    assert np.array_equal(records["A"], records["B"]), f"session {s}: A and B differ"


for corp, stream in streams.items():
    cells = C.session_cells(stream, context, 1100, 5, 20, tails[context])
    for p in range(passes):
        times = alternated_appends(tiers, cells, same)
        a, b = (np.array(v) for v in times.values())
        print(f"{name} {corp} {context // 1000}K pass {p}, {a.size} appends each: P50 A "
              f"{np.median(a) * 1e3:.1f} us, B {np.median(b) * 1e3:.1f} us; A/B P50 "
              f"{np.median(a) / np.median(b):.3f}, paired median {np.median(a / b):.3f}",
              flush=True)  # fmt: skip
