"""Front-end cost under the recorded request mixture (paper §6.9 and its cost table).

Every model call of the replayed trajectories is sent, in order, as the full prompt a
front end receives -- session starts (misses) included -- to each method:

- ``HF full re-encode``: the reference, serial;
- ``fastokens full re-encode``: one warm object;
- ``Gigatoken prewarmed``: one object per session, so every call after the first
  finds the session's text in its cache;
- ``tier over reference windows``: ``Tier`` whose window and full encodes are the
  reference's (the paper's "repair over HF engine");
- ``tier over the engine``: the default ``Tier`` (compiled repair, numba engine).

Per call we record the process CPU time (every thread: fastokens and the parallel
engine use several) and the wall time.  ``E[t_tok]`` is the mean CPU time per request;
in milliseconds it reads directly as CPU cores per 1,000 requests/s, and at ``r``
requests/s per inference GPU, ``E[t_tok] * r`` cores per 1,000 GPUs.  Every tier
result is compared with the reference IDs of the same call.
"""

from __future__ import annotations

import contextlib
import gc
import time
from functools import partial

import numpy as np
from tqdm.auto import tqdm

from ..baselines import FastokensFull, GigatokenPrewarmed, HFFull
from ..engine.reference import ReferenceEngine
from ..tier import Tier
from ..workload.templates import render_segments
from .timing import fresh_str, settle_allocator

METHODS = (
    "HF full re-encode",
    "fastokens full re-encode",
    "Gigatoken prewarmed",
    "tier over reference windows",
    "tier over the engine",
)
PAPER = {  # paper Table "Front-end cost": E[t_tok] ms on its measured mixture (EPYC host)
    "HF full re-encode": 228.1,
    "fastokens full re-encode": 13.4,
    "tier over reference windows": 23.6,
    "tier over the engine": 2.3,
}


def session_prompts(traj, tokenizer_name: str) -> list[str]:
    """Every call's full prompt of one trajectory, rendered with the tokenizer's template."""
    segs = render_segments(traj.messages, tokenizer_name)
    return ["".join(segs[: call.prompt_messages]) for call in traj.calls]


def _timed(fn):
    gc_on = gc.isenabled()
    gc.disable()
    try:
        c0, w0 = time.process_time_ns(), time.perf_counter_ns()
        out = fn()
        c1, w1 = time.process_time_ns(), time.perf_counter_ns()
    finally:
        if gc_on:
            gc.enable()
    return (c1 - c0) / 1e6, (w1 - w0) / 1e6, out


class _Methods:
    """One runner per method: ``start(session)`` then ``call(prompt)`` -> (ids, path)."""

    def __init__(self, tok, methods):
        self.tok = tok
        self.run = {}
        if "HF full re-encode" in methods:
            hf = HFFull(tok)
            self.run["HF full re-encode"] = (None, lambda s, p: (hf.full(p), "full"))
        if "fastokens full re-encode" in methods:
            with contextlib.suppress(ImportError):
                fast = FastokensFull(tok)
                self.run["fastokens full re-encode"] = (None, lambda s, p: (fast.full(p), "full"))
        if "Gigatoken prewarmed" in methods:
            with contextlib.suppress(ImportError):
                giga = GigatokenPrewarmed(tok)
                self.run["Gigatoken prewarmed"] = (
                    lambda s: giga.new_session(),
                    lambda s, p: (giga.full(p), "full"),
                )
        for name, kw in (
            ("tier over reference windows", {"engine": ReferenceEngine(tok)}),
            ("tier over the engine", {}),
        ):
            if name in methods:
                tier = Tier(tok, verify_rate=0, **kw)

                def call(s, p, tier=tier):
                    r = tier.encode(p, session=s)
                    return r, r.path

                self.run[name] = (None, call)
                self.run[name + "/tier"] = tier


def frontend_cost(tok, trajs, *, methods=METHODS, progress: bool = True) -> list[dict]:
    """One row per (method, call): CPU and wall milliseconds, path, and exactness for tiers."""
    m = _Methods(tok, methods)
    names = [k for k in m.run if not k.endswith("/tier")]
    rows: list[dict] = []
    for si, traj in enumerate(
        tqdm(trajs, desc=f"request mixture {tok.name}", disable=not progress)
    ):
        prompts = session_prompts(traj, tok.name)
        nbytes = [len(p.encode("utf-8")) for p in prompts]
        reference = None
        order = names[si % len(names) :] + names[: si % len(names)]  # rotate: spread drift
        outputs = {}
        for name in order:
            start, call = m.run[name]
            if start is not None:
                start(traj.session)
            got = []
            prev = 0
            for k, prompt in enumerate(prompts):
                # a copy: no UTF-8 cached by another method; then what earlier calls (another
                # method's, a new Gigatoken object's construction) freed is sorted unclocked
                fn = partial(call, traj.session, fresh_str(prompt))
                settle_allocator()
                cpu, wall, (out, path) = _timed(fn)
                # what the call re-tokenized: a repair its window, any other path the text
                scanned = out.window_chars if path == "repair" else len(prompt)
                rows.append({
                    "tokenizer": tok.name, "method": name, "session": traj.session, "call": k,
                    "context_chars": len(prompt), "delta_chars": len(prompt) - prev,
                    "context_bytes": nbytes[k], "scanned_chars": scanned,
                    "scanned_bytes": round(scanned * nbytes[k] / max(len(prompt), 1)),
                    "cpu_ms": cpu, "wall_ms": wall, "path": path,
                })  # fmt: skip
                prev = len(prompt)
                if name.startswith("tier"):
                    got.append(out.ids)  # read now (untimed): no snapshot outlives its call
                elif name.startswith("HF"):
                    got.append(out)
            outputs[name] = got
        if "HF full re-encode" in outputs:
            reference = outputs["HF full re-encode"]
        else:
            reference = [tok.reference(p) for p in prompts]
        for name, got in outputs.items():
            if not name.startswith("tier"):
                continue
            bad = sum(
                not np.array_equal(ids, np.asarray(ref, dtype=np.uint32))
                for ids, ref in zip(got, reference, strict=True)
            )
            for row in rows[-len(prompts) * len(order) :]:
                if row["method"] == name and row["session"] == traj.session:
                    row["exact"] = bad == 0
        for name in names:
            if name.startswith("tier"):
                m.run[name + "/tier"].close(traj.session)
    return rows


def summarize(rows: list[dict]) -> list[dict]:
    """E[t_tok] (CPU ms per request), wall P50/P99, cores per 1,000 req/s and per 1,000 GPUs."""
    import pandas as pd

    df = pd.DataFrame(rows)
    out = []
    for name, g in df.groupby("method", sort=False):
        e = float(g["cpu_ms"].mean())
        out.append({
            "method": name, "requests": len(g), "sessions": g["session"].nunique(),
            "E_t_tok_cpu_ms": e, "E_wall_ms": float(g["wall_ms"].mean()),
            "p50_wall_ms": float(g["wall_ms"].median()),
            "p99_wall_ms": float(np.percentile(g["wall_ms"], 99)),
            "cores_per_1000_rps": e,
            "cores_per_1000_gpus_r0.5": e * 0.5, "cores_per_1000_gpus_r5": e * 5,
            "repaired": float((g["path"] == "repair").mean()),
            "exact": bool(g["exact"].all()) if "exact" in g and g["exact"].notna().any() else None,
            "paper_E_t_tok_ms": PAPER.get(name),
        })  # fmt: skip
    return out


def accounts(rows: list[dict], *, bins_per_decade: int = 4) -> tuple[list[dict], list[dict]]:
    """The paper's two throughput accounts per CPU core (§6.3, Fig. 13), kept apart.

    *Served*: context bytes each call delivers, per CPU second (what a cache is credited
    with); *scanned*: bytes physically re-tokenized per CPU second (a repair's window,
    any full encode's whole text; for a full re-encoder the two coincide).  Returns
    (one row per method: trace-weighted over every call, sums of bytes over sums of CPU
    time; rows per method and context-size bin, log-spaced, for the figure).  A window's
    bytes are its characters times its prompt's bytes per character.
    """
    import pandas as pd

    df = pd.DataFrame(rows)
    df = df[df["cpu_ms"] > 0]
    total, binned = [], []
    edges = 10 ** np.arange(2, 9 + 1e-9, 1 / bins_per_decade)
    df = df.assign(bin=np.digitize(df["context_bytes"], edges))
    def rates(g) -> dict:
        cpu_s = g["cpu_ms"].sum() / 1e3
        return {"requests": len(g),
                "served_MB_per_core_s": g["context_bytes"].sum() / 1e6 / cpu_s,
                "scanned_MB_per_core_s": g["scanned_bytes"].sum() / 1e6 / cpu_s}  # fmt: skip

    for name, g in df.groupby("method", sort=False):
        total.append({"method": name, **rates(g), "context_MB": g["context_bytes"].sum() / 1e6,
                      "scanned_MB": g["scanned_bytes"].sum() / 1e6,
                      "cpu_s": g["cpu_ms"].sum() / 1e3})  # fmt: skip
        for b, gb in g.groupby("bin"):
            lo, hi = edges[b - 1] if b > 0 else 0.0, edges[b] if b < len(edges) else np.inf
            binned.append({"method": name, "bytes_lo": lo, "bytes_hi": hi,
                           "context_bytes_median": float(gb["context_bytes"].median()),
                           **rates(gb)})  # fmt: skip
    return total, binned


def crossing(binned: list[dict], method: str, ceiling_method: str, *,
             min_requests: int = 5) -> float | None:  # fmt: skip
    """The smallest context (median bytes of its bin) from which ``method``'s served account
    stays at or above ``ceiling_method``'s in every bin with enough requests; None if never."""
    import pandas as pd

    df = pd.DataFrame(binned)
    df = df[df["requests"] >= min_requests]
    a = df[df.method == method].set_index("bytes_lo")
    b = df[df.method == ceiling_method].set_index("bytes_lo")
    common = a.index.intersection(b.index).sort_values()
    above = [a.loc[x, "served_MB_per_core_s"] >= b.loc[x, "served_MB_per_core_s"] for x in common]
    for i in range(len(common)):
        if all(above[i:]):
            return float(a.loc[common[i], "context_bytes_median"])
    return None
