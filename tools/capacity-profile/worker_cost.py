"""Where a repair worker's CPU per request goes under experiment 09's mixture, in one process.

Capacity follows the *mean* CPU per request, not the service-time P50 that the tables show:
this replays the seeded request mixture of ``toktier.loadgen.MixtureSource`` (all 500
trajectories, 64 live sessions) through one ``Tier`` and one fastokens object, timing per
request the request's text (the worker slices it out of the recorded transcript) and the
front end's call, split by kind (session start vs continuation).  No pipes, no verifier.

``TOKTIER_HOME=data/build .venv/bin/python tools/capacity-profile/worker_cost.py [--requests N]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> int:
    import fastokens

    import toktier
    from toktier.bench import machine
    from toktier.bench.streams import load_trajectories
    from toktier.loadgen import MixtureSource, build_workload
    from toktier.workload.archives import find_archive

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--tokenizer", default="llama3")
    args = ap.parse_args()
    trajs = load_trajectories(find_archive("mini-swe-agent"))
    work = build_workload(trajs, args.tokenizer)
    tok = toktier.load(args.tokenizer)
    tier = toktier.Tier(tok, verify_rate=0.0)
    fast = fastokens.Tokenizer.from_file(tok.checked_path())
    src = MixtureSource(work, live=64, seed=0)
    for r in src.warm():  # the sessions' first calls, before timing (as experiment 09)
        tier.encode(work.text(r.traj, r.call), session=r.session)
    reqs = [src.next() for _ in range(args.requests)]
    fast.encode(work.text(reqs[0].traj, reqs[0].call), add_special_tokens=False)
    rows = {"slice": [], "tier": [], "fastokens": [], "kind": [], "chars": []}
    clock = time.perf_counter
    for r in reqs:
        t0 = clock()
        text = work.text(r.traj, r.call)
        t1 = clock()
        tier.encode(text, session=r.session)
        t2 = clock()
        fast.encode(text, add_special_tokens=False)
        t3 = clock()
        rows["slice"].append(t1 - t0)
        rows["tier"].append(t2 - t1)
        rows["fastokens"].append(t3 - t2)
        rows["kind"].append(r.kind)
        rows["chars"].append(len(text))
    kind = np.array(rows["kind"])
    m = machine.machine_facts()
    print(f"# {args.tokenizer}, {len(reqs)} requests of experiment 09's mixture (seed 0), "
          f"{m['cpu']} x {m['cores']} @ {m['commit'][:7]}; microseconds per request")
    print(f"# session starts: {int((kind == 'init').sum())} ({(kind == 'init').mean():.1%}); "
          f"median context {int(np.median(rows['chars'])):,} chars, mean {int(np.mean(rows['chars'])):,}")
    print(f"{'part':12s} {'kind':6s} {'P50':>9s} {'mean':>9s} {'share of mean':>14s}")
    for part in ("slice", "tier", "fastokens"):
        v = np.array(rows[part]) * 1e6
        for k in ("all", "cont", "init"):
            sel = v if k == "all" else v[kind == k]
            if not sel.size:
                continue
            share = sel.sum() / v.sum() if k != "all" else 1.0
            print(f"{part:12s} {k:6s} {np.median(sel):9.1f} {sel.mean():9.1f} {share:14.1%}")
    t, f = np.mean(rows["tier"]), np.mean(rows["fastokens"])
    s = np.mean(rows["slice"])
    print(f"# mean CPU ratio fastokens / tier: {f / t:.2f}x (with the text slice in both: "
          f"{(f + s) / (t + s):.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
