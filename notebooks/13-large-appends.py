# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 13 · Large appends: the regime a prewarmed cache won (paper App. F, Table 9; claim X1)
#
# The paper's shipped repair lost appends of 50K and 100K characters to a fully prewarmed
# Gigatoken (its window encoder ran at 2.9–3.9 MB/s) and explored three routes to win them
# back: A, parallel repair (8 cores); B, a fast window engine (one core); C, a GPU full
# re-encode with span export. Here the same cells (Qwen3, contexts 1M, 4.4M and 8M, same
# protocol as the Δ sweep of notebook 04): toktier's repair path alone, the deployed tier
# (whose router may encode the whole text on all cores instead), and Gigatoken prewarmed
# with the session text, on identical texts in one run; each cell's first session checked
# against the reference. Route C's GPU cells come from the committed `bench-gpu` records
# (a full re-encode with span export of a fresh text of that size, on an H100: another
# machine, shown beside, never mixed into the CPU verdict).

# %% tags=["parameters"]
archive = "data/build/archives/mini-swe-agent-gemini3-swebench-verified.tar.xz"
tokenizer = "qwen3"
contexts = [1_000_000]  # full config: 1M, 4.4M, 8M
deltas = [50_000, 100_000]
sessions = 2  # per cell, two timed appends each (full config: 12)
results_dir = "results"
gpu_evidence_dir = "results"  # where the committed GPU records are read from

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

import toktier
from toktier.bench import palette, repair_bench, streams
from toktier.bench.gpu_report import best_run, gpu_runs, short_gpu
from toktier.bench.machine import machine_facts

results = Path(results_dir)
for sub in ("tables", "figures", "runs"):
    (results / sub).mkdir(parents=True, exist_ok=True)
sns.set_theme(style="whitegrid")
tok = toktier.load(tokenizer)
trajs = streams.load_trajectories(Path(archive))

# %%
methods = ("toktier repair", "toktier, delta-aware", "Gigatoken prewarmed")
samples = repair_bench.delta_sweep(tok, trajs, contexts, deltas, sessions=sessions,
                                   methods=methods, appends=3, check_first=True)  # fmt: skip
(results / "runs" / "large-appends.json").write_text(
    json.dumps({"machine": machine_facts(), "tokenizer": tok.name, "samples": samples}, indent=0)
)
df = pd.DataFrame(samples)
checked = df.dropna(subset=["exact"]) if "exact" in df else df.iloc[:0]
assert len(checked) and checked["exact"].astype(bool).all(), "a toktier result diverged"
table = (df.groupby(["context", "delta", "method"])
         .agg(n=("ms", "size"), p50_ms=("ms", "median"),
              full_share=("path", lambda p: float((p != "repair").mean())))
         .reset_index())  # fmt: skip

# Route C: the GPU records' full re-encode with span export at the same context sizes
# (one record: the GPU's best run for this tokenizer, when several GPUs' records are committed)
gpu = []
rec = best_run(gpu_runs(Path(gpu_evidence_dir) / "runs"), tok.name, "toktier GPU, export")
for r in rec["latency_summary"] if rec else []:
    if r["tokenizer"] == tok.name and r["method"] == "toktier GPU, export":
        gpu.append({"context": r["chars"], "gpu_export_p50_ms": r["p50"],
                    "gpu": rec["gpu"]["gpu"], "gpu_file": rec["file"]})  # fmt: skip
gpu = pd.DataFrame(gpu, columns=["context", "gpu_export_p50_ms", "gpu", "gpu_file"])
wide = table.pivot_table(index=["context", "delta"], columns="method", values="p50_ms")
wide = wide.reset_index().merge(gpu[["context", "gpu_export_p50_ms"]], on="context", how="left")
for m in methods[:2]:
    wide[f"{m} vs Gigatoken"] = wide[m] / wide["Gigatoken prewarmed"]
table.to_csv(results / "tables" / "large-appends.csv", index=False)
wide.to_csv(results / "tables" / "large-appends-routes.csv", index=False)
wide

# %%
paper = pd.DataFrame(repair_bench.PAPER_ROUTES).T  # Table 9, Δ = 100K, qwen3, P50 ms
fig, axes = plt.subplots(1, 2, figsize=(11, 5.2), sharey=True)
colors = palette.palette([*methods, "GPU full re-encode + span export"])
gpu_name = short_gpu(gpu.gpu.iloc[0]) if len(gpu) else ""
xs = sorted({*contexts, *paper.index})
for ax, delta in zip(axes, deltas, strict=True):
    d = table[table.delta == delta]
    for m in methods:
        dm = d[d.method == m].sort_values("context")
        ax.plot(dm.context, dm.p50_ms, marker="o", color=colors[m], label=m)
    g = gpu[gpu.context.isin(contexts)].sort_values("context")
    if len(g):
        ax.plot(g.context, g.gpu_export_p50_ms, marker="s", ls=":",
                color=colors["GPU full re-encode + span export"],
                label=f"GPU full re-encode + span export ({gpu_name}, bench-gpu record)")  # fmt: skip
    if delta == 100_000:
        ax.plot(paper.index, paper["shipped"], marker="x", ls="--", color="0.45",
                label="paper (Δ = 100K): shipped repair")  # fmt: skip
        ax.plot(paper.index, paper["cache"], marker="+", ms=9, ls="--", color="0.7",
                label="paper (Δ = 100K): Gigatoken prewarmed")  # fmt: skip
    ax.set(xscale="log", yscale="log", xlabel="context N (characters)",
           title=f"Δ = {delta / 1e3:g}K characters appended")  # fmt: skip
    ax.set_xticks(xs, [f"{c / 1e6:g}M" for c in xs])
    ax.set_xlim(min(xs) / 1.3, max(xs) * 1.3)
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(  # the 2s and 5s of each decade
        plt.FuncFormatter(lambda v, _: f"{v:g}" if round(v / 10 ** np.floor(np.log10(v))) in (2, 5)
                          else ""))  # fmt: skip
axes[0].set_ylabel("one append, P50 ms")
handles, labels = [], []
for ax in axes:
    for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
        if lab not in labels:
            handles.append(h)
            labels.append(lab)
fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
fig.suptitle(f"Large appends, {tok.name}: P50 of one append "
             f"({sessions} session{'s' if sessions != 1 else ''} × 2 per cell)")  # fmt: skip
fig.tight_layout(rect=(0, 0.12, 1, 1))
fig.savefig(results / "figures" / "large-appends.png", dpi=130)
