"""Experiment 06's bulk table (best of 2, one call over 2M characters per corpus) for llama3 and
qwen3, through the function the notebook calls (``full_bench.bulk_table``), without the rest of 06.
Usage: ``TOKTIER_HOME=data/build .venv/bin/python tools/engine-experiments/bulk_table.py OUT_PREFIX``
(writes OUT_PREFIX.csv and OUT_PREFIX.json with the machine block)."""
import json
import sys

import pandas as pd

from toktier.bench import full_bench
from toktier.bench.machine import machine_facts


def show(r):
    print(r["tokenizer"], r["corpus"], r["method"], round(r["mb_per_s"], 1), flush=True)


def main():
    rows = full_bench.bulk_table(("llama3", "qwen3"), 2_000_000, progress=show)
    out = sys.argv[1]
    pd.DataFrame(rows).to_csv(out + ".csv", index=False)
    with open(out + ".json", "w", encoding="utf-8") as f:
        json.dump({"machine": machine_facts(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
