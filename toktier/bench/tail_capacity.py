"""Experiment 09: sojourn tails and capacity of the tier vs stateless front ends (paper §6.5).

Every configuration sees the same seeded request sequence (Poisson over the
trajectories' request mixture, or recorded-gap burst replay) on the same
machine in one run.  The load generator runs in this process; the workers are
separate processes, so on a small machine the generator takes CPU too -- the
outputs record the core count.
"""

from __future__ import annotations

import time

import numpy as np
from tqdm.auto import tqdm

from .. import loadgen
from ..serving import WorkerPool
from .timing import private_engine

DEFAULT_CONFIGS = (
    {"name": "stateless reference, 1 worker", "mode": "reference", "workers": 1},
    {"name": "stateless reference, 2 workers", "mode": "reference", "workers": 2},
    {"name": "stateless fastokens, 2 workers", "mode": "fastokens", "workers": 2},
    {"name": "toktier, 1 repair worker", "mode": "tier", "workers": 1},
    {"name": "toktier, 2 repair workers", "mode": "tier", "workers": 2},
)


def _p(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q) * 1e3) if x.size else float("nan")


def _summary(out: dict) -> dict:
    soj = out["sojourn_s"]
    init, cont = out["kind"] == "init", out["kind"] == "cont"
    return {
        "requests": len(soj),
        "completed": int(out["done"].sum()),
        "errors": int(out["errors"]),
        "p50_ms": _p(soj, 50),
        "p99_ms": _p(soj, 99),
        "p99_init_ms": _p(soj[init], 99),
        "p99_cont_ms": _p(soj[cont], 99),
        "service_p50_ms": _p(out["service_s"][out["done"]], 50),
        "service_p99_ms": _p(out["service_s"][out["done"]], 99),
        "init_share": float(init.mean()) if len(soj) else 0.0,
        "backlogged": bool((~out["done"]).any()),
        "generator_late_p50_ms": _p(out["late_s"], 50),
        "generator_late_p99_ms": _p(out["late_s"], 99),
    }


def _cpu_columns(generator_s: float, workers_s: float, wall_s: float, n: int) -> dict:
    """Where a point's CPU went: the generator process (sending, collecting) and the worker
    processes (serving, their verifiers, reading requests), per request and in cores."""
    n = max(n, 1)
    return {
        "generator_cpu_us_per_req": generator_s / n * 1e6,
        "workers_cpu_us_per_req": workers_s / n * 1e6,
        "generator_cores": generator_s / wall_s,
        "workers_cores": workers_s / wall_s,
    }


def _service_sample(out: dict, k: int = 2000, seed: int = 0) -> list[float]:
    """Up to ``k`` per-request service times (ms) of a point, for distribution plots."""
    s = out["service_s"][out["done"]] * 1e3
    if s.size > k:
        s = np.random.default_rng(seed).choice(s, size=k, replace=False)
    return [round(float(x), 4) for x in s]


def worker_tier_kw(tier_kw: dict | None, workers: int) -> dict:
    """Each repair worker's ``Tier`` arguments: ``verify_cpu_share`` is the front end's
    verification budget, split evenly over its workers, so a tier with more workers does
    not verify with more of the machine (each worker's verifier is its own thread)."""
    kw = dict(tier_kw or {})
    if "verify_cpu_share" in kw:
        kw["verify_cpu_share"] = kw["verify_cpu_share"] / workers
    return kw


def _pool(cfg, tokenizer_name, work, verify_rate, tier_kw=None, pin_cores=False):
    return WorkerPool(
        cfg["mode"], tokenizer_name, work, workers=cfg["workers"], verify_rate=verify_rate,
        tier_kw=worker_tier_kw(tier_kw, cfg["workers"]), pin_cores=pin_cores,
    )


def _verifier_totals(pool: WorkerPool) -> dict:
    keys = ("sampled", "checked", "mismatches", "dropped", "errors")
    stats = pool.stats()
    out = {k: sum(s["verifier"][k] for s in stats if "verifier" in s) for k in keys}
    out["route_gpu"] = sum(s.get("route_gpu", 0) for s in stats)
    return out


def capacity_sweep(
    trajs,
    tokenizer_name: str,
    *,
    configs=DEFAULT_CONFIGS,
    loads: dict[str, list[float]],
    duration_s: float,
    max_context_chars: int | None,
    verify_rate: float = 0.05,
    live_sessions: int = 64,
    stop_ms: float = 2000.0,
    drain_s: float = 10.0,
    seed: int = 0,
    progress: bool = True,
    tier_kw: dict | None = None,
    pause_gc: bool = True,
    pin_cores: bool = False,
):
    """P99 sojourn vs Poisson offered load per configuration; returns (rows, verifier totals).

    ``tier_kw``: extra ``Tier`` arguments for the tier's workers (``verify_cpu_share`` is
    the whole front end's, split over its workers: ``worker_tier_kw``);
    ``pause_gc``: the generator's garbage collector is off during each point (``loadgen``);
    ``pin_cores``: each worker's serving thread held to one core (``serving.pinned_cores``).

    Each row also carries the generator's lag (``generator_late_*``: when it grows, the
    load generator, not the server, is the bottleneck) and a sample of per-request
    service times (``service_sample_ms``).

    A configuration's ladder stops after its first backlogged point or a P99 above
    ``stop_ms`` (higher loads can only be worse; the time is better spent elsewhere).
    """
    work = loadgen.build_workload(trajs, tokenizer_name, max_context_chars=max_context_chars)
    rows, verifier = [], {}
    for cfg in configs:
        ladder = loads[cfg["mode"]]
        with _pool(cfg, tokenizer_name, work, verify_rate, tier_kw, pin_cores) as pool:
            src = loadgen.MixtureSource(work, live=live_sessions, seed=seed)
            loadgen.closed_loop(pool, src.warm())
            bar = tqdm(ladder, desc=cfg["name"], disable=not progress, leave=False)
            for i, rate in enumerate(bar):
                offs = loadgen.poisson_offsets(rate, duration_s, seed=seed + i)
                sched = [(float(o), src.next()) for o in offs]
                t0, cpu0, wcpu0 = time.perf_counter(), time.process_time(), pool.cpu_seconds()
                out = loadgen.run_open_loop(pool, sched, drain_s=drain_s, pause_gc=pause_gc)
                wall = time.perf_counter() - t0
                cpu, wcpu = time.process_time() - cpu0, pool.cpu_seconds() - wcpu0
                row = {"config": cfg["name"], "mode": cfg["mode"], "workers": cfg["workers"],
                       "offered_rps": rate, "wall_s": wall, **_summary(out),
                       **_cpu_columns(cpu, wcpu, wall, len(sched))}  # fmt: skip
                row["achieved_rps"] = row["completed"] / duration_s
                row["service_sample_ms"] = _service_sample(out, seed=seed + i)
                rows.append(row)
                bar.set_postfix(p99_ms=f"{row['p99_ms']:.1f}")
                if row["backlogged"] or row["p99_ms"] > stop_ms:
                    break
            if cfg["mode"] == "tier":
                verifier[cfg["name"]] = _verifier_totals(pool)
    return rows, verifier


def capacity(rows: list[dict], objective_ms: float) -> dict[str, float]:
    """Per configuration: the highest offered load whose P99 meets the objective (0: none)."""
    out: dict[str, float] = {}
    for r in rows:
        out.setdefault(r["config"], 0.0)
        if not r["backlogged"] and r["p99_ms"] <= objective_ms:
            out[r["config"]] = max(out[r["config"]], r["offered_rps"])
    return out


def burst_tails(
    trajs,
    tokenizer_name: str,
    *,
    configs=DEFAULT_CONFIGS,
    scenarios: int,
    sessions: int,
    calls: int,
    window_s: float,
    compression: float,
    max_context_chars: int | None,
    verify_rate: float = 0.05,
    drain_s: float = 30.0,
    seed: int = 0,
    progress: bool = True,
    tier_kw: dict | None = None,
) -> list[dict]:
    """Initialization and continuation P99 per recorded-gap burst scenario and configuration."""
    work = loadgen.build_workload(trajs, tokenizer_name, max_context_chars=max_context_chars)
    rows = []
    for cfg in configs:
        with _pool(cfg, tokenizer_name, work, verify_rate, tier_kw) as pool:
            for s in tqdm(range(scenarios), desc=f"bursts: {cfg['name']}", disable=not progress):
                sched = loadgen.burst_schedule(
                    work, trajs, sessions=sessions, calls=calls, window_s=window_s,
                    compression=compression, seed=seed + s,
                )  # fmt: skip
                out = loadgen.run_open_loop(pool, sched, drain_s=drain_s)
                rows.append({"config": cfg["name"], "mode": cfg["mode"], "workers": cfg["workers"],
                             "scenario": s, **_summary(out)})  # fmt: skip
    return rows


def verifier_overhead(tok, trajs, *, sessions: int, appends: int, context_chars: int, rate=0.05):
    """Repair latency with the verifier off and at ``rate``, interleaved on identical requests.

    Also times ``offer`` itself (the only request-path work the verifier adds).
    """
    from ..bench.streams import natural_cell
    from ..tier import Tier
    from ..verifier import ShadowVerifier

    cells = [
        natural_cell(trajs, tok.name, context_chars, appends, start=7 * s) for s in range(sessions)
    ]
    # each its own engine: the second would otherwise find the first's pieces cached
    tiers = {
        0.0: Tier(tok, engine=private_engine(tok), verify_rate=0),
        rate: Tier(tok, engine=private_engine(tok), verify_rate=rate),
    }
    lat: dict[float, list[float]] = {0.0: [], rate: []}
    for k, cell in enumerate(cells):
        for tier in tiers.values():
            tier.encode(cell.prefix, session=f"s{k}")
        for a in cell.appends:
            for r, tier in tiers.items():
                t0 = time.perf_counter()
                tier.append(f"s{k}", a)
                lat[r].append(time.perf_counter() - t0)
    on = tiers[rate]
    st = on.verifier.stats()
    on.shutdown()
    off_p50 = float(np.median(lat[0.0]) * 1e3)
    on_p50 = float(np.median(lat[rate]) * 1e3)
    # the offer alone, on the last session's state: sampled and unsampled calls together
    state = on.store.get(f"s{len(cells) - 1}")
    ids = state.ids[: state.n]
    probe = ShadowVerifier(tok, rate=rate, reference=lambda _text: ids, queue_size=1 << 20, seed=1)
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        probe.offer(ids, state.text_parts, "repair", "s", owned=True)  # as Tier offers a result
    offer_ms = (time.perf_counter() - t0) / n * 1e3
    probe.close()
    return {
        "rate": rate,
        "requests": len(lat[0.0]),
        "repair_p50_ms_off": off_p50,
        "repair_p50_ms_on": on_p50,
        "p50_ratio": on_p50 / off_p50,
        "offer_mean_ms": offer_ms,
        "offer_share_of_repair_p50": offer_ms / off_p50,
        "verifier": st,
    }


def load_configs(workers: list[int], *, fastokens: bool | None = None) -> list[dict]:
    """Experiment 09's front ends: the stateless reference at each worker count, stateless
    fastokens at the largest (when installed), and the tier at each worker count."""
    if fastokens is None:
        try:
            import fastokens as _  # noqa: F401

            fastokens = True
        except ImportError:
            fastokens = False

    def plural(w: int) -> str:
        return "s" * (w > 1)

    out = [{"name": f"stateless reference, {w} worker{plural(w)}", "mode": "reference",
            "workers": w} for w in workers]  # fmt: skip
    if fastokens:
        w = max(workers)
        out.append({"name": f"stateless fastokens, {w} worker{plural(w)}", "mode": "fastokens",
                    "workers": w})  # fmt: skip
    out += [{"name": f"toktier, {w} repair worker{plural(w)}", "mode": "tier", "workers": w}
            for w in workers]  # fmt: skip
    return out


def capacity_ratios(rows: list[dict], configs: list[dict], objectives_ms, ladder_top: float):
    """Per objective: the tier's capacity (its largest worker count), the stateless peers' at
    the same cores, the ratios, and whether the tier stopped at the top of its load ladder
    (then the ratio is a lower bound) with the load generator's own lag there."""
    names = {m: [c["name"] for c in configs if c["mode"] == m] for m in ("reference", "tier")}
    fast = next((c["name"] for c in configs if c["mode"] == "fastokens"), None)
    tier, same_cores, ref1 = names["tier"][-1], names["reference"][-1], names["reference"][0]
    out = {}
    for o in objectives_ms:
        per = capacity(rows, o)
        t = per.get(tier, 0.0)
        r = {
            "tier": t,
            "stateless reference, same cores": per.get(same_cores, 0.0),
            "ratio vs same cores": t / per[same_cores] if per.get(same_cores) else float("inf"),
            "stateless reference, 1 worker": per.get(ref1, 0.0),
        }
        if fast is not None:
            r["stateless fastokens, same cores"] = per.get(fast, 0.0)
            r["ratio vs fastokens"] = t / per[fast] if per.get(fast) else float("inf")
        at = [x for x in rows if x["config"] == tier and x["offered_rps"] == t]
        r["tier: generator lag P99 at that load (ms)"] = (
            float(at[0]["generator_late_p99_ms"]) if at else float("nan")
        )
        r["tier at the top of its ladder"] = t >= ladder_top
        out[f"{o} ms"] = r
    return out
