"""Machine facts recorded with every result: timings are never compared across machines."""

from __future__ import annotations

import os
import platform
from importlib import metadata


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


def machine_facts() -> dict:
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": {
            p: _version(p)
            for p in ("toktier", "tokenizers", "numba", "numba-cuda", "numpy", "tiktoken")
        },
    }
