"""Tables and the figure of the committed GPU runs (``bench-gpu`` records, GPU certifications).

Experiment 06 calls ``write_gpu_report``; it reads only files (no GPU needed), so
the GPU rows of a run made elsewhere are drawn on any machine.  Simulator smoke
records are never drawn.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .palette import markers, palette


def gpu_runs(runs_dir: Path) -> list[dict]:
    """Every ``gpu-*.json`` bench record from a real GPU, each tagged with its source file."""
    out = []
    for p in sorted(Path(runs_dir).glob("gpu-*.json")):
        rec = json.loads(p.read_text())
        if rec.get("device") == "gpu":
            out.append(rec | {"file": p.name})
    return out


def best_run(runs: list[dict], tokenizer: str, method: str) -> dict | None:
    """The one run (of ``gpu_runs``) to draw ``method``'s rows from for ``tokenizer``: among
    the runs that timed it at the most sizes, the one with the lowest P50 summed over them
    (the GPU's best showing, so a comparison against it is the conservative one); None when
    no run has them. One run, not the fastest cell of each: rows of two GPUs never mix in
    one line; and a tail run that timed one small size never wins on its short sum."""
    best, best_key = None, None
    for rec in runs:
        p50 = [r["p50"] for r in rec["latency_summary"]
               if r["tokenizer"] == tokenizer and r["method"] == method]  # fmt: skip
        key = (-len(p50), sum(p50))
        if p50 and (best_key is None or key < best_key):
            best, best_key = rec, key
    return best


def short_gpu(name) -> str:
    """``H100`` for ``NVIDIA H100 80GB HBM3``: a GPU's model, for labels."""
    return str(name).replace("NVIDIA ", "").split(" ")[0]


def short_commit(machine: dict) -> str:
    """``abc1234`` or ``abc1234+dirty`` (a run from uncommitted changes says so)."""
    c = str(machine.get("commit") or "")
    return c[:7] + ("+dirty" if c.endswith("+dirty") else "")


def fresh_str_protocol(rec: dict) -> bool:
    """Whether every timed call of this bench record had its own str copy (2026-11-27 on).
    Older records timed the GPU deliveries and Gigatoken on a str whose UTF-8 the reference
    call had cached, so each skipped its own conversion (0.65 ms per 1M chars of code, 2.3
    ms of multilingual prose on the development VM): their rows are faster than a request's."""
    return bool(rec.get("parameters", {}).get("fresh_str"))


def _tag(rec: dict) -> dict:
    return {"gpu": rec["gpu"]["gpu"], "commit": short_commit(rec.get("machine", {})),
            "file": rec["file"], "fresh_str": fresh_str_protocol(rec)}  # fmt: skip


def gpu_tables(runs: list[dict]) -> dict[str, pd.DataFrame]:
    """latency (P50/P90 per method and size), throughput (GB/s), tail (P99), one row set per run."""
    lat = [pd.DataFrame(r["latency_summary"]).assign(**_tag(r)) for r in runs]
    # a throughput row is a best of ``repeats`` passes: one pass (a tail run's side rows)
    # still carries first-call costs, and F2 judges only rows with a warm pass among them
    thr = [pd.DataFrame(r["throughput"]).assign(**_tag(r),
                                                repeats=r.get("parameters", {}).get("repeats"))
           for r in runs]  # fmt: skip
    tail = [pd.DataFrame(r["tail_summary"]).assign(**_tag(r)) for r in runs]
    return {
        "latency": pd.concat(lat, ignore_index=True) if lat else pd.DataFrame(),
        "throughput": pd.concat(thr, ignore_index=True) if thr else pd.DataFrame(),
        "tail": pd.concat(tail, ignore_index=True) if tail else pd.DataFrame(),
    }


def ran_with_short_map(rec: dict, result: dict) -> bool:
    """Whether a GPU campaign's engine had the short-piece map on: its own statistics say so
    (since the map became the default, an option left unset means on); records older than
    those statistics ran with it only when asked (``gpu_options``)."""
    stats = result.get("engine_stats") or {}
    if "short_map" in stats:
        return bool(stats["short_map"])
    return bool(rec.get("gpu_options", {}).get("short_map"))


def gpu_certification(cert_dir: Path) -> pd.DataFrame:
    """One row per ``certify-engine --device gpu`` record in ``cert_dir`` (counts, divergences;
    ``short_map``: the engine ran with the short-piece map on the device; ``units``: its
    non-ASCII single requests were uploaded as 16-bit characters)."""
    rows = []
    for p in sorted(Path(cert_dir).glob("*.json")):
        rec = json.loads(p.read_text())
        if rec.get("device") != "gpu":
            continue
        for r in rec["results"]:
            keep = {k: v for k, v in r.items() if not isinstance(v, (dict, list))}
            rows.append(keep | {"gpu": rec["gpu"]["gpu"],
                                "short_map": ran_with_short_map(rec, r),
                                "units": bool((r.get("engine_stats") or {}).get("units")),
                                "commit": short_commit(rec["machine"])})  # fmt: skip
    return pd.DataFrame(rows)


def plot_gpu(tables: dict[str, pd.DataFrame], path: Path) -> list[str]:
    """P50 against size per tokenizer run, and P99 under contention (graph replay vs eager).
    Returns the records that got a latency panel, in panel order."""
    import matplotlib.pyplot as plt

    lat, tail = tables["latency"], tables["tail"]
    # a panel per run that timed several sizes; a tail run (one small size, many requests)
    # shows in the tails' panel only
    sizes = lat.groupby(["tokenizer", "file"]).chars.nunique()
    runs = [(tok, file, commit, fresh) for tok, file, commit, fresh in dict.fromkeys(
            zip(lat.tokenizer, lat.file, lat.commit, lat.fresh_str, strict=True))
            if sizes[(tok, file)] > 1]  # fmt: skip
    panels = len(runs) + 1
    ncols = min(panels, 3)  # rows of three: one run per panel, the tails last
    nrows = -(-panels // ncols)
    fig = plt.figure(figsize=(5.6 * ncols, 4.6 * nrows))
    spec = fig.add_gridspec(nrows, ncols)
    axes = [fig.add_subplot(spec[k // ncols, k % ncols]) for k in range(len(runs))]
    # the tails' panel takes the rest of the last row: its bars (one group per run) need width
    axes.append(fig.add_subplot(spec[len(runs) // ncols, len(runs) % ncols:]))
    methods = list(dict.fromkeys(lat.method))
    col, mk = palette(methods), markers(methods)
    for k, (ax, (tok, file, commit, fresh)) in enumerate(zip(axes, runs, strict=False)):
        d = lat[(lat.tokenizer == tok) & (lat.file == file)]
        for m in methods:
            dm = d[d.method == m].sort_values("chars")
            if len(dm):
                ax.plot(dm.chars, dm.p50, marker=mk[m], color=col[m], label=m)
        ax.set(xscale="log", yscale="log", xlabel="context (characters)", ylabel="P50 latency (ms)",
               title=f"({chr(97 + k)}) {tok}, fresh texts"
               + ("" if fresh else " (UTF-8 cached by the reference)")
               + f"\n{d.gpu.iloc[0]}, commit {commit}")  # fmt: skip
        ax.legend(fontsize=8)
    ax = axes[-1]
    gpu_of = {f: g for f, g in zip(lat.file, lat.gpu, strict=True)}
    short = tail.file.map(lambda f: short_gpu(gpu_of[f]))
    # one group per record (two runs at one commit stay apart), named by its request count
    n = tail.groupby("file").n.transform("max").map(lambda v: f"{v:,} req.")
    t = tail.assign(run=tail.tokenizer + "\n" + short + "\n" + tail.commit + "\n" + n)
    labels, xs, width = list(dict.fromkeys(t.run)), range(len(set(t.run))), 0.2
    combos = [(m, c) for m in ("toktier GPU, graph replay", "toktier GPU, eager")
              for c in (False, True)]  # fmt: skip
    for k, (m, c) in enumerate(combos):
        vals = [t[(t.run == r) & (t.method == m) & (t.contention == c)].p99.mean() for r in labels]
        ax.bar([x + (k - 1.5) * width for x in xs], vals, width, color=palette([m])[m],
               hatch="//" if c else None, edgecolor="white",
               label=f"{m.split(', ')[1]}, {'CPU contention' if c else 'idle CPU'}")  # fmt: skip
    ax.set_xticks(list(xs), labels, fontsize=8)
    ax.set(
        ylabel="P99 latency (ms)",
        title=f"({chr(97 + len(runs))}) 50K-char requests: P99,\nCUDA graphs vs eager launches",
    )
    ax.set_ylim(0, 1.45 * ax.get_ylim()[1])  # room for the legend above the bars
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return [file for _, file, _, _ in runs]


def write_gpu_report(results: Path, evidence: Path | None = None) -> dict | None:
    """Write the GPU tables (and figure) under ``results``; None when no GPU run is committed.

    The records are read from ``evidence`` (default: ``results``): GPU runs are made by
    hand on a GPU machine and committed, so a workflow run on a CPU machine draws the
    committed ones into its own results tree.
    """
    results = Path(results)
    evidence = Path(evidence) if evidence is not None else results
    (results / "tables").mkdir(parents=True, exist_ok=True)
    cert = gpu_certification(evidence / "runs" / "engine-gpu")
    if len(cert):
        cert.to_csv(results / "tables" / "engine-certification-gpu.csv", index=False)
    runs = gpu_runs(evidence / "runs")
    if not runs:
        return None
    tables = gpu_tables(runs)
    tables["latency"].to_csv(results / "tables" / "full-tokenization-gpu.csv", index=False)
    tables["throughput"].to_csv(results / "tables" / "gpu-throughput.csv", index=False)
    tables["tail"].to_csv(results / "tables" / "gpu-tail.csv", index=False)
    plot_gpu(tables, results / "figures" / "full-tokenization-gpu.png")
    exact = all(r["all_exact"] for r in runs)
    return tables | {"certification": cert, "all_exact": exact}
