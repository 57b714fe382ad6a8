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
# # 08 · Shadow verifier under injected faults (paper §3.6, §6.8, claim S1)
#
# The paper injects 434 faults into 2,999 session-shaped requests; at 10% sampling the
# verifier catches all 39 sampled faults, flags none of 265 sampled clean requests and
# drops nothing, and detection delay is geometric (at 5%: half of the faulty campaigns
# within 13 faulty requests, 90% within 42).
#
# Here (`toktier.campaigns.verifier_faults`): real mini-swe-agent sessions are replayed
# through a `Tier` with its own verifier off, so every request's IDs are the tier's output
# for the session's text after one more call (contexts capped at `max_context_chars`). A
# fixed share of the requests gets its IDs mutated (substitution, deletion, duplication,
# adjacent swap, same-length tail resplit; kinds drawn uniformly). One real
# `ShadowVerifier` per sampling rate is offered the whole stream; it samples with its own
# seeded coin and checks in its background thread against the HF reference. Detection
# delay: independent faulty campaigns of small real messages offered one at a time; the
# delay is the number of faulty requests up to the first reported mismatch, compared with
# the geometric law `P(D ≤ d) = 1 − (1 − p)^d`.

# %% tags=["parameters"]
tokenizer = "llama3"
archive = ""  # empty: the verified local copy (toktier.workload.archives.find_archive)
requests = 3000
fault_rate = 0.1447
rates = [0.10, 0.05]
campaigns = 1000
max_context_chars = 200_000
seed = 0
results_dir = "results"

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns

import toktier
from toktier.bench.machine import machine_facts
from toktier.campaigns import faults
from toktier.campaigns import verifier_faults as vf

results = Path(results_dir)
for sub in ("tables", "figures", "runs"):
    (results / sub).mkdir(parents=True, exist_ok=True)
sns.set_theme(style="whitegrid")

# %%
result = vf.run(
    toktier.load(tokenizer),
    Path(archive) if archive else None,
    requests=requests,
    fault_rate=fault_rate,
    rates=rates,
    campaigns=campaigns,
    max_context_chars=max_context_chars,
    seed=seed,
)
result["machine"] = machine_facts()
(results / "runs" / "verifier-faults.json").write_text(json.dumps(result, indent=1))
table = pd.DataFrame(vf.fault_rows(result)).astype(
    {"caught": "Int64", "missed": "Int64", "false_positives": "Int64"}
)
table.to_csv(results / "tables" / "verifier-faults.csv", index=False)
delay = pd.DataFrame(vf.delay_rows(result))
delay.to_csv(results / "tables" / "verifier-delay.csv", index=False)
stream = result["stream"]
print(
    f"{stream['requests']} requests from {stream['sessions']} sessions "
    f"({stream['characters'] / stream['requests']:,.0f} chars on average), "
    f"{sum(stream['faults_injected'].values())} faults injected: {stream['faults_injected']}"
)
assert result["all_sampled_faults_caught"], "a sampled fault was dropped or not caught"
assert result["false_positives"] == 0, "the verifier flagged a clean request (a tier bug?)"

# %% [markdown]
# Per sampling rate: the paper's row (10%: 39 sampled faults, all caught; 265 clean sampled,
# 0 false positives; 0 drops) against this run.

# %%
summary = pd.DataFrame(
    [
        {
            k: r[k]
            for k in (
                "rate",
                "requests",
                "faults",
                "sampled",
                "sampled_faults",
                "caught",
                "missed",
                "clean_sampled",
                "false_positives",
                "dropped",
                "errors",
                "lag_p50_s",
            )
        }
        for r in stream["rates"]
    ]
)
summary

# %%
table.pivot_table(
    index="kind", columns="rate", values=["requests", "sampled", "caught"], sort=False
)

# %% [markdown]
# Detection delay: the empirical quantiles against the geometric ones; `ks_distance` is the
# largest gap between the empirical and the geometric CDF, to be read against the DKW 95%
# band `dkw95`.

# %%
delay

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
palette = dict(zip(sorted(rates, reverse=True), sns.color_palette("deep"), strict=False))
for d in result["delay"]:
    x = np.sort(np.asarray(d["delays"]))
    if not x.size:
        continue
    c, p = palette[d["rate"]], d["rate"]
    grid = np.arange(1, max(int(x.max()), d["geometric_p90"]) + 1)
    ecdf = np.searchsorted(x, grid, side="right") / d["campaigns"]
    ax1.step(
        grid, ecdf, where="post", color=c, label=f"measured, {p:.0%} ({d['campaigns']} campaigns)"
    )
    ax1.step(
        grid,
        vf.geometric_cdf(p, grid),
        "--",
        where="post",
        color=c,
        alpha=0.7,
        label=f"geometric, p = {p:g}",
    )
    ax1.axvline(d["median"], color=c, lw=0.8, ls=":", label=f"measured median, {p:.0%}: {d['median']:g}")
for q in (0.5, 0.9):
    ax1.axhline(q, color="grey", lw=0.6)
    ax1.text(1.01, q, f"{q:.0%} detected", color="grey", fontsize=8, va="center",
             transform=ax1.get_yaxis_transform(), clip_on=False)  # fmt: skip
ax1.set_xscale("log")
ax1.xaxis.set_major_formatter(mticker.ScalarFormatter())
ax1.xaxis.set_minor_formatter(mticker.NullFormatter())
xmax = max((max(d["delays"], default=1) for d in result["delay"]), default=1)
ax1.set_xticks([t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if t <= xmax])
ax1.set(
    xlabel="faulty requests until the first reported mismatch",
    ylabel="share of faulty campaigns detected",
    title="(a) detection delay vs geometric law",
)
ax1.legend(fontsize=8, loc="lower right")

kinds = [*faults.KINDS]
rows = table[table.kind.isin(kinds)]
width = 0.8 / (2 * len(rates))
for i, r in enumerate(sorted(rates, reverse=True)):
    sub = rows[rows.rate == r].set_index("kind").loc[kinds]
    pos = np.arange(len(kinds)) + (2 * i - len(rates)) * width + width / 2
    c = palette[r]
    b1 = ax2.bar(pos, sub["sampled"], width, color=c, alpha=0.35, label=f"sampled faults, {r:.0%}")
    b2 = ax2.bar(pos + width, sub["caught"], width, color=c, label=f"caught, {r:.0%}")
    ax2.bar_label(b1, fontsize=7, padding=1)
    ax2.bar_label(b2, fontsize=7, padding=1)
clean = ", ".join(
    f"{r['rate']:.0%}: {r['false_positives']} of {r['clean_sampled']}" for r in stream["rates"]
)
ax2.set_xticks(range(len(kinds)), [k.replace("_", " ") for k in kinds])
ax2.set(
    ylabel="requests",
    title=f"(b) per fault kind (false positives on clean sampled — {clean})",
)
ax2.title.set_fontsize(9)
ax2.yaxis.set_major_locator(mticker.MaxNLocator(integer=True))
ax2.margins(y=0.12)
ax2.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize=8, frameon=False)
fig.suptitle(
    f"Shadow verifier, {stream['requests']} replayed requests with "
    f"{sum(stream['faults_injected'].values())} injected faults ({tokenizer})"
)
fig.tight_layout()
fig.savefig(results / "figures" / "verifier-faults.png", dpi=130)
