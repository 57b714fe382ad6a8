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
# # 05 · Session state memory and TTL (paper Fig. 11, claim M1)
#
# (a) Bytes per token of live session state as sessions grow: token IDs (uint32), character
# spans (2 × int32) and the text itself. (b) The share of trajectory calls that would find
# live state if state lives a given time after its last use, from the calls' `created` times.

# %% tags=["parameters"]
archive = "data/build/archives/mini-swe-agent-gemini3-swebench-verified.tar.xz"
tokenizer = "llama3"
sessions = 40
results_dir = "results"

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import NullFormatter

import toktier
from toktier.bench import repair_bench, streams
from toktier.bench.machine import machine_facts
from toktier.workload import stats

results = Path(results_dir)
for sub in ("tables", "figures", "runs"):
    (results / sub).mkdir(parents=True, exist_ok=True)
sns.set_theme(style="whitegrid")
tok = toktier.load(tokenizer)
trajs = streams.load_trajectories(Path(archive))

# %%
rows = repair_bench.state_memory(tok, trajs[:sessions])
mem = pd.DataFrame(rows)
final = mem.groupby("session").tail(1)
summary = {
    "sessions_live": int(final.live_sessions.max()),
    "tokens_live": int(final.tokens.sum()),
    "store_bytes": int(mem.store_bytes.iloc[-1]),
    "bytes_per_token_store": float(mem.store_bytes.iloc[-1] / final.tokens.sum()),
    "bytes_per_token_median_session": float(final.bytes_per_token.median()),
    "used_bytes_per_token_median_session": float(final.used_bytes_per_token.median()),
    "record_bytes_per_token": int(mem.record_bytes_per_token.iloc[0]),
    "rss_growth_bytes": int(mem.rss_growth_bytes.iloc[-1]),
}
mem.to_csv(results / "tables" / "state-memory.csv", index=False)
pd.Series(summary)

# %%
table = stats.call_table(streams.load_trajectories(Path(archive)), None)
ttls = [10, 30, 60, 300, 900, 3600, 7200]
ttl = pd.DataFrame(stats.ttl_hit_share(table, ttls))
ttl.to_csv(results / "tables" / "ttl-hits.csv", index=False)
(results / "runs" / "state-memory.json").write_text(
    json.dumps(
        {"machine": machine_facts(), "summary": summary, "ttl": ttl.to_dict("records")}, indent=1
    )
)
ttl

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
grown = mem.assign(
    bin=pd.cut(mem.tokens, bins=np.geomspace(mem.tokens.min(), mem.tokens.max() + 1, 16))
)
per_bin = grown.groupby("bin", observed=True).agg(
    tokens=("tokens", "median"),
    allocated=("bytes_per_token", "median"),
    used=("used_bytes_per_token", "median"),
)
axes[0].plot(
    per_bin.tokens, per_bin.allocated, marker="o", label="allocated (arrays at capacity + text)"
)
axes[0].plot(per_bin.tokens, per_bin.used, marker="o", label="used (12 B records + text)")
axes[0].axhline(16, ls="--", c="gray", label="paper: ~16 B/token")
axes[0].set(
    xscale="log",
    ylim=(0, None),
    xlabel="session size (tokens)",
    ylabel="state bytes per token (median over sessions)",
    title="(a) state per token as sessions grow",
)
axes[0].xaxis.set_minor_formatter(NullFormatter())  # after set(xscale=...), which resets it
ticks = [t for t in (1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5) if mem.tokens.min() <= t <= mem.tokens.max()]
axes[0].set_xticks(ticks, [f"{t / 1e3:g}K" for t in ticks])
axes[0].legend(loc="lower right")
axes[1].plot(ttl.ttl_s, ttl.hit_share, marker="o")
axes[1].set(
    xscale="log",
    ylim=(0, 1),
    xlabel="state TTL after last use (s)",
    ylabel="share of calls on a state hit",
    title="(b) live-state hit share vs TTL (mini-swe-agent)",
)
axes[1].xaxis.set_minor_formatter(NullFormatter())
fig.tight_layout()
fig.savefig(results / "figures" / "state-memory.png", dpi=130)
