"""Machine facts recorded with every result: timings are never compared across machines."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

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


def _cpu_id() -> dict:
    """Vendor, family, model and stepping, the vector width and the caches: a model name such
    as "AMD EPYC" or "Intel(R) Xeon(R) Processor" (what a VM shows) names no generation, and
    two VMs of the same name ran the same request path ~1.7x apart (docs/hardware.md)."""
    keys = {"vendor_id": "vendor", "cpu family": "family", "model": "model", "stepping": "stepping"}
    out: dict = {}
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block is enough
                key, _, value = (part.strip() for part in line.partition(":"))
                if key in keys:
                    out[keys[key]] = value
                elif key == "flags":
                    flags = set(value.split())
    except OSError:
        return out
    out["avx2"], out["avx512"] = "avx2" in flags, "avx512f" in flags
    caches = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level, kind, size = ((index / f).read_text(encoding="utf-8").strip()
                                 for f in ("level", "type", "size"))  # fmt: skip
        except OSError:
            continue
        caches[f"L{level}" + ("d" if kind == "Data" else "i" if kind == "Instruction" else "")] = size
    if caches:
        out["caches"] = caches
    return out


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
        "cpu_id": _cpu_id(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": {
            p: _version(p)
            for p in ("toktier", "tokenizers", "numba", "numba-cuda", "numpy", "tiktoken")
        },
    }
