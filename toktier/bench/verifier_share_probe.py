"""The tier's capacity with its shadow verifier unbounded, held to a CPU share, or off.

An unbounded verifier re-encodes every sample it can take with the reference (tens of
milliseconds for a long context); at 5% sampling under load it takes a whole core from
the repair worker it shadows and from the load generator on the same machine.  This
probe runs experiment 09's Poisson ladder for one repair worker (llama3, the recorded
mixture of all trajectories) with ``verify_cpu_share`` = 0.25 (the default), 1.0 (no
pauses) and the verifier off, alternated ``--repeats`` times on one machine state.
``python -m toktier.bench.verifier_share_probe [--loads 1600,2400,3200,4800] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json

from . import machine
from . import tail_capacity as tc

VARIANTS = (("verifier 5%, cpu_share 0.25", 0.05, 0.25),
            ("verifier 5%, cpu_share 1.0 (unbounded)", 0.05, 1.0),
            ("verifier off", 0.0, 1.0))  # fmt: skip
KEYS = ("offered_rps", "p50_ms", "p99_ms", "service_p50_ms", "service_p99_ms",
        "generator_late_p99_ms", "backlogged")  # fmt: skip


def run(trajs, loads, duration_s: float, repeats: int, tokenizer: str = "llama3") -> list[dict]:
    rows = []
    for rep in range(repeats):
        for name, rate, share in VARIANTS:
            cfg = [{"name": name, "mode": "tier", "workers": 1}]
            got, verifier = tc.capacity_sweep(
                trajs, tokenizer, configs=cfg, loads={"tier": loads}, duration_s=duration_s,
                max_context_chars=None, verify_rate=rate, progress=False, stop_ms=float("inf"),
                tier_kw={"verify_cpu_share": share},
            )  # fmt: skip
            for r in got:
                rows.append({"variant": name, "repeat": rep, **{k: r[k] for k in KEYS},
                             "verifier": verifier.get(name, {})})  # fmt: skip
                print(f"{name:40s} {r['offered_rps']:6.0f} req/s  P50 {r['p50_ms']:8.2f}  "
                      f"P99 {r['p99_ms']:8.1f} ms", flush=True)  # fmt: skip
    return rows


def main(argv=None) -> int:
    from ..workload.archives import find_archive
    from .streams import load_trajectories

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", default="1600,2400,3200,4800")
    ap.add_argument("--duration", type=float, default=8.0, help="seconds per load point")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    loads = [float(x) for x in args.loads.split(",")]
    archive = find_archive("mini-swe-agent")
    if archive is None:
        raise SystemExit("no mini-swe-agent archive: run `toktier build` (or fetch-data) first")
    rows = run(load_trajectories(archive), loads, args.duration, args.repeats)
    out = {"machine": machine.machine_facts(), "loads": loads, "duration_s": args.duration,
           "repeats": args.repeats, "rows": rows}  # fmt: skip
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
