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
# # 07 · LoPT's length threshold admits inexact seams (paper §7, claim L1)
#
# A clean-room LoPT (`toktier.baselines.lopt`) joins two overlapping chunks where both
# emitted a run of tokens with the same character spans and IDs, and accepts the seam when
# the run reaches its length threshold. The search (`toktier.campaigns.lopt_search`) builds
# adversarial inputs (long-range NFC composition, words that only `ignore_merges` emits
# whole, digit/whitespace runs, contractions, letter runs with a leading punctuation
# character, long pre-tokens, random pitfall fragments), places one seam per try with the
# overlap inside the hot region, and counts **accepted seams whose splice differs from the
# reference** (counterexamples). For each, toktier's family certificate is asked whether the
# splice point is a stable boundary: the claim is that it refuses every counterexample.
#
# The LoPT constants (overlap, threshold) are *not* verified against the paper text (see
# the module docstring of `toktier.baselines.lopt`); the overlap is swept so the verdict can
# be read for the published value.

# %% tags=["parameters"]
tokenizers = ["llama3", "qwen3", "gpt-oss", "mistral-sp-v3"]
trials = 300
seed = 0
results_dir = "results"

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from toktier.baselines import lopt
from toktier.bench.machine import machine_facts
from toktier.campaigns import lopt_search

results = Path(results_dir)
for sub in ("tables", "figures", "runs"):
    (results / sub).mkdir(parents=True, exist_ok=True)
sns.set_theme(style="whitegrid")

# %%
result = lopt_search.run(tokenizers, trials, seed)
result["machine"] = machine_facts()
(results / "runs" / "lopt-counterexamples.json").write_text(json.dumps(result, indent=1))
assert result["certificate_refuses_all"], "toktier's certificate accepted a LoPT counterexample"
table = pd.DataFrame(lopt_search.summary_rows(result))
table["shortest_counterexample_chars"] = table["shortest_counterexample_chars"].astype("Int64")
table.to_csv(results / "tables" / "lopt-counterexamples.csv", index=False)
print(
    f"LoPT threshold {result['config']['threshold']} tokens, overlaps {result['config']['overlaps']} "
    f"(published values verified: {result['config']['published_values_verified']})"
)
table

# %% [markdown]
# Per tokenizer and generator: where the accepted-but-wrong seams come from.

# %%
gen = pd.DataFrame(
    [
        {"tokenizer": p["tokenizer"], "generator": g, **v}
        for p in result["tokenizers"]
        for g, v in p["by_generator"].items()
    ]
)
gen.pivot_table(index="generator", columns="tokenizer", values=["accepted", "divergent"])

# %% [markdown]
# The shortest counterexample per overlap (greedily shrunk): the text, the seam, LoPT's IDs
# and the reference IDs, and the certificate's verdict at the splice point.

# %%
rows = []
for p in result["tokenizers"]:
    for ex in p["examples"]:
        i = ex["first_difference"]
        rows.append(
            {
                "tokenizer": p["tokenizer"],
                "generator": ex["generator"],
                "overlap": ex["overlap"],
                "chars": ex["chars"],
                "text": ascii(ex["text"])[:90],
                "seam [c, b)": (ex["right_chunk_start"], ex["left_chunk_end"]),
                "boundary p": ex["boundary"],
                "run tokens": ex["run_tokens"],
                "LoPT ids @diff": ex["lopt_ids"][i : i + 4],
                "reference ids @diff": ex["reference_ids"][i : i + 4],
                "certificate": ex["certificate_reason"],
                "full LoPT wrong": ex["end_to_end_divergent"],
            }
        )
examples = pd.DataFrame(rows)
examples

# %%
per = table[table.overlap == "all"].set_index("tokenizer")
bars = per[["accepted", "divergent", "certificate_refuses_divergent"]].rename(
    columns={
        "accepted": "seams LoPT accepts",
        "divergent": "accepted, IDs wrong",
        "certificate_refuses_divergent": "wrong & refused by toktier",
    }
)
by_o = table[table.overlap != "all"].copy()
by_o["overlap"] = by_o["overlap"].astype(int)
fig, (ax1, ax2) = plt.subplots(
    1, 2, figsize=(13, 1.6 + 0.55 * len(bars)), gridspec_kw={"width_ratios": [1.1, 1]}
)
bars[::-1].plot.barh(ax=ax1, color=["#9ecae1", "#de2d26", "#31a354"], width=0.8)
ax1.set(
    xlabel="seams",
    ylabel="",
    xlim=(0, bars.to_numpy().max() * 1.18),
    title=f"(a) {trials} inputs × {lopt_search.SEAMS_PER_INPUT} seams per tokenizer",
)
# below the axes: with many tokenizers every corner of (a) holds bars
ax1.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, fontsize=8, frameon=False)
for c in ax1.containers:
    ax1.bar_label(c, fontsize=8, padding=2, fmt="{:,.0f}")
wrong = by_o[by_o.divergent > 0]
sns.barplot(data=wrong, x="overlap", y="divergent", hue="tokenizer", ax=ax2)
overlaps = sorted(wrong.overlap.unique())
ax2.set_xticks(
    range(len(overlaps)),
    [f"{o}\n(default)" if o == lopt.PUBLISHED_OVERLAP_CHARS else str(o) for o in overlaps],
)
for c in ax2.containers:
    ax2.bar_label(c, fontsize=8, padding=2)
ax2.set(
    xlabel="overlap O (characters)",
    ylabel="accepted seams with wrong IDs",
    ylim=(0, wrong.divergent.max() * 1.3),
    title=f"(b) wrong seams by overlap (threshold {result['config']['threshold']} tokens)",
)
ax2.legend(title="tokenizers with any", fontsize=8, ncol=2, loc="upper right")
fig.suptitle(
    "LoPT position-aware merge vs the reference — toktier's certificate refuses every counterexample"
)
fig.tight_layout()
fig.savefig(results / "figures" / "lopt-counterexamples.png", dpi=130)
