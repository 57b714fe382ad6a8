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
# # 06 · Full tokenization of one fresh request (paper Table 4 CPU rows, claim F1)
#
# Every sample is a new real session text of N characters, encoded once, one timed call,
# identical texts for every method. toktier's numba engine runs on one thread and on all
# cores (certified cuts, `prange`); its JIT compile time is excluded from requests and
# reported separately. Gigatoken gets a new object per sample (empty cache; construction
# not timed). The toktier rows are checked against the reference on every sample.
# Also: bulk throughput (MB/s) over the real corpora, and the engine's certification counts.

# %% tags=["parameters"]
archive = "data/build/archives/mini-swe-agent-gemini3-swebench-verified.tar.xz"
tokenizers = ["qwen3"]
contexts = [100_000, 1_000_000]
samples = 5
corpus_chars = 500_000
engine_runs = []
results_dir = "results"
gpu_evidence_dir = "results"  # committed GPU records (bench-gpu, certify-engine --device gpu)

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

import toktier
from toktier.bench import full_bench, palette, streams
from toktier.bench.machine import machine_facts

results = Path(results_dir)
for sub in ("tables", "figures", "runs"):
    (results / sub).mkdir(parents=True, exist_ok=True)
sns.set_theme(style="whitegrid")
trajs = streams.load_trajectories(Path(archive))

# %% [markdown]
# ## Single-request latency

# %%
rows, compile_info = [], {}
for name in tokenizers:
    tok = toktier.load(name)
    for r in full_bench.full_latency(tok, trajs, contexts, samples):
        rows.append({"tokenizer": name, **r})
    compile_info[name] = full_bench.compile_seconds(name)
raw = pd.DataFrame(rows)
assert raw.loc[raw.method.str.startswith("toktier"), "exact"].all(), "toktier row not exact"
summary = (
    raw.groupby(["tokenizer", "method", "chars"], sort=False)["ms"]
    .agg(n="size", p50="median", p90=lambda x: x.quantile(0.9))
    .reset_index()
)
hf = summary[summary.method == "HF serial"].set_index(["tokenizer", "chars"])["p50"]
summary["speedup_vs_hf"] = [
    hf.get((t, c), float("nan")) / p
    for t, c, p in zip(summary.tokenizer, summary.chars, summary.p50, strict=True)
]
summary.to_csv(results / "tables" / "full-tokenization.csv", index=False)
print(compile_info)
summary.pivot_table(index=["tokenizer", "method"], columns="chars", values="p50", sort=False).round(
    2
)

# %% [markdown]
# Paper Table 4 (Qwen3, P50 ms at 100K / 1M / 2M / 4.4M, AMD EPYC 9115 host) for reference.

# %%
PAPER = full_bench.PAPER_TABLE4
paper = pd.DataFrame(full_bench.paper_table4_rows())
paper

# %%
methods = list(dict.fromkeys(summary.method))
colors = palette.palette([*methods, *PAPER])
marks = palette.markers(methods)
ncols = min(len(tokenizers), 3) if len(tokenizers) != 4 else 2  # four: a 2 x 2 grid
nrows = -(-len(tokenizers) // ncols)
fig, axes = plt.subplots(nrows, ncols, figsize=(6.5 * ncols, 5.6 * nrows), squeeze=False)
for ax in axes.flat[len(tokenizers) :]:
    ax.set_axis_off()
for ax, name in zip(axes.flat, tokenizers, strict=False):
    d = summary[summary.tokenizer == name]
    for m, g in d.groupby("method", sort=False):
        ax.plot(g.chars, g.p50, marker=marks[m], color=colors[m], label=m)
    title = f"{name}: full tokenization of one request"
    if name == "qwen3":  # the paper's Table 4 is qwen3 on its EPYC host
        for m, g in paper.groupby("method", sort=False):
            ax.plot(g.chars, g.paper_p50, ls=":", color=colors[m], lw=1.3, label=f"paper: {m}")
        title += "\n(dotted: the paper's Table 4, its host)"
    ax.set(xscale="log", yscale="log", xlabel="context (characters)", ylabel="P50 latency (ms)",
           title=title)  # fmt: skip
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.14))
fig.tight_layout()
fig.savefig(results / "figures" / "full-tokenization.png", dpi=150)

# %% [markdown]
# ## Bulk throughput over the real corpora (MB/s, one call per corpus, best of 2)

# %%
bulk = pd.DataFrame(full_bench.bulk_table(tokenizers, corpus_chars))
bulk.to_csv(results / "tables" / "bulk-throughput.csv", index=False)
bulk.pivot_table(
    index=["tokenizer", "method"], columns="corpus", values="mb_per_s", sort=False
).round(1)

# %% [markdown]
# ## Engine certification (split level + ID level, zero divergence required)

# %%
cert = []
for path in engine_runs:
    rec = json.loads(Path(path).read_text())
    for r in rec["results"]:
        cert.append({k: v for k, v in r.items() if k not in ("examples", "chars_by_source")})
cert = pd.DataFrame(cert)
if len(cert):
    cert.to_csv(results / "tables" / "engine-certification.csv", index=False)
    assert (cert.divergences == 0).all()
cert

# %%
(results / "runs" / "full-tokenization.json").write_text(
    json.dumps(
        {
            "machine": machine_facts(),
            "compile": compile_info,
            "samples": rows,
            "bulk": bulk.to_dict("records"),
        },
        indent=1,
        default=str,
    )
)

# %% [markdown]
# ## GPU rows (paper Table 4 GPU rows, claims F2/F3)
#
# Drawn from the committed `results/runs/gpu-*.json` (written by `toktier bench-gpu` on a GPU
# machine: fresh texts as in the CPU rows, Gigatoken empty-cache and the CPU engine on that
# machine's cores in the same run) and `results/runs/engine-gpu/*.json`
# (`toktier certify-engine --device gpu`). Each row names the commit that produced it.

# %%
from toktier.bench.gpu_report import write_gpu_report

gpu = write_gpu_report(results, Path(gpu_evidence_dir))  # from the committed GPU records
if gpu is None:
    print("GPU rows pending: no results/runs/gpu-*.json from a real GPU is committed.")
else:
    assert gpu["all_exact"], "a GPU bench run reported an inexact result"
    assert (gpu["certification"].divergences == 0).all(), "a GPU certification diverged"
    lat, thr = gpu["latency"], gpu["throughput"]
    print(gpu["certification"].to_string())
    print(lat.pivot_table(index=["tokenizer", "commit", "method"], columns="chars",
                          values="p50").round(2).to_string())  # fmt: skip
    print(thr.groupby(["tokenizer", "corpus", "mode"])["gb_per_s"].median().to_string())
