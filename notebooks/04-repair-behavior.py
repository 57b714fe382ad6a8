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
# # 04 · Repair behaviour and certification (paper Fig. 7, Table 6; claims E1, R2, R3)
#
# The certification campaigns (`toktier certify-repair`, one workflow job per tokenizer):
# the certificate-level oracle over every class pair, hypothesis-generated adversarial
# appends and mid-context edits, and the replay of real trajectories call by call — every
# result compared with the reference on the full text. Then: how often the first window
# splices, how many widenings and fallbacks, and repair time against append size Δ.

# %% tags=["parameters"]
runs = "results/runs/repair/llama3.json"  # comma-separated per-tokenizer campaign files
archive = "data/build/archives/mini-swe-agent-gemini3-swebench-verified.tar.xz"
tokenizer = "llama3"
sweep_contexts = [100_000, 1_000_000]
sweep_deltas = [1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000]
sweep_sessions = 3
results_dir = "results"

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

import toktier
from toktier.bench import palette, repair_bench, streams
from toktier.bench.machine import machine_facts
from toktier.campaigns import repair_campaign as rc

results = Path(results_dir)
for sub in ("tables", "figures", "runs"):
    (results / sub).mkdir(parents=True, exist_ok=True)
sns.set_theme(style="whitegrid")
merged = rc.merge_runs(runs.split(","))

# %% [markdown]
# ## Certification counts (all mismatch columns must be zero)

# %%
cert = pd.DataFrame(rc.summary_rows(merged))
cert.to_csv(results / "tables" / "repair-certification.csv", index=False)
bad = rc.divergences(cert.to_dict("records"))
print(
    "total adversarial operations:",
    int((cert.adversarial_appends + cert.adversarial_edits).sum()),
    "· replayed calls:",
    int(cert.replay_calls.sum()),
    "· divergences:",
    int(bad),
)
assert bad == 0
cert

# %% [markdown]
# ## Oracle: which class pairs synchronize (claimed ✓; unclaimed with a counterexample ✗)

# %%
pairs = pd.DataFrame(rc.oracle_pairs(merged))
pairs.to_csv(results / "tables" / "oracle-pairs.csv", index=False)
pairs.groupby(["tokenizer", "verdict"]).size().unstack(fill_value=0)

# %% [markdown]
# ## First-window acceptance over every replayed splice (Fig. 7a)

# %%
splices = pd.DataFrame(rc.replay_splices(merged))
outcomes = pd.DataFrame(rc.replay_outcomes(merged))
behavior = outcomes.pivot_table(index="tokenizer", columns="outcome", values="calls", fill_value=0)
behavior.to_csv(results / "tables" / "repair-behavior.csv")
behavior

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 4.6), gridspec_kw={"width_ratios": [1.25, 1]})
ax = axes[0]
kinds = {"first window": splices.widenings == 0, "widened": splices.widenings > 0}
share = pd.DataFrame({k: splices[m].groupby(splices.tokenizer[m]).size() for k, m in kinds.items()})
share = share.fillna(0).astype(int)
share["fallback"] = [
    sum(v for k, v in r["outcomes"].items() if "fallback" in k)
    for r in sorted(merged["replay"], key=lambda r: r["tokenizer"])
    if r["tokenizer"] in share.index
]
share = share.sort_index()
left = np.zeros(len(share))
for col, color in zip(share.columns, ("#0072B2", "#E69F00", "#D55E00"), strict=True):
    ax.barh(share.index, share[col], left=left, color=color, label=col)
    left += share[col].to_numpy()
for i, (_name, row) in enumerate(share.iterrows()):
    ax.text(left[i], i, f"  {row['first window']:,} of {row.sum():,} first window", va="center",
            fontsize=9)  # fmt: skip
ax.set(xlabel="replayed continuations", xlim=(0, left.max() * 1.6), ylim=(-0.6, len(share) + 0.6),
       title="Replayed continuations by outcome")  # fmt: skip
ax.legend(loc="upper right", fontsize=9, ncol=3)
ax = axes[1]
name = tokenizer if (splices.tokenizer == tokenizer).any() else splices.tokenizer.iloc[0]
one = splices[splices.tokenizer == name]
sns.ecdfplot(one["delta_chars"], ax=ax, color="#0072B2")
for q, ls in ((0.5, "--"), (0.9, ":")):
    v = one["delta_chars"].quantile(q)
    ax.axvline(v, color="grey", ls=ls, lw=1)
    ax.text(v, 0.05 + 0.4 * (q > 0.6), f" P{int(q * 100)} = {v:,.0f}", fontsize=9, color="grey")
ax.set(xscale="log", xlabel="Δ: characters appended per continuation", ylabel="share of continuations",
       title=f"Append size Δ of the replayed continuations ({name})")  # fmt: skip
fig.tight_layout()
fig.savefig(results / "figures" / "repair-behavior.png", dpi=130)

# %% [markdown]
# ## Repair time vs append size Δ (paper Table 6, claim R3)

# %%
tok = toktier.load(tokenizer)
trajs = streams.load_trajectories(Path(archive))
sweep = repair_bench.delta_sweep(tok, trajs, sweep_contexts, sweep_deltas, sessions=sweep_sessions)
(results / "runs" / "delta-sweep.json").write_text(
    json.dumps({"machine": machine_facts(), "samples": sweep}, indent=1)
)
sw = pd.DataFrame(sweep)
sweep_table = (
    sw.groupby(["context", "delta", "method"])
    .agg(p50_ms=("ms", "median"), mb_per_s=("mb_per_s", "median"))
    .reset_index()
)
sweep_table.to_csv(results / "tables" / "delta-sweep.csv", index=False)
sweep_table.pivot_table(index=["context", "delta"], columns="method", values="p50_ms")

# %%
fig, ax = plt.subplots(figsize=(8, 5))
sw["N"] = sw["context"].map(lambda c: f"N = {c / 1e6:g}M" if c >= 1e6 else f"N = {c / 1e3:g}K")
methods = list(sw["method"].unique())
n_levels = sorted(sw["N"].unique(), key=lambda s: sw.loc[sw["N"] == s, "context"].iloc[0])
dash_of = dict(zip(n_levels, ["", (4, 1.5), (1, 1.5), (6, 2, 1, 2)], strict=False))
sns.lineplot(
    data=sw, x="delta", y="ms", hue="method", style="N", estimator="median", marker="o", ax=ax,
    palette=palette.palette(methods), errorbar=("pi", 80), dashes=dash_of, legend=False,
)  # fmt: skip
deltas = sorted(sw["delta"].unique())
ax.set(xscale="log", yscale="log", xlabel="append size Δ (characters)",
       ylabel="one append, P50 ms (band: P10–P90)",
       title=f"Repair cost grows with Δ, not with N — {tok.name}")  # fmt: skip
ax.set_xticks(deltas, [f"{d / 1e3:g}K" for d in deltas])
ax.xaxis.set_minor_formatter(plt.NullFormatter())
ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))  # ms, not 2 × 10⁻¹
ax.yaxis.set_minor_formatter(  # label the 2s and 5s of each decade, not every minor tick
    plt.FuncFormatter(lambda v, _: f"{v:g}" if round(v / 10 ** np.floor(np.log10(v))) in (2, 5) else "")
)
# The legend is drawn by hand: seaborn's own shows the hue entries with the last style's dashes.
colours = palette.palette(methods)
handles = [Line2D([], [], color=colours[m], marker="o", label=m) for m in methods]
for n in n_levels:
    style = {"dashes": dash_of[n]} if dash_of[n] else {"linestyle": "-"}
    handles.append(Line2D([], [], color="0.3", label=n, **style))
ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=9)
fig.tight_layout()
fig.savefig(results / "figures" / "delta-sweep.png", dpi=130)
