"""Machine facts recorded with every result: timings are never compared across machines."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata

from .. import paths


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


_SOURCES = ("toktier", "notebooks", "workflow", "config", "Snakefile", "pyproject.toml")


def source_commit() -> str | None:
    """The checkout's commit (``+dirty`` with uncommitted source changes; results written by
    the run itself do not count), or None outside a checkout."""
    # A copy of the tree run elsewhere (a GPU lease) may carry no .git or a stale one: the
    # caller names the commit it copied.
    if os.environ.get("TOKTIER_SOURCE_COMMIT"):
        return os.environ["TOKTIER_SOURCE_COMMIT"]
    root = paths.repo_root()
    if root is None:
        return None
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                *_SOURCES], cwd=root, capture_output=True, text=True,
                               timeout=10).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty.strip() else "")


# The commit when this module was first imported (campaigns and notebooks import it as they
# start): the code that ran, even if the checkout moves on before the results are written.
_STARTED_AT = source_commit()


def machine_facts() -> dict:
    return {
        "commit": _STARTED_AT,
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": {
            p: _version(p)
            for p in ("toktier", "tokenizers", "numba", "numba-cuda", "numpy", "tiktoken")
        },
    }
