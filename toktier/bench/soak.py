"""Soak: sessions churning for a long time through the multi-process front end (issue #13).

Poisson arrivals at ``rate`` per second for ``duration_s`` go to a ``WorkerPool`` of tier
workers, each with a TTL and a memory budget (``max_bytes``).  Requests are drawn from
the recorded mixture (``loadgen.MixtureSource``: session starts and continuations of
real trajectories); a share become mid-context edits, a share close their session (a
new one takes its place), and sessions that finish their trajectory are simply
abandoned, so the TTL must reclaim them.  Halfway, worker 0 is killed and restarted
empty.  Every ``probe_s`` seconds each worker reports its RSS, live sessions, session
bytes and counters (``WorkerPool.probe``); the shadow verifier samples throughout.

What must hold (``verdict``): RSS plateaus (the last third grows by less than
``plateau_tolerance`` over its start), session bytes stay under the budget, no request
errors, and the verifier finds 0 mismatches.  A benchmark, not a test: it takes minutes.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
from tqdm.auto import tqdm

from .. import loadgen
from ..serving import Request, WorkerPool


def soak(
    trajs,
    tokenizer_name: str,
    *,
    duration_s: float = 600.0,
    rate: float = 100.0,
    workers: int = 2,
    live: int = 256,
    ttl_s: float = 30.0,
    max_bytes: int = 128 << 20,
    verify_rate: float = 0.05,
    edit_share: float = 0.05,
    close_share: float = 0.02,
    kill_at: float = 0.5,
    probe_s: float = 5.0,
    max_context_chars: int | None = 400_000,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Run the soak; returns {"params", "probes" (rows), "requests", "verifier", ...}."""
    work = loadgen.build_workload(trajs, tokenizer_name, max_context_chars=max_context_chars)
    rng = np.random.default_rng(seed)
    src = loadgen.MixtureSource(work, live=live, seed=seed)
    offsets = loadgen.poisson_offsets(rate, duration_s, seed=seed)
    tier_kw = {"ttl_s": ttl_s, "max_bytes": max_bytes, "delta_aware": False}
    counts = {"sent": 0, "done": 0, "errors": 0, "edit": 0, "close": 0, "init": 0, "cont": 0}
    paths: dict[str, int] = {}
    probes: list[dict] = []
    errors: list[str] = []

    def drain(pool, timeout=0.0):
        got = pool.ready()
        deadline = time.monotonic() + timeout
        while counts["done"] + len(got) < counts["sent"] and time.monotonic() < deadline:
            got += pool.results(counts["sent"] - counts["done"] - len(got), 1.0)
        for d in got:
            counts["done"] += 1
            paths[d.path] = paths.get(d.path, 0) + 1
            if d.error:
                counts["errors"] += 1
                errors.append(d.error)

    def take_probe(pool, t):
        for slot, info in sorted(pool.probe().items()):
            probes.append({"t_s": t, "worker": slot, "rss_mb": info["rss_bytes"] / 2**20,
                           "sessions": info.get("sessions", 0),
                           "state_mb": info.get("bytes", 0) / 2**20,
                           "expired": info.get("expired", 0), "evicted": info.get("evicted", 0),
                           "closed": info.get("closed", 0),
                           "requests": info.get("requests", 0)})  # fmt: skip

    killed_at = None
    with WorkerPool("tier", tokenizer_name, work, workers=workers, verify_rate=verify_rate,
                    tier_kw=tier_kw) as pool:  # fmt: skip
        loadgen.closed_loop(pool, src.warm())
        t0 = time.perf_counter()
        next_probe = 0.0
        bar = tqdm(total=int(duration_s), desc="soak (s)", disable=not progress)
        for off in offsets:
            while (now := time.perf_counter() - t0) < off:
                time.sleep(min(0.002, off - now))
            if now >= next_probe:
                take_probe(pool, now)
                next_probe = now + probe_s
                bar.n = int(now)
                bar.refresh()
            if killed_at is None and now >= kill_at * duration_s:
                pool.kill(0)
                pool.check_workers()
                killed_at = now
            u = rng.random()
            if u < close_share:  # close a live session; a fresh one takes its place
                i = int(rng.integers(len(src.sessions)))
                s = src.sessions[i]
                src._rid += 1
                req = Request(src._rid, f"v{s[0]}", s[1], max(0, s[2] - 1), "close")
                src.sessions[i] = src._fresh(False)
            else:
                req = src.next()
                if req.kind == "cont" and u < close_share + edit_share:
                    req = dataclasses.replace(req, kind="edit")
            req = dataclasses.replace(req, t_sched=t0 + off)
            pool.submit(req)
            counts["sent"] += 1
            counts[req.kind] += 1
            if counts["sent"] % 64 == 0:
                drain(pool)
        bar.close()
        drain(pool, 60.0)
        take_probe(pool, time.perf_counter() - t0)
        final = pool.stats()
        restarts = pool.restarts
    verifier = {k: sum(s["verifier"][k] for s in final if "verifier" in s)
                for k in ("sampled", "checked", "mismatches", "dropped", "errors")}  # fmt: skip
    run = {
        "params": {"tokenizer": tokenizer_name, "duration_s": duration_s, "rate": rate,
                   "workers": workers, "live": live, "ttl_s": ttl_s, "max_bytes": max_bytes,
                   "verify_rate": verify_rate, "edit_share": edit_share,
                   "close_share": close_share, "kill_at": kill_at, "probe_s": probe_s,
                   "max_context_chars": max_context_chars, "seed": seed},
        "killed_at_s": killed_at, "restarts": restarts, "requests": counts, "paths": paths,
        "errors_sample": errors[:10], "verifier": verifier, "probes": probes,
        "final_stats": final,
    }  # fmt: skip
    run["verdict"] = verdict(run)
    return run


def verdict(run: dict, plateau_tolerance: float = 0.10) -> dict:
    """Plateau (per worker, last third vs its start), budget, errors, mismatches."""
    import pandas as pd

    df = pd.DataFrame(run["probes"])
    budget_mb = run["params"]["max_bytes"] / 2**20
    out = {"state_under_budget": bool((df["state_mb"] <= budget_mb + 1e-9).all()),
           "errors": run["requests"]["errors"], "mismatches": run["verifier"]["mismatches"]}  # fmt: skip
    t_end = df["t_s"].max()
    growth = {}
    for w, g in df[df["t_s"] >= 2 * t_end / 3].groupby("worker"):
        g = g.sort_values("t_s")
        growth[int(w)] = float(g["rss_mb"].iloc[-1] / g["rss_mb"].iloc[0] - 1.0)
    out["rss_growth_last_third"] = growth
    out["rss_plateau"] = bool(all(v <= plateau_tolerance for v in growth.values()))
    out["rss_max_mb"] = float(df["rss_mb"].max())
    out["passed"] = bool(out["state_under_budget"] and out["rss_plateau"] and not out["errors"]
                         and not out["mismatches"])  # fmt: skip
    return out


def plot(run: dict, path) -> None:
    """RSS and session state per worker over time, budget and kill marked; sessions and churn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from .palette import COLORS

    df = pd.DataFrame(run["probes"])
    p = run["params"]
    budget_mb = p["max_bytes"] / 2**20
    colors = [COLORS["toktier, 2 repair workers"], COLORS["toktier, 1 repair worker"]]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for w, g in df.groupby("worker"):
        c = colors[int(w) % len(colors)]
        axes[0].plot(g["t_s"] / 60, g["rss_mb"], color=c, label=f"worker {w}")
        axes[1].plot(g["t_s"] / 60, g["state_mb"], color=c, label=f"worker {w}")
        axes[2].plot(g["t_s"] / 60, g["sessions"], color=c, label=f"worker {w}: live sessions")
        axes[2].plot(g["t_s"] / 60, g["expired"], color=c, ls="--",
                     label=f"worker {w}: expired (cumulative)")  # fmt: skip
    axes[1].axhline(budget_mb, color="0.3", ls=":", label=f"budget ({budget_mb:.0f} MiB)")
    for ax in axes:
        if run.get("killed_at_s") is not None:
            ax.axvline(run["killed_at_s"] / 60, color="#d55e00", ls="-.", lw=1,
                       label="worker 0 killed")  # fmt: skip
        ax.set_xlabel("time (minutes)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylim(bottom=0)  # from zero: a plateau should look like one
    axes[1].set_ylim(bottom=0)
    axes[0].set_ylabel("resident set size (MiB)")
    axes[0].set_title("(a) worker RSS")
    axes[1].set_ylabel("session state (MiB)")
    axes[1].set_title("(b) session state vs budget")
    axes[2].set_ylabel("sessions")
    axes[2].set_title(f"(c) live and expired sessions (TTL {p['ttl_s']:.0f} s)")
    for ax in axes:
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(
        f"Soak: {p['tokenizer']}, {p['rate']:.0f} req/s for {p['duration_s'] / 60:.0f} min, "
        f"{p['workers']} tier workers, verifier {p['verify_rate']:.0%}"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
