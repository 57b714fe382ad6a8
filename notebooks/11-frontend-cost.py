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
# # 11 · Front-end cost under the recorded request mixture (paper §6.9 cost table, claim C1)
#
# Every model call of the replayed trajectories, session starts included, is sent as
# the full prompt a front end receives, to each method in turn: HF and fastokens full
# re-encodes, a Gigatoken object per session (prewarmed by the session's earlier calls),
# the tier over reference windows and the tier over the engine. `E[t_tok]` is the mean
# process CPU time per request; in milliseconds it reads as CPU cores per 1,000
# requests/s. Every tier result is compared with the reference IDs of the same call.

# %% tags=["parameters"]
archive = "data/build/archives/mini-swe-agent-gemini3-swebench-verified.tar.xz"
tokenizer = "llama3"
sessions = 12  # trajectories replayed (0: all 500)
results_dir = "results"

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

import toktier
from toktier.bench import frontend_cost, palette, streams
from toktier.bench.machine import machine_facts

results = Path(results_dir)
for sub in ("tables", "figures", "runs"):
    (results / sub).mkdir(parents=True, exist_ok=True)
sns.set_theme(style="whitegrid")
tok = toktier.load(tokenizer)
trajs = streams.load_trajectories(Path(archive), limit=sessions or None)

# %%
rows = frontend_cost.frontend_cost(tok, trajs)
(results / "runs" / "frontend-cost.json").write_text(
    json.dumps({"machine": machine_facts(), "tokenizer": tok.name, "rows": rows}, indent=0)
)
table = pd.DataFrame(frontend_cost.summarize(rows))
assert table.loc[table.method.str.startswith("tier"), "exact"].all(), "a tier result diverged"
tier = table.set_index("method").loc["tier over the engine", "E_t_tok_cpu_ms"]
table["vs_tier_over_engine"] = table["E_t_tok_cpu_ms"] / tier
table.to_csv(results / "tables" / "frontend-cost.csv", index=False)
table

# %%
df = pd.DataFrame(rows)
order = list(frontend_cost.METHODS)
colors = palette.palette(order)
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.4), gridspec_kw={"width_ratios": [1, 1.3]})
sns.barplot(data=table, y="method", x="E_t_tok_cpu_ms", order=order, hue="method",
            palette=colors, ax=a, legend=False)  # fmt: skip
for i, m in enumerate(order):
    v = table.set_index("method")["E_t_tok_cpu_ms"].get(m)
    if v is not None:
        a.text(v, i, f" {v:.3g} ms", va="center", fontsize=9)
    p = frontend_cost.PAPER.get(m)
    if p is not None:
        a.plot([p], [i], marker="|", ms=14, mew=2, color="black")
a.set(xscale="log", xlabel="E[t_tok]: CPU ms per request (= cores per 1,000 req/s)", ylabel="",
      title="Mean CPU cost per request (black tick: paper)")  # fmt: skip
sns.ecdfplot(data=df, x="wall_ms", hue="method", hue_order=order, palette=colors, ax=b,
             legend=False)  # fmt: skip
b.set(xscale="log", xlabel="wall time per request (ms)", ylabel="share of requests",
      title=f"Per-request wall time, CDF (colours as left)\n{df.session.nunique()} sessions, "
            f"{len(df) // len(order):,} requests per method")  # fmt: skip
fig.tight_layout()
fig.savefig(results / "figures" / "frontend-cost.png", dpi=130)

# %% [markdown]
# ## Served and scanned throughput per core (paper §6.3 and Fig. 13, claim R4)
#
# Two accounts, never mixed: *served* credits each call with every context byte it
# delivers; *scanned* counts only the bytes physically re-tokenized (a repair's window, a
# full encode's whole text). For a full re-encoder they coincide. Both are per CPU second
# of the same calls, trace-weighted over the replay (sums of bytes over sums of CPU time),
# and by context size.

# %%
acc, acc_bins = frontend_cost.accounts(rows)
acc = pd.DataFrame(acc)
acc_bins = pd.DataFrame(acc_bins)
acc.to_csv(results / "tables" / "served-scanned.csv", index=False)
acc_bins.to_csv(results / "tables" / "served-scanned-bins.csv", index=False)
cross = frontend_cost.crossing(acc_bins.to_dict("records"), "tier over the engine",
                               "Gigatoken prewarmed")  # fmt: skip
print("tier served above Gigatoken prewarmed from",
      f"{cross:,.0f} context bytes" if cross else "nowhere in this replay")
acc

# %%
fig, ax = plt.subplots(figsize=(10, 4.6))
shown = [m for m in order if m in set(acc_bins.method)]
for m in shown:
    d = acc_bins[(acc_bins.method == m) & (acc_bins.requests >= 5)]
    ax.plot(d.context_bytes_median, d.served_MB_per_core_s, marker="o", color=colors[m],
            label=f"{m}: served" + (" = scanned" if not m.startswith("tier") else ""))  # fmt: skip
    if m.startswith("tier"):
        ax.plot(d.context_bytes_median, d.scanned_MB_per_core_s, marker="o", ls="--",
                color=colors[m], mfc="white", label=f"{m}: scanned")  # fmt: skip
note = (f"\ndotted line: tier served ≥ Gigatoken prewarmed from {cross / 1e3:,.0f} KB" if cross
        else "\ntier served never stays above Gigatoken prewarmed")  # fmt: skip
if cross:
    ax.axvline(cross, color="grey", lw=0.8, ls=":")
ax.set(xscale="log", yscale="log", xlabel="context (UTF-8 bytes, bin median)",
       ylabel="MB per CPU-core second",
       title=f"Served vs scanned throughput per core, {tok.name}\n"
             f"{df.session.nunique()} replayed sessions (bins with ≥ 5 requests){note}")  # fmt: skip
ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
fig.tight_layout()
fig.savefig(results / "figures" / "served-scanned.png", dpi=130)
