import json
import shlex
import sys
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, "../schemas/config.schema.yaml")

ROOT = Path(workflow.basedir)
PY = sys.executable
# Built artifacts (tokenizers, archives, probe caches) live here; every shell
# command passes it as TOKTIER_HOME so the library looks in the same place.
DATA_HOME = str(ROOT / "data" / "build")
MIRROR = str((ROOT / config["data"]["mirror"]).resolve()) if config["data"].get("mirror") else ""
TOKENIZERS = config["tokenizers"]
CONVERTED = [n for n in TOKENIZERS if n in ("qwen3", "qwen3.6", "gpt-oss", "cl100k")]


def tokenizer_json(name):
    return f"data/build/tokenizers/{name}/tokenizer.json"


TRAJECTORIES = "data/build/archives/mini-swe-agent-gemini3-swebench-verified.tar.xz"

ALL_OUTPUTS = [
    "results/tables/tokenizers.csv",
    "results/tables/conversion-certification.csv",
    "results/tables/workload.csv",
    "results/tables/workload-summary.csv",
    "results/figures/workload-anatomy.png",
    "results/notebooks/01-tokenizers.ipynb",
    "results/notebooks/02-workload.ipynb",
    "results/tables/repair-certification.csv",
    "results/tables/repair-latency.csv",
    "results/figures/repair-latency.png",
    "results/tables/delta-sweep.csv",
    "results/figures/repair-behavior.png",
    "results/tables/state-memory.csv",
    "results/figures/state-memory.png",
    "results/notebooks/03-repair-latency.ipynb",
    "results/notebooks/04-repair-behavior.ipynb",
    "results/notebooks/05-state-memory.ipynb",
    "results/tables/full-tokenization.csv",
    "results/tables/bulk-throughput.csv",
    "results/tables/engine-certification.csv",
    "results/figures/full-tokenization.png",
    "results/notebooks/06-full-tokenization.ipynb",
    "results/tables/lopt-counterexamples.csv",
    "results/figures/lopt-counterexamples.png",
    "results/notebooks/07-lopt-counterexample.ipynb",
    "results/tables/verifier-faults.csv",
    "results/tables/verifier-delay.csv",
    "results/figures/verifier-faults.png",
    "results/notebooks/08-verifier-faults.ipynb",
    "results/tables/tail-capacity.csv",
    "results/tables/burst-tails.csv",
    "results/figures/tail-capacity.png",
    "results/notebooks/09-tail-capacity.ipynb",
    "results/tables/continuation-latency.csv",
    "results/tables/continuation-targets.csv",
    "results/figures/continuation-latency.png",
    "results/notebooks/10-continuation.ipynb",
    "results/tables/frontend-cost.csv",
    "results/figures/frontend-cost.png",
    "results/notebooks/11-frontend-cost.ipynb",
]
