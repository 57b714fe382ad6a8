import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.settings.types import DeploymentMethod
from snakemake.utils import min_version, validate

from toktier.families.detect import ENGINE_FAMILIES  # the families with a compiled CPU engine

min_version("9.0")


configfile: "config/config.yaml"


validate(config, "../schemas/config.schema.yaml")

ROOT = Path(workflow.basedir)
# Under --software-deployment-method conda (--use-conda) each job runs in the declared
# environment (environment.yml), so its shell calls that environment's python; otherwise
# the interpreter running snakemake (the virtualenv of the README's quick start).
_DEPLOY = workflow.deployment_settings
USE_CONDA = _DEPLOY is not None and DeploymentMethod.CONDA in _DEPLOY.deployment_method
PY = "python" if USE_CONDA else sys.executable
# Built artifacts (tokenizers, archives, probe caches) live here; every shell
# command passes it as TOKTIER_HOME so the library looks in the same place.
DATA_HOME = str(ROOT / "data" / "build")
# TOKTIER_DATA_MIRROR (the README's override) wins over data.mirror, whose default only
# holds for a checkout beside ../shared/data.
MIRROR = os.environ.get("TOKTIER_DATA_MIRROR") or (
    str((ROOT / config["data"]["mirror"]).resolve()) if config["data"].get("mirror") else ""
)
TOKENIZERS = config["tokenizers"]
# What applies to each tokenizer, from the manifest (its family is checked against
# detection by the tests): conversion campaigns for converted files, engine campaigns
# for families with a compiled engine, repair campaigns for every family with a certificate.
_MANIFEST = json.loads((ROOT / "toktier" / "manifest.json").read_text(encoding="utf-8"))["tokenizers"]
CONVERTED = [n for n in TOKENIZERS if _MANIFEST[n]["recipe"]["kind"] in ("tiktoken", "tekken", "sentencepiece")]
ENGINE_TOKENIZERS = [n for n in TOKENIZERS if _MANIFEST[n]["family"] in ENGINE_FAMILIES]
REPAIRABLE = [n for n in TOKENIZERS if _MANIFEST[n]["family"] != "unsupported"]


def tokenizer_json(name):
    return f"data/build/tokenizers/{name}/tokenizer.json"


def papermill(*parameters):
    """The shell command of a notebook rule: papermill executes ``input.notebook`` into
    ``output.notebook`` (kernel python3, working directory the repository root, built
    artifacts from DATA_HOME) with ``parameters`` (papermill ``-p NAME VALUE`` / ``-y YAML``
    options, snakemake placeholders allowed) and the rule's results tree; its log goes to
    the rule's ``log``.  Every notebook rule declares ``params.home``, ``params.py``,
    ``params.root`` and ``params.results``."""
    return " ".join(
        ["TOKTIER_HOME={params.home:q} {params.py} -m papermill {input.notebook:q}",
         "{output.notebook:q} --cwd {params.root:q} -k python3", *parameters,
         "-p results_dir {params.results:q} > {log:q} 2>&1"]
    )  # fmt: skip


TRAJECTORIES = "data/build/archives/mini-swe-agent-gemini3-swebench-verified.tar.xz"
# Each config writes its own results tree: the committed evidence (results/) is the full
# run's, and a kick-the-tires run lands beside it (results/kick-the-tires/, git-ignored).
RESULTS = config["results_dir"].rstrip("/")
CLAIMS_FILE = config.get("claims_file") or f"{RESULTS}/CLAIMS.md"


ALL_OUTPUTS = [
    f"{RESULTS}/tables/tokenizers.csv",
    f"{RESULTS}/tables/conversion-certification.csv",
    f"{RESULTS}/tables/workload.csv",
    f"{RESULTS}/tables/workload-summary.csv",
    f"{RESULTS}/figures/workload-anatomy.png",
    f"{RESULTS}/notebooks/01-tokenizers.ipynb",
    f"{RESULTS}/notebooks/02-workload.ipynb",
    f"{RESULTS}/tables/repair-certification.csv",
    f"{RESULTS}/tables/repair-latency.csv",
    f"{RESULTS}/figures/repair-latency.png",
    f"{RESULTS}/tables/repair-latency-families.csv",
    f"{RESULTS}/figures/repair-latency-families.png",
    f"{RESULTS}/tables/delta-sweep.csv",
    f"{RESULTS}/figures/repair-behavior.png",
    f"{RESULTS}/tables/state-memory.csv",
    f"{RESULTS}/figures/state-memory.png",
    f"{RESULTS}/notebooks/03-repair-latency.ipynb",
    f"{RESULTS}/notebooks/04-repair-behavior.ipynb",
    f"{RESULTS}/notebooks/05-state-memory.ipynb",
    f"{RESULTS}/tables/full-tokenization.csv",
    f"{RESULTS}/tables/bulk-throughput.csv",
    f"{RESULTS}/tables/engine-certification.csv",
    f"{RESULTS}/figures/full-tokenization.png",
    f"{RESULTS}/figures/full-tokenization-gpu.png",
    f"{RESULTS}/notebooks/06-full-tokenization.ipynb",
    f"{RESULTS}/tables/lopt-counterexamples.csv",
    f"{RESULTS}/figures/lopt-counterexamples.png",
    f"{RESULTS}/notebooks/07-lopt-counterexample.ipynb",
    f"{RESULTS}/tables/verifier-faults.csv",
    f"{RESULTS}/tables/verifier-delay.csv",
    f"{RESULTS}/figures/verifier-faults.png",
    f"{RESULTS}/notebooks/08-verifier-faults.ipynb",
    f"{RESULTS}/tables/tail-capacity.csv",
    f"{RESULTS}/tables/burst-tails.csv",
    f"{RESULTS}/figures/tail-capacity.png",
    f"{RESULTS}/notebooks/09-tail-capacity.ipynb",
    f"{RESULTS}/tables/continuation-latency.csv",
    f"{RESULTS}/tables/continuation-targets.csv",
    f"{RESULTS}/figures/continuation-latency.png",
    f"{RESULTS}/notebooks/10-continuation.ipynb",
    f"{RESULTS}/tables/frontend-cost.csv",
    f"{RESULTS}/figures/frontend-cost.png",
    f"{RESULTS}/tables/served-scanned.csv",
    f"{RESULTS}/figures/served-scanned.png",
    f"{RESULTS}/tables/large-appends-routes.csv",
    f"{RESULTS}/figures/large-appends.png",
    f"{RESULTS}/notebooks/13-large-appends.ipynb",
    f"{RESULTS}/notebooks/11-frontend-cost.ipynb",
    f"{RESULTS}/tables/audit-ladder.csv",
    f"{RESULTS}/figures/audit-ladder.png",
    f"{RESULTS}/notebooks/12-audit.ipynb",
]
