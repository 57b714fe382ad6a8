"""Repair experiments: latency vs context (paper Table 3 / Fig. 6), Δ sweep (Table 6), state memory (Fig. 11a).

Every method in a cell sees identical texts.  Timings follow ``experiments.md``:
bootstrap the session on the prefix, one untimed append, then timed appends.
"""

from __future__ import annotations

import os

import numpy as np
from tqdm.auto import tqdm

from ..baselines import FastokensFull, GigatokenPrewarmed, HFFull
from ..tier import Tier
from .streams import natural_cell, sliced_cell
from .timing import time_ms

METHODS = ("toktier repair", "Gigatoken prewarmed", "fastokens full re-encode", "HF full re-encode")


# The paper's Table 3: repair latency P50 (ms) per context size, on its EPYC 9115 host.
PAPER_TABLE3 = {
    "toktier repair": {
        100_000: 0.52,
        500_000: 0.88,
        1_000_000: 1.23,
        2_000_000: 1.57,
        4_400_000: 3.54,
    },
    "Gigatoken prewarmed": {
        100_000: 0.14,
        500_000: 1.18,
        1_000_000: 2.53,
        2_000_000: 4.76,
        4_400_000: 11.66,
    },
    "HF full re-encode": {
        100_000: 23.6,
        500_000: 165,
        1_000_000: 318,
        2_000_000: 659,
        4_400_000: 1548,
    },
}


# The paper's Table 9 (App. F): the routes at Δ = 100K characters, Qwen3, P50 ms on its host.
PAPER_ROUTES = {
    1_000_000: {"shipped": 32.2, "A (k=8)": 9.80, "B (1 core)": 2.66, "C (GPU)": 1.13,
                "cache": 2.86},
    4_400_000: {"shipped": 34.7, "A (k=8)": 11.3, "B (1 core)": 3.79, "C (GPU)": 2.82,
                "cache": 12.1},
    8_000_000: {"shipped": 40.1, "A (k=8)": 13.1, "B (1 core)": 5.34, "C (GPU)": 6.05,
                "cache": 23.6},
}  # fmt: skip


def _baseline(name, tok):
    return {
        "Gigatoken prewarmed": GigatokenPrewarmed,
        "fastokens full re-encode": FastokensFull,
        "HF full re-encode": HFFull,
    }[name](tok)


def _time_toktier(tok, cell, sid, record, exact_check=True, delta_aware=False):
    # no verifier (its cost: experiment 09); repair alone unless ``delta_aware`` (the
    # deployed router, which encodes the whole text when it predicts that faster)
    tier = Tier(tok, verify_rate=0, delta_aware=delta_aware)
    tier.encode(cell.prefix, session=sid)
    tier.append(sid, cell.appends[0])  # untimed warm-up append
    text = cell.prefix + cell.appends[0]
    result = None
    for i, delta in enumerate(cell.appends[1:]):
        out = {}
        ms = time_ms(lambda d=delta, o=out: o.setdefault("r", tier.append(sid, d)))
        result = out["r"]
        record(i, len(text), len(delta), ms, result.path, result.widenings)
        text += delta
    exact = None
    if exact_check and result is not None:
        exact = bool(np.array_equal(result.ids, np.asarray(tok.reference(text), dtype=np.uint32)))
    tier.close(sid)
    return exact


def _time_baseline(base, cell, record):
    if hasattr(base, "new_session"):
        base.new_session()
    text = cell.prefix + cell.appends[0]
    base.full(text)  # untimed: prewarms a caching baseline with the session text
    for i, delta in enumerate(cell.appends[1:]):
        text += delta
        ms = time_ms(lambda t=text: base.full(t))
        record(i, len(text) - len(delta), len(delta), ms, "full", 0)


def repair_latency(
    tok,
    trajs,
    contexts,
    *,
    sessions: int = 4,
    appends: int = 6,
    methods=METHODS,
    progress: bool = True,
) -> list[dict]:
    """Samples (one dict per timed call) for each context size and method."""
    samples: list[dict] = []
    bases = {m: _baseline(m, tok) for m in methods if m != "toktier repair"}
    cells = [(c, s) for c in contexts for s in range(sessions)]
    for context, s in tqdm(
        cells, desc="repair latency", unit="session", disable=not progress or None
    ):
        cell = natural_cell(trajs, tok.name, context, appends + 1, start=17 * s + 3)
        for method in methods:

            def record(i, ctx, delta, ms, path, widenings, method=method, context=context, s=s):
                samples.append(
                    {
                        "method": method, "context": context, "session": s, "sample": i,
                        "context_chars": ctx, "delta_chars": delta, "ms": ms, "path": path, "widenings": widenings,
                    }
                )  # fmt: skip

            if method == "toktier repair":
                exact = _time_toktier(tok, cell, f"lat-{context}-{s}", record)
                samples[-1]["exact"] = exact
            else:
                _time_baseline(bases[method], cell, record)
    return samples


def latency_table(samples, by=("context", "method"), reference="toktier repair"):
    """Per-cell n, P50 and P90 (ms) of latency samples, and each P50 over the P50 of
    `reference` in the same cell (`by` minus the method): the ratio the claims quote."""
    import pandas as pd

    df = pd.DataFrame(samples)
    by = list(by)
    cols = ["n", "p50_ms", "p90_ms"]
    if df.empty:
        return pd.DataFrame(columns=[*by, *cols, "p50_vs_toktier"])
    table = df.groupby(by)["ms"].describe(percentiles=[0.5, 0.9])[["count", "50%", "90%"]]
    table = table.set_axis(cols, axis=1).reset_index()
    cell = [b for b in by if b != "method"]
    ref = table[table.method == reference].set_index(cell)["p50_ms"]
    keys = table[cell].itertuples(index=False, name=None)
    table["p50_vs_toktier"] = [
        p / ref.get(k if len(cell) > 1 else k[0], float("nan"))
        for k, p in zip(keys, table.p50_ms, strict=True)
    ]
    return table


def delta_sweep(
    tok,
    trajs,
    contexts,
    deltas,
    *,
    sessions: int = 4,
    methods=("toktier repair", "Gigatoken prewarmed"),
    appends: int = 2,
    check_first: bool = False,
    progress=True,
) -> list[dict]:
    """Repair time vs append size Δ at fixed contexts (fixed-length slices of real streams):
    per session ``appends`` appends, the first untimed.  Methods: ``toktier repair`` (the
    repair path alone), ``toktier, delta-aware`` (the deployed tier: its router may encode
    the whole text instead) and the baselines.  ``check_first``: each cell's first
    session's last result is compared with the reference (``exact`` on its last sample)."""
    samples: list[dict] = []
    ours = ("toktier repair", "toktier, delta-aware")
    bases = {m: _baseline(m, tok) for m in methods if m not in ours}
    cells = [(c, d, s) for c in contexts for d in deltas for s in range(sessions)]
    for context, delta, s in tqdm(
        cells, desc="delta sweep", unit="cell", disable=not progress or None
    ):
        cell = sliced_cell(trajs, tok.name, context, delta, appends, start=11 * s + 5)
        for method in methods:

            def record(
                i, ctx, d, ms, path, widenings, method=method, context=context, delta=delta, s=s
            ):
                samples.append(
                    {
                        "method": method, "context": context, "delta": delta, "session": s,
                        "ms": ms, "mb_per_s": d / ms / 1e3, "path": path, "widenings": widenings,
                    }
                )  # fmt: skip

            if method in ours:
                exact = _time_toktier(tok, cell, f"sweep-{context}-{delta}-{s}", record,
                                      exact_check=check_first and s == 0,
                                      delta_aware=method != "toktier repair")  # fmt: skip
                if exact is not None:
                    samples[-1]["exact"] = exact
            else:
                _time_baseline(bases[method], cell, record)
    return samples


def _rss_bytes() -> int:
    try:
        with open(f"/proc/{os.getpid()}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return -1


def state_memory(tok, trajs, *, progress: bool = True) -> list[dict]:
    """Replay sessions, keeping every session live; record state bytes per token as they grow."""
    from ..workload.templates import render_segments

    tier = Tier(tok, ttl_s=None, verify_rate=0)
    rows: list[dict] = []
    rss0 = _rss_bytes()
    for traj in tqdm(trajs, desc="state memory", unit="session", disable=not progress or None):
        segs = render_segments(traj.messages, tok.name)
        for k, call in enumerate(traj.calls):
            prompt = "".join(segs[: call.prompt_messages])
            tier.encode(prompt, session=traj.session)
            st = tier.store.get(traj.session)
            rows.append(
                {
                    "session": traj.session, "call": k, "context_chars": len(prompt), "tokens": st.n,
                    "state_bytes": st.nbytes,
                "used_bytes_per_token": st.used_nbytes / max(st.n, 1), "bytes_per_token": st.nbytes / max(st.n, 1),
                    "record_bytes_per_token": (st.ids.itemsize + st.starts.itemsize + st.ends.itemsize),
                    "live_sessions": len(tier.store), "store_bytes": tier.stats()["bytes"],
                    "rss_growth_bytes": _rss_bytes() - rss0,
                }
            )  # fmt: skip
    return rows
