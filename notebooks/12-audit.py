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
# # 12 · The guarantee ladder: serving stacks' incremental tokenizers audited (issue #15, claim A1)
#
# Serving stacks now re-tokenize only the tail of a multi-turn prompt, each with its own
# heuristic check. `toktier.audit` runs any such method — here clean-room reproductions
# from the stacks' public pull requests (`toktier.baselines`: TensorRT-LLM's prefix
# cache, exact-prefix suffix encode and boundary-aware rollback; a special-token-boundary
# cache) and the tier itself — through three workloads, checking every answer against the
# reference: an adversarial **seam** search (the known pitfalls, shrunk reproducers), the
# **replay** of real sessions, and the same sessions with a **rewritten** history (a
# thinking template whose `<think>\n` generation prefix is replaced by the answer on the
# next turn). The tier must be exact everywhere; the others are measured.

# %% tags=["parameters"]
tokenizers = ["llama3", "qwen3", "qwen3.6", "gpt-oss", "deepseek-v4", "cl100k", "bert-uncased", "tekken",
              "mistral-sp-v3"]
seams = 40
sessions = 2
sweep = False
seed = 0
workers = 1  # processes for the ladder's jobs (the rule passes its threads)
archive = "data/build/archives/mini-swe-agent-gemini3-swebench-verified.tar.xz"
results_dir = "results"

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from toktier import audit
from toktier.bench.machine import machine_facts
from toktier.bench.streams import load_trajectories

results = Path(results_dir)
for sub in ("tables", "figures", "runs"):
    (results / sub).mkdir(parents=True, exist_ok=True)
sns.set_theme(style="whitegrid")

# %%
trajs = load_trajectories(Path(archive), limit=sessions) if sessions else []
method_list = audit.method_names(sweep)
result = audit.ladder(tokenizers, method_list, seams=seams, trajectories=trajs, seed=seed,
                      workers=workers)
result["machine"] = machine_facts()
(results / "runs" / "audit.json").write_text(json.dumps(result, indent=1))
rows, gens, div = audit.tables(result)
rows.to_csv(results / "tables" / "audit-ladder.csv", index=False)
div.to_csv(results / "tables" / "audit-divergences.csv", index=False)
assert rows[rows.method == "toktier"].wrong.sum() == 0, "the tier served a wrong answer: a bug"
pd.DataFrame(audit.verdicts(rows))

# %% [markdown]
# Where the wrong answers come from (seam search, per pitfall generator):

# %%
gens.pivot_table(index=["method", "generator"], columns="tokenizer", values="wrong", fill_value=0)

# %% [markdown]
# A few shrunk reproducers (the previous prompt, the new prompt, and the IDs around the
# first difference):

# %%
div.groupby(["method", "tokenizer"]).head(1)[
    [
        "method",
        "tokenizer",
        "workload",
        "generator",
        "prev_chars",
        "new_chars",
        "prev_text",
        "new_text",
        "first_diff",
        "expected",
        "got",
    ]
] if len(div) else "no divergences"

# %%
order = [m for m in method_list if m in set(rows.method)]
seam = rows[rows.workload == "seam"].pivot(index="method", columns="tokenizer", values="wrong")
seam = seam.reindex(order)[tokenizers]
reuse = {
    w: rows[rows.workload == w].pivot(index="method", columns="tokenizer", values="kept_id_share")
    for w in ("replay", "rewrite")
}
lat = rows[rows.workload == "replay"].pivot(index="method", columns="tokenizer", values="p50_us")
fig, axes = plt.subplots(1, 4, figsize=(22, 0.42 * len(order) + 2.6), sharey=True)
sns.heatmap(seam, annot=True, fmt=".0f", cmap="Reds", vmin=0, cbar=False, ax=axes[0],
            linewidths=0.5)  # fmt: skip
axes[0].set(title=f"(a) wrong answers, seam search ({seams} cases each)", xlabel="", ylabel="")
panels = (("replay", "(b) % of IDs reused, replay"),
          ("rewrite", "(c) % of IDs reused, rewritten history"))  # fmt: skip
for ax, (w, label) in zip(axes[1:3], panels, strict=True):
    if len(reuse[w]):
        sns.heatmap(reuse[w].reindex(order)[tokenizers] * 100, annot=True, fmt=".0f",
                    cmap="Blues", vmin=0, vmax=100, cbar=False, ax=ax, linewidths=0.5)  # fmt: skip
    ax.set(title=label, xlabel="", ylabel="")
if len(lat):
    sns.heatmap(lat.reindex(order)[tokenizers] / 1000, annot=True, fmt=".2f", cmap="Greys",
                cbar=False, ax=axes[3], linewidths=0.5)  # fmt: skip
axes[3].set(title="(d) replay P50 per call (ms)", xlabel="", ylabel="")
for ax in axes:
    ax.tick_params(axis="x", rotation=30)
fig.suptitle(f"Incremental tokenizers vs the reference: {len(trajs)} sessions replayed as is and "
             "with a rewritten history; every answer checked (0 = exact on every case)")  # fmt: skip
fig.tight_layout()
fig.savefig(results / "figures" / "audit-ladder.png", dpi=130)
