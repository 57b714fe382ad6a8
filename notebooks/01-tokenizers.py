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
# # 01 · The tokenizer registry
#
# The ten pinned tokenizers, each built offline from a PyPI wheel and verified by
# sha256 (`toktier/manifest.json`). The family is detected from each tokenizer.json's
# structure, not from its name; the longest-token facts are probed from the vocabulary;
# `route` says how the tier serves it (a family without engine rules or a repair
# certificate, such as Mistral's Tekken today, is served by the reference, exactly).
# The conversion certification compares our conversions with each original's own
# encoder — SentencePiece's for the two SentencePiece models — and our tiktoken / Tekken → tokenizer.json
# conversions with `tiktoken.Encoding` built from the same ranks, pattern and special
# tokens (for Tekken: ranks shifted by its 1,000 special ids, which is what
# mistral-common's encoder returns).

# %% tags=["parameters"]
names = "llama3,deepseek-v4,bert-uncased,qwen3,qwen3.6,gpt-oss,cl100k,tekken,mistral-sp-v1,mistral-sp-v3"
results_dir = "results"

# %%
import json
from pathlib import Path

import pandas as pd

from toktier import artifacts
from toktier.cli import tokenizer_rows

results = Path(results_dir)
(results / "tables").mkdir(parents=True, exist_ok=True)

# %%
rows = tokenizer_rows(names.split(","))
for r in rows:
    src = artifacts.entry(r["name"])["source"]
    r["source"] = f"{src['package']}=={src['version']}:{src['member']}"
    r["recipe"] = artifacts.entry(r["name"])["recipe"]["kind"]
table = pd.DataFrame(rows)
table.to_csv(results / "tables" / "tokenizers.csv", index=False)
(results / "tables" / "tokenizers.md").write_text(
    table.to_markdown(index=False) if hasattr(table, "to_markdown") else table.to_string()
)
table

# %% [markdown]
# ## Conversion certification (converted entries vs tiktoken)

# %%
cert_path = results / "runs" / "conversion-certification.json"
if cert_path.exists():
    cert = json.loads(cert_path.read_text())
    cert_table = pd.DataFrame(cert["results"]).drop(columns=["chars_by_source", "first_mismatch"])
    print("machine:", cert["machine"]["cpu"], "·", cert["machine"]["cores"], "cores")
    display(cert_table)  # noqa: F821 - provided by IPython
    assert (cert_table["mismatches"] == 0).all() and (cert_table["vocab_mismatches"] == 0).all()
else:
    print("no certification run yet: `toktier certify-conversion --out", cert_path, "`")
