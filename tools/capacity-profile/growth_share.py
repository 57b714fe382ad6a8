"""How much of the tier's time in experiment 09's mixture goes to appends that grow the
session's record arrays, and what a growth costs, in one process.

Replays the seeded request mixture (``toktier.loadgen.MixtureSource``: all 500 trajectories,
64 live sessions, the warm-up as experiment 09) through one ``Tier`` (verifier off), and for
each continuation records its appended characters, its time, whether the compiled first
window wrote the splice (``Tier._append``'s common path), and whether the call grew the
arrays (``SessionState.reserve``, timed with the thread's minor page faults).

``TOKTIER_HOME=data/build .venv/bin/python tools/capacity-profile/growth_share.py [--requests N]``
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np


def main() -> int:
    import toktier
    from toktier import store as store_mod
    from toktier import tier as tier_mod
    from toktier.bench import machine
    from toktier.bench.streams import load_trajectories
    from toktier.loadgen import MixtureSource, build_workload
    from toktier.workload.archives import find_archive

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--tokenizer", default="llama3")
    args = ap.parse_args()
    work = build_workload(load_trajectories(find_archive("mini-swe-agent")), args.tokenizer)
    tier = toktier.Tier(toktier.load(args.tokenizer), verify_rate=0.0)
    src = MixtureSource(work, live=64, seed=0)
    held: dict[str, int] = {}
    for r in src.warm():
        text = work.text(r.traj, r.call)
        tier.encode(text, session=r.session)
        held[r.session] = len(text)
    reqs = [src.next() for _ in range(args.requests)]

    growths: list[tuple[int, float, int]] = []  # (new capacity, µs, minor faults)
    reserve = store_mod.SessionState.reserve
    faults = lambda: resource.getrusage(resource.RUSAGE_THREAD).ru_minflt  # noqa: E731

    def timed_reserve(state, need):
        cap, f0, t0 = len(state.ids), faults(), time.perf_counter()
        reserve(state, need)
        if len(state.ids) != cap:
            growths.append((len(state.ids), (time.perf_counter() - t0) * 1e6, faults() - f0))

    store_mod.SessionState.reserve = timed_reserve
    first_window = tier_mod._FIRST_WINDOW_APPEND
    rows = []  # (appended chars, µs, first window wrote it, grew)
    for r in reqs:
        text = work.text(r.traj, r.call)
        old, n_growths, fw = held.get(r.session), len(growths), tier._counts[first_window]
        t0 = time.perf_counter()
        tier.encode(text, session=r.session)
        us = (time.perf_counter() - t0) * 1e6
        held[r.session] = len(text)
        if r.kind == "cont" and old is not None and len(text) >= old:
            rows.append((len(text) - old, us, tier._counts[first_window] != fw,
                         len(growths) > n_growths))  # fmt: skip
    store_mod.SessionState.reserve = reserve

    facts = machine.machine_facts()
    print(f"# {args.tokenizer}, {len(reqs)} requests of experiment 09's mixture (seed 0), "
          f"{facts['cpu']} x {facts['cores']} @ {facts['commit'][:7]}; microseconds")  # fmt: skip
    app, us, fast, grew = (np.array(column) for column in zip(*rows, strict=True))
    total = us.sum()
    print(f"continuations {len(rows)}; growing {grew.sum()} ({grew.mean():.1%}), "
          f"{us[grew].sum() / total:.1%} of the continuations' time")  # fmt: skip
    caps, g, fl = (np.array(column) for column in zip(*growths, strict=True))
    print(f"reserve (all {len(growths)} growths, session starts' included): P50 {np.median(g):.1f}, "
          f"mean {g.mean():.1f}; minor faults P50 {np.median(fl):.0f}, mean {fl.mean():.1f}; "
          f"new capacity P50 {np.median(caps):.0f} records")  # fmt: skip
    print(f"{'appended chars':>16} {'kind':34} {'n':>5} {'P50':>7} {'mean':>7} {'time share':>10}")
    for lo, hi in ((0, 1024), (1024, 4096), (4096, 16384), (16384, 1 << 62)):
        band = (app >= lo) & (app < hi)
        label = f"{lo:,}-{hi:,}" if hi < 1 << 62 else f">= {lo:,}"
        for kind, sel in (("all", band), ("first window wrote it, no growth", band & fast & ~grew),
                          ("grew the arrays", band & grew)):  # fmt: skip
            if sel.any():
                print(f"{label:>16} {kind:34} {sel.sum():5d} {np.median(us[sel]):7.1f} "
                      f"{us[sel].mean():7.1f} {us[sel].sum() / total:10.1%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
