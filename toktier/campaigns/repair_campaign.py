"""The repair certification: oracle + adversarial + replay, for every registered tokenizer."""

from __future__ import annotations

import sys
import time

from ..registry import load
from ..workload import trajectories as trajmod
from . import adversarial, oracle, replay


def certify_repair(
    names: list[str],
    *,
    oracle_trials: int,
    adversarial_examples: int,
    replay_sessions: int | None,
    archive,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Run the three campaigns; every count is recorded, every mismatch kept with its reproducer.

    With ``progress`` each stage announces itself and its result on stderr (a line per stage,
    readable in a workflow log too) and the replay shows a per-session bar.
    """
    trajs = list(trajmod.iter_trajectories(archive, limit=replay_sessions)) if archive else []
    out = {"oracle": [], "adversarial": [], "replay": [], "seconds": {}}

    def say(msg: str) -> None:
        if progress:
            print(msg, file=sys.stderr, flush=True)

    for name in names:
        tok = load(name)
        t0 = time.perf_counter()
        if tok.family != "unsupported":
            say(f"{name}: certificate oracle, {oracle_trials} contexts per class pair ...")
            rep = oracle.run_oracle(tok, oracle_trials, seed=seed).to_dict()
            out["oracle"].append(rep)
            say(f"{name}: oracle done in {time.perf_counter() - t0:.0f} s, "
                f"{rep['claimed_failures']} failures of claimed pairs")  # fmt: skip
        t1 = time.perf_counter()
        say(f"{name}: adversarial campaign, {adversarial_examples} scenarios ...")
        adv = adversarial.run_campaign(tok, adversarial_examples, seed=seed).to_dict()
        out["adversarial"].append(adv)
        t2 = time.perf_counter()
        say(f"{name}: adversarial done in {t2 - t1:.0f} s, {adv['mismatches']} mismatches")
        if trajs:
            say(f"{name}: replay of {len(trajs)} sessions ...")
            rp = replay.replay(tok, trajs, progress=progress).to_dict(with_splices=True)
            out["replay"].append(rp)
            say(f"{name}: replay done in {time.perf_counter() - t2:.0f} s, "
                f"{rp['mismatches']} mismatches")  # fmt: skip
        t3 = time.perf_counter()
        out["seconds"][name] = {"oracle": t1 - t0, "adversarial": t2 - t1, "replay": t3 - t2}
    return out


def summary_rows(result: dict) -> list[dict]:
    """One row per tokenizer: the counts that certify (all mismatch columns must be 0)."""
    rows: dict[str, dict] = {}

    def row(record: dict) -> dict:
        name = record["tokenizer"]
        return rows.setdefault(name, {"tokenizer": name, "family": record["family"]})

    for o in result["oracle"]:
        row(o).update(
            oracle_pairs=o["claimed_pairs"],
            oracle_trials=o["claimed_trials"],
            oracle_failures=o["claimed_failures"],
            unclaimed_pairs_with_counterexample=o["unclaimed_with_counterexample"],
        )
    for a in result["adversarial"]:
        row(a).update(
            adversarial_scenarios=a["scenarios"],
            adversarial_appends=a["appends"],
            adversarial_edits=a["edits"],
            adversarial_mismatches=a["mismatches"],
            adversarial_plan_comparisons=a.get("plan_comparisons", 0),
        )
    for r in result["replay"]:
        fw = r["outcomes"].get("repair: first-window splice", 0)
        widened = sum(v for k, v in r["outcomes"].items() if k.startswith("repair: splice after"))
        fallbacks = sum(v for k, v in r["outcomes"].items() if "fallback" in k)
        row(r).update(
            replay_sessions=r["sessions"],
            replay_calls=r["calls"],
            replay_chars=r["characters"],
            replay_first_window=fw,
            replay_widened=widened,
            replay_fallbacks=fallbacks,
            replay_mismatches=r["mismatches"] + r["span_mismatches"],
        )
    return list(rows.values())


def merge_runs(paths) -> dict:
    """One result from several per-tokenizer ``certify-repair`` records (their lists joined)."""
    import json
    from pathlib import Path

    merged: dict = {"oracle": [], "adversarial": [], "replay": []}
    for path in paths:
        one = json.loads(Path(path).read_text())
        for k in merged:
            merged[k] += one.get(k, [])
    return merged


def divergences(rows: list[dict]) -> int:
    """Every failure and mismatch count of ``summary_rows`` added up (certified: 0)."""
    return int(sum(v for r in rows for k, v in r.items()
                   if k.endswith(("failures", "mismatches")) and v == v))  # fmt: skip


def pair_verdict(claimed: bool, failures: int) -> str:
    """What the oracle says of one class pair: a claim that held, failed, or an unclaimed pair."""
    if claimed:
        return "CLAIMED AND FAILED" if failures else "claimed, never failed"
    return "counterexample" if failures else "unclaimed, no counterexample"


def oracle_pairs(result: dict) -> list[dict]:
    """One row per (tokenizer, class pair) of the oracle, with its verdict (no examples)."""
    rows = []
    for o in result["oracle"]:
        for p in o["pairs"]:
            row = {"tokenizer": o["tokenizer"]} | {k: v for k, v in p.items() if k != "example"}
            rows.append(row | {"verdict": pair_verdict(bool(p["claimed"]), int(p["failures"]))})
    return rows


def replay_splices(result: dict) -> list[dict]:
    """Every replayed splice: (tokenizer, session, call, delta, context, widenings)."""
    keys = ("session", "call", "delta_chars", "context_chars", "widenings")
    return [{"tokenizer": r["tokenizer"]} | dict(zip(keys, s[: len(keys)], strict=True))
            for r in result["replay"] for s in r["splices"]]  # fmt: skip


def replay_outcomes(result: dict) -> list[dict]:
    """How every replayed call was served: (tokenizer, outcome, calls)."""
    return [{"tokenizer": r["tokenizer"], "outcome": k, "calls": v}
            for r in result["replay"] for k, v in r["outcomes"].items()]  # fmt: skip
