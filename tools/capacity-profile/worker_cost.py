"""Where a repair worker's CPU per request goes under experiment 09's mixture, in one process.

Capacity follows the *mean* CPU per request, not the service-time P50 that the tables show:
this replays the seeded request mixture of ``toktier.loadgen.MixtureSource`` (all 500
trajectories, 64 live sessions) through one ``Tier`` and one fastokens object, timing per
request the request's text (the worker slices it out of the recorded transcript) and the
front end's call (each front end in its own pass over the same requests), split by kind
(session start vs continuation).  No pipes, no verifier.

``TOKTIER_HOME=data/build .venv/bin/python tools/capacity-profile/worker_cost.py [--requests N]``

``--by-append`` adds the continuations split by how many characters each appends: the tier's
work follows the append, fastokens' the context, so the mixture's append sizes bound the
capacity ratio that no Python trim can move.
"""

from __future__ import annotations

import argparse
import itertools
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
    ap.add_argument("--by-append", action="store_true",
                    help="continuations by appended characters (tier vs fastokens with .ids)")
    args = ap.parse_args()
    trajs = load_trajectories(find_archive("mini-swe-agent"))
    work = build_workload(trajs, args.tokenizer)
    tok = toktier.load(args.tokenizer)
    tier = toktier.Tier(tok, verify_rate=0.0)
    fast = fastokens.Tokenizer.from_file(tok.checked_path())
    src = MixtureSource(work, live=64, seed=0)
    held: dict[str, int] = {}  # each session's stored length: what a continuation appends to
    for r in src.warm():  # the sessions' first calls, before timing (as experiment 09)
        text = work.text(r.traj, r.call)
        tier.encode(text, session=r.session)
        held[r.session] = len(text)
    reqs = [src.next() for _ in range(args.requests)]
    fast.encode(work.text(reqs[0].traj, reqs[0].call), add_special_tokens=False)
    rows = {"slice": [], "tier": [], "fastokens": [], "kind": [], "chars": [], "appended": []}
    clock = time.perf_counter
    # Each front end in its own pass, as each has its own worker processes in experiment 09:
    # alternating them per request let fastokens' 48K-character encodes evict the tier's
    # session arrays and piece caches between its requests (the tier read 123 us a request
    # interleaved, 65-80 alone, Intel VM 2026-12-02; fastokens 324 either way).
    for r in reqs:
        t0 = clock()
        text = work.text(r.traj, r.call)
        t1 = clock()
        tier.encode(text, session=r.session)
        t2 = clock()
        before = held.get(r.session)
        rows["appended"].append(len(text) - before if r.kind == "cont" and before is not None
                                and before <= len(text) else -1)  # fmt: skip
        held[r.session] = len(text)
        rows["slice"].append(t1 - t0)
        rows["tier"].append(t2 - t1)
        rows["kind"].append(r.kind)
        rows["chars"].append(len(text))
    for r in reqs:
        text = work.text(r.traj, r.call)
        t2 = clock()
        if args.by_append:
            len(fast.encode(text, add_special_tokens=False).ids)  # as the stateless workers do
        else:
            fast.encode(text, add_special_tokens=False)
        rows["fastokens"].append(clock() - t2)
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
    if args.by_append:
        by_append(rows)
    return 0


def by_append(rows) -> None:
    """Continuations by appended characters: count, the tier's and fastokens' mean, and what
    each bucket adds to the tier's mean per request (known appends only: a session's first
    timed continuation after its warm-up call counts, since the warm-up length is tracked)."""
    app = np.array(rows["appended"])
    tier = np.array(rows["tier"]) * 1e6
    fast = np.array(rows["fastokens"]) * 1e6
    known = app >= 0
    print(f"# continuations with a known append: {int(known.sum())}; appended characters "
          f"P50 {int(np.median(app[known])):,}, mean {int(app[known].mean()):,}")
    print(f"{'appended chars':>16s} {'share':>7s} {'tier P50':>9s} {'tier mean':>10s} "
          f"{'ns/char':>8s} {'fastokens+ids':>14s} {'ratio':>6s} {'of tier mean':>13s}")
    edges = [0, 256, 1024, 4096, 16384, 1 << 40]
    for lo, hi in itertools.pairwise(edges):
        sel = known & (app >= lo) & (app < hi)
        if not sel.any():
            continue
        t, f = tier[sel], fast[sel]
        label = f"{lo:,}-{hi:,}" if hi < 1 << 40 else f">= {lo:,}"
        print(f"{label:>16s} {sel.mean():7.1%} {np.median(t):9.1f} {t.mean():10.1f} "
              f"{1e3 * t.sum() / max(app[sel].sum(), 1):8.1f} {f.mean():14.1f} "
              f"{f.mean() / t.mean():6.2f} {t.sum() / tier[known].sum():13.1%}")
    print("# ns/char: the tier's time over the characters appended (its work follows the append);"
          " ratio: fastokens+ids mean / tier mean in the bucket")


if __name__ == "__main__":
    raise SystemExit(main())
