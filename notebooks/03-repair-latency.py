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
# # 03 · Repair latency vs context size (paper Table 3 / Fig. 6, claim R1)
#
# One append to a live session whose context is a real agent transcript of N characters.
# Every method sees identical texts: toktier repairs the stored tokens; Gigatoken
# "prewarmed" re-encodes the full text with a cache that has already seen the session;
# fastokens and HF re-encode the full text. Protocol (`experiments.md`): bootstrap on the
# prefix, one untimed append, then timed appends at their natural sizes (the transcript's
# own next calls). n = sessions × appends per cell.

# %% tags=["parameters"]
archive = "data/build/archives/mini-swe-agent-gemini3-swebench-verified.tar.xz"
tokenizer = "llama3"
families = ["tekken", "mistral-sp-v3"]
contexts = [100_000, 500_000, 1_000_000]
sessions = 4
appends = 6
results_dir = "results"

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

import toktier
from toktier.bench import palette, repair_bench, streams
from toktier.bench.machine import machine_facts

results = Path(results_dir)
for sub in ("tables", "figures", "runs"):
    (results / sub).mkdir(parents=True, exist_ok=True)
sns.set_theme(style="whitegrid")
tok = toktier.load(tokenizer)
trajs = streams.load_trajectories(Path(archive))

# %%
samples = repair_bench.repair_latency(tok, trajs, contexts, sessions=sessions, appends=appends)
(results / "runs" / "repair-latency.json").write_text(
    json.dumps({"machine": machine_facts(), "tokenizer": tok.name, "samples": samples}, indent=1)
)
df = pd.DataFrame(samples)
assert df.loc[df.method == "toktier repair", "exact"].dropna().all(), "a repaired session diverged"

# %%
PAPER = repair_bench.PAPER_TABLE3  # the paper's Table 3, P50 ms (its EPYC 9115 host)
table = repair_bench.latency_table(df)
table.insert(
    5,
    "paper_p50_ms",
    [PAPER.get(m, {}).get(c) for c, m in zip(table.context, table.method, strict=True)],
)
table.to_csv(results / "tables" / "repair-latency.csv", index=False)
table

# %%
fig, ax = plt.subplots(figsize=(9, 5))
methods = list(df["method"].unique())
colors = palette.palette(methods)
sns.lineplot(
    data=df, x="context", y="ms", hue="method", estimator="median", errorbar=("pi", 80),
    marker="o", ax=ax, palette=colors,
)  # fmt: skip
for name, vals in PAPER.items():  # the paper's own P50s on its host, same colour, dotted
    ax.plot(list(vals), list(vals.values()), ls=":", marker="x", ms=4, lw=1.2,
            color=colors.get(name, "grey"), label=f"paper: {name}")  # fmt: skip
ticks = sorted(df["context"].unique())
ax.set(xscale="log", yscale="log", xlabel="session context N (characters)",
       ylabel="one append, P50 ms (band: P10–P90)",
       title=f"Repair latency vs context — {tok.name}, natural appends")  # fmt: skip
ax.set_xticks(ticks, [f"{c / 1e6:g}M" if c >= 1e6 else f"{c / 1e3:g}K" for c in ticks])
ax.xaxis.set_minor_formatter(plt.NullFormatter())
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=9)
fig.tight_layout()
fig.savefig(results / "figures" / "repair-latency.png", dpi=130)

# %% [markdown]
# ## The families of issue #16, same protocol
#
# Mistral's Tekken (byte-level BPE, its own split pattern) and SentencePiece BPE (mistral-sp-v3:
# "▁" for spaces, byte fallback, no split regex), timed exactly as above on the same
# transcripts. The paper has no numbers for them; the columns `p50_vs_toktier` compare each
# method with toktier's repair in this run.

# %%
family_samples = []
for name in families:
    ftok = toktier.load(name)
    for row in repair_bench.repair_latency(
        ftok, trajs, contexts, sessions=sessions, appends=appends
    ):
        family_samples.append({"tokenizer": ftok.name, **row})
(results / "runs" / "repair-latency-families.json").write_text(
    json.dumps(
        {"machine": machine_facts(), "tokenizers": families, "samples": family_samples}, indent=1
    )
)
fdf = pd.DataFrame(family_samples, columns=["tokenizer", *df.columns])
if len(fdf):
    assert fdf.loc[fdf.method == "toktier repair", "exact"].dropna().all(), (
        "a repaired session diverged"
    )
ftable = repair_bench.latency_table(fdf, by=["tokenizer", "context", "method"])
ftable.to_csv(results / "tables" / "repair-latency-families.csv", index=False)
ftable

# %%
fig, axes = plt.subplots(1, max(1, len(families)), figsize=(5.2 * max(1, len(families)), 5),
                         sharey=True, squeeze=False)  # fmt: skip
for ax, name in zip(axes[0], families or [None], strict=True):
    part = fdf[fdf.tokenizer == name]
    if part.empty:
        ax.set_axis_off()
        continue
    sns.lineplot(
        data=part, x="context", y="ms", hue="method", estimator="median", errorbar=("pi", 80),
        marker="o", ax=ax, palette=palette.palette(part["method"].unique()), legend=ax is axes[0][0],
    )  # fmt: skip
    ax.set(xscale="log", yscale="log", xlabel="session context N (characters)",
           ylabel="one append, P50 ms (band: P10–P90)", title=name)  # fmt: skip
    ax.set_xticks(ticks, [f"{c / 1e6:g}M" if c >= 1e6 else f"{c / 1e3:g}K" for c in ticks])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
legend = axes[0][0].get_legend()
if legend is not None:  # one legend for all panels, below them
    handles, labels = axes[0][0].get_legend_handles_labels()
    legend.remove()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
fig.suptitle("Repair latency vs context — issue #16 families, natural appends")
fig.tight_layout(rect=(0, 0.07, 1, 1))
fig.savefig(results / "figures" / "repair-latency-families.png", dpi=130, bbox_inches="tight")
