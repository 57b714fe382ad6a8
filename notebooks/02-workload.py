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
# # 02 · Workload anatomy of a public autonomous-agent corpus
#
# The paper characterizes agent traffic by the context $N$ a call carries and the text
# $\Delta$ it appends (§2, Fig. 2 and Fig. 14). Here we measure the same quantities on the
# mini-swe-agent trajectories of the SWE-bench Verified leaderboard run (Gemini-3-Pro, 500
# sessions). Every call's prompt is replayed exactly (`messages[:k]`), rendered through the
# tokenizer's chat template, and counted in characters and in reference tokens.

# %% tags=["parameters"]
archive = "data/build/archives/mini-swe-agent-gemini3-swebench-verified.tar.xz"
tokenizer = "llama3"
max_sessions = 0  # 0: all sessions
results_dir = "results"

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

import toktier
from toktier.bench.machine import machine_facts
from toktier.workload import stats, trajectories

results = Path(results_dir)
for sub in ("tables", "figures", "runs"):
    (results / sub).mkdir(parents=True, exist_ok=True)
sns.set_theme(style="whitegrid", context="notebook")

# %%
tok = toktier.load(tokenizer)
trajs = trajectories.iter_trajectories(Path(archive), limit=max_sessions or None)
calls = stats.call_table(trajs, tok).to_pandas()
summary = stats.summarize(stats.CallTable({c: calls[c].to_numpy() for c in calls.columns}))
calls.to_csv(results / "tables" / "workload.csv", index=False)
pd.Series(summary, name="value").to_csv(
    results / "tables" / "workload-summary.csv", index_label="metric"
)
(results / "runs" / "workload.json").write_text(
    json.dumps(
        {
            "machine": machine_facts(),
            "tokenizer": tok.name,
            "tokenizer_sha256": tok.sha256,
            "summary": summary,
        },
        indent=2,
    )
)
pd.Series(summary).round(3)

# %% [markdown]
# ## Against the paper
#
# The paper's public autonomous trace (`codex_swebenchpro`, 610 trials) has a median append
# of 3.8K characters and 30 calls per trial; its interactive traces have a 1.4K median.

# %%
comparison = pd.DataFrame(
    [
        ("median append Δ (chars)", 3800, summary["delta_chars_median"]),
        ("calls per session (median)", 30, summary["calls_per_session_median"]),
        ("share of calls with no reusable prefix", np.nan, summary["share_no_reusable_prefix"]),
        (
            "provider cache-hit ratio (token-weighted)",
            0.942,
            summary["provider_hit_ratio_token_weighted"],
        ),
    ],
    columns=["metric", "paper (codex_swebenchpro)", "ours (mini-swe-agent)"],
)
comparison

# %%
cont = calls[~calls["first_call"]]
first = calls[calls["first_call"]]
fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
ax = axes[0, 0]
sns.ecdfplot(cont["delta_chars"], ax=ax, label="Δ (chars)")
sns.ecdfplot(cont["delta_tokens"], ax=ax, label=f"Δ ({tok.name} tokens)")
ax.set(xscale="log", title="(a) per-call append Δ (continuations)",
       xlabel=f"append Δ (characters, or {tok.name} tokens)")  # fmt: skip
ax.axvline(summary["delta_chars_median"], ls=":", c="C0",
           label=f"median Δ = {summary['delta_chars_median']:,.0f} chars")  # fmt: skip
ax.legend()
ax = axes[0, 1]
hit = (
    calls.loc[calls["prompt_tokens"] > 0, "cached_tokens"]
    / calls.loc[calls["prompt_tokens"] > 0, "prompt_tokens"]
)
sns.histplot(hit, bins=40, ax=ax)
ax.set(title="(b) provider-reported cache-hit ratio h", xlabel="cached / prompt tokens")
ax = axes[0, 2]
sns.ecdfplot(calls["n_chars"], ax=ax, label="N (chars)")
sns.ecdfplot(calls["n_tokens"], ax=ax, label=f"N ({tok.name} tokens)")
ax.set(xscale="log", title="(c) context size N per call",
       xlabel=f"context N (characters, or {tok.name} tokens)")  # fmt: skip
ax.legend()
ax = axes[1, 0]
per_session = calls.groupby("session").size()
sns.histplot(per_session, bins=30, ax=ax)
ax.set(title=f"(d) calls per session (median {per_session.median():.0f})", xlabel="calls")
ax = axes[1, 1]
gaps = calls["gap_s"].dropna()
sns.ecdfplot(gaps.clip(lower=0.5), ax=ax)
for ttl, lab in ((300, "5 min TTL"), (3600, "1 h TTL")):
    ax.axvline(ttl, ls="--", c="gray")
    ax.text(ttl, 0.05, lab, rotation=90, va="bottom", ha="right")
ax.set(xscale="log", title="(e) gap between consecutive calls", xlabel="seconds")
ax = axes[1, 2]
sns.ecdfplot(cont["delta_tokens"], ax=ax, label="continuations: Δ")
sns.ecdfplot(first["n_tokens"], ax=ax, label="initializations: N")
ax.set(xscale="log", title="(f) tokens to process per call", xlabel=f"{tok.name} tokens")
ax.legend()
fig.suptitle(
    "Workload anatomy — mini-swe-agent × Gemini-3-Pro on SWE-bench Verified (500 sessions)"
)
fig.tight_layout()
fig.savefig(results / "figures" / "workload-anatomy.png", dpi=130)

# %%
fig, ax = plt.subplots(figsize=(6.5, 5.5))
ax.scatter(cont["n_tokens"], cont["delta_tokens"], s=3, alpha=0.25, label="continuations")
ax.scatter(first["n_tokens"], first["delta_tokens"], s=10, c="C3", label="initializations (Δ = N)")
lo = 10 ** np.floor(np.log10(max(1, calls["delta_tokens"].min())))  # no empty decades
lim = [lo, calls["n_tokens"].max() * 1.5]
ax.plot(lim, lim, c="gray", ls="--", lw=1, label="Δ = N (the whole context is new)")
ax.set(
    xscale="log",
    yscale="log",
    xlabel=f"context N ({tok.name} tokens)",
    ylabel=f"append Δ ({tok.name} tokens)",
    title="Joint distribution of N and Δ (paper Fig. 2 shape)",
    xlim=lim,
    ylim=lim,
)
ax.legend(loc="upper left")
fig.tight_layout()
fig.savefig(results / "figures" / "workload-joint.png", dpi=130)
