"""A/B of experiment 09's harness and tier settings: each variant's Poisson ladder, the
variants alternated on one machine state (a repeat's variants see the same seed).

- ``--ab verifier``: the shadow verifier at 5% held to ``verify_cpu_share`` 0.25 (the
  default), unbounded (1.0), and off.  An unbounded verifier re-encodes every sample it
  can take with the reference (tens of milliseconds for a long context); under load it
  takes a whole core from the repair worker it shadows and from the load generator.
- ``--ab gc``: the load generator with its garbage collector paused during each point
  (``loadgen.paused_gc``, the default) or running.
- ``--ab split``: two repair workers whose verifiers share one quarter core (0.125 each)
  or take a quarter core each.
- ``--ab floor``: the harness alone (``serving`` mode ``"null"``: each request's text is
  made and answered with no IDs), one and two workers, beside the one-worker tier with its
  verifier off: the CPU per request a front end pays before it tokenizes anything, and the
  capacity no front end can pass on this machine.  ``--loads 'null=...;tier=...'``.
- ``--ab pin``: each front end with its workers' serving threads held to one core each
  (``WorkerPool(pin_cores=True)``: one worker on the core the load generator is not
  steered to) and free: on two cores the generator, a worker and its verifier otherwise
  share both cores' caches as the scheduler moves them.
  ``--loads 'fastokens=...;tier=...'``.
- ``--ab knee``: fastokens (two workers) and the tier (one and two repair workers) on
  finer ladders around their knees, repeated with different seeds: experiment 09's ladder
  steps (800 -> 1,200 req/s for fastokens) are too coarse to tell a 2.7x from a 4x.  The
  knees move with the machine (fastokens 1,200 on the Intel VM, 2,400 on the AMD VM of
  2026-12-02): ``--loads 'fastokens=1600,2000,2400;tier=6400,8000,9600'`` puts each front
  end's ladder where its own knee is.

llama3, the recorded mixture of all trajectories.
``python -m toktier.bench.capacity_ab --ab verifier [--loads 1600,2400,3200,4800] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json

from ..serving import MODES
from . import machine
from . import tail_capacity as tc

# name -> (mode, workers, verify_rate, the front end's verify_cpu_share, pause_gc[, pin_cores]);
# the front end's share is split over its repair workers (tail_capacity.worker_tier_kw)
VARIANTS = {
    "verifier": {
        "verifier 5%, cpu_share 0.25": ("tier", 1, 0.05, 0.25, True),
        "verifier 5%, cpu_share 1.0 (unbounded)": ("tier", 1, 0.05, 1.0, True),
        "verifier off": ("tier", 1, 0.0, 1.0, True),
    },
    "gc": {
        "generator gc paused": ("tier", 1, 0.05, 0.25, True),
        "generator gc running": ("tier", 1, 0.05, 0.25, False),
    },
    "split": {
        "2 workers, verifiers 0.125 core each": ("tier", 2, 0.05, 0.25, True),
        "2 workers, verifiers 0.25 core each": ("tier", 2, 0.05, 0.5, True),
    },
    "floor": {
        "harness alone (no tokenizer), 1 worker": ("null", 1, 0.0, 0.25, True),
        "harness alone (no tokenizer), 2 workers": ("null", 2, 0.0, 0.25, True),
        "toktier, 1 repair worker, verifier off": ("tier", 1, 0.0, 0.25, True),
    },
    "pin": {
        "stateless fastokens, 2 workers": ("fastokens", 2, 0.05, 0.25, True, False),
        "stateless fastokens, 2 workers, pinned": ("fastokens", 2, 0.05, 0.25, True, True),
        "toktier, 1 repair worker": ("tier", 1, 0.05, 0.25, True, False),
        "toktier, 1 repair worker, pinned": ("tier", 1, 0.05, 0.25, True, True),
        "toktier, 2 repair workers": ("tier", 2, 0.05, 0.25, True, False),
        "toktier, 2 repair workers, pinned": ("tier", 2, 0.05, 0.25, True, True),
    },
    "knee": {
        "stateless fastokens, 2 workers": ("fastokens", 2, 0.05, 0.25, True),
        "toktier, 1 repair worker": ("tier", 1, 0.05, 0.25, True),
        "toktier, 2 repair workers": ("tier", 2, 0.05, 0.25, True),
    },
}
# --ab knee: each front end's ladder around its knee in experiment 09
KNEE_LOADS = {"fastokens": [800.0, 1000.0, 1200.0, 1400.0], "tier": [3200.0, 4000.0, 4800.0]}
KEYS = ("offered_rps", "p50_ms", "p99_ms", "service_p50_ms", "service_p99_ms",
        "generator_late_p50_ms", "generator_late_p99_ms", "backlogged",
        "generator_cpu_us_per_req", "workers_cpu_us_per_req")  # fmt: skip


def selected(ab: str, only: str | None = None) -> dict:
    """The variants of ``--ab ab`` whose name holds ``only`` (all of them without it)."""
    variants = {k: v for k, v in VARIANTS[ab].items() if only is None or only in k}
    if not variants:
        raise SystemExit(f"--only {only!r}: no variant of --ab {ab} ({', '.join(VARIANTS[ab])})")
    return variants


def run(trajs, ab: str, loads, duration_s: float, repeats: int, tokenizer: str = "llama3",
        only: str | None = None):  # fmt: skip
    """``loads``: one ladder for every variant, or {mode: ladder}; ``only``: the variants
    whose name holds this text."""
    rows = []
    variants = selected(ab, only)
    for rep in range(repeats):
        for name, (mode, workers, rate, share, pause_gc, *pin) in variants.items():
            ladder = loads[mode] if isinstance(loads, dict) else loads
            cfg = [{"name": name, "mode": mode, "workers": workers}]
            got, verifier = tc.capacity_sweep(
                trajs, tokenizer, configs=cfg, loads={mode: ladder}, duration_s=duration_s,
                max_context_chars=None, verify_rate=rate, progress=False, stop_ms=float("inf"),
                tier_kw={"verify_cpu_share": share}, pause_gc=pause_gc, seed=rep,
                pin_cores=bool(pin and pin[0]),
            )  # fmt: skip
            for r in got:
                rows.append({"variant": name, "repeat": rep, **{k: r[k] for k in KEYS},
                             "verifier": verifier.get(name, {})})  # fmt: skip
                print(f"{name:40s} {r['offered_rps']:6.0f} req/s  P50 {r['p50_ms']:8.2f}  "
                      f"P99 {r['p99_ms']:8.1f} ms  generator late P99 "
                      f"{r['generator_late_p99_ms']:6.1f} ms", flush=True)  # fmt: skip
    return rows


def parse_loads(spec: str):
    """``1600,2400`` (every variant) or ``fastokens=1600,2000;tier=6400,8000`` (per mode):
    a machine whose knees moved needs each front end's ladder where its own knee is."""
    def ladder(text):
        try:
            out = [float(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise SystemExit(f"--loads: not a list of req/s: {text!r}") from None
        if not out or min(out) <= 0:
            raise SystemExit(f"--loads: a ladder needs positive req/s: {text!r}")
        return out

    if "=" not in spec:
        return ladder(spec)
    modes = {}
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        mode, _, text = part.partition("=")
        if mode.strip() not in MODES:
            raise SystemExit(f"--loads: unknown mode {mode.strip()!r} ({', '.join(MODES)})")
        modes[mode.strip()] = ladder(text)
    return modes


def main(argv=None) -> int:
    from ..workload.archives import find_archive
    from .streams import load_trajectories

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ab", choices=sorted(VARIANTS), required=True)
    ap.add_argument("--loads", default=None,
                    help="comma-separated req/s for every variant (default 1600,2400,3200,4800; "
                    "--ab knee: KNEE_LOADS), or one ladder per mode: "
                    "'fastokens=1600,2000;tier=6400,8000'")
    ap.add_argument("--duration", type=float, default=8.0, help="seconds per load point")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--only", default=None, help="run only the variants whose name holds this")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.loads:
        loads = parse_loads(args.loads)
    else:
        loads = KNEE_LOADS if args.ab == "knee" else [1600.0, 2400.0, 3200.0, 4800.0]
    if isinstance(loads, dict):
        missing = sorted({v[0] for v in selected(args.ab, args.only).values()} - set(loads))
        if missing:
            raise SystemExit(f"--loads: no ladder for {', '.join(missing)} (--ab {args.ab})")
    archive = find_archive("mini-swe-agent")
    if archive is None:
        raise SystemExit("no mini-swe-agent archive: run `toktier build` (or fetch-data) first")
    rows = run(load_trajectories(archive), args.ab, loads, args.duration, args.repeats,
               only=args.only)  # fmt: skip
    out = {"machine": machine.machine_facts(), "ab": args.ab, "loads": loads,
           "duration_s": args.duration, "repeats": args.repeats, "rows": rows}  # fmt: skip
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
