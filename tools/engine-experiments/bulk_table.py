"""Experiment 06's bulk table (best of 2, one call over 2M characters per corpus) for llama3 and
qwen3, as its notebook computes it, without the rest of 06.
Usage: ``TOKTIER_HOME=data/build .venv/bin/python tools/engine-experiments/bulk_table.py OUT_PREFIX``
(writes OUT_PREFIX.csv and OUT_PREFIX.json with the machine block)."""
import json
import sys

import pandas as pd

import toktier
from toktier.bench import full_bench
from toktier.bench.machine import machine_facts
from toktier.campaigns.corpus import mixed_documents


def main():
    rows = []
    for name in ("llama3", "qwen3"):
        tok = toktier.load(name)
        corpora = {}
        for src in ("stdlib", "trajectories", "pycountry"):
            docs, _ = mixed_documents(2_000_000, sources=(src,))
            corpora[src] = "".join(docs)[:2_000_000]
        for r in full_bench.bulk_throughput(tok, corpora):
            rows.append({"tokenizer": name, **r})
            print(name, r["corpus"], r["method"], round(r["mb_per_s"], 1), flush=True)
    out = sys.argv[1]
    pd.DataFrame(rows).to_csv(out + ".csv", index=False)
    with open(out + ".json", "w", encoding="utf-8") as f:
        json.dump({"machine": machine_facts(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
