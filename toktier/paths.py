"""Where toktier keeps what it builds: one data home, overridable by TOKTIER_HOME."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def repo_root() -> Path | None:
    """The source checkout this package runs from, if any (editable installs)."""
    root = PACKAGE_DIR.parent
    return root if (root / "pyproject.toml").is_file() and (root / "Snakefile").is_file() else None


def data_home() -> Path:
    """Built artifacts (tokenizers, probe caches, wheels): never committed."""
    env = os.environ.get("TOKTIER_HOME")
    if env:
        return Path(env).expanduser().resolve()
    root = repo_root()
    if root is not None:
        return root / "data" / "build"
    return Path.home() / ".cache" / "toktier"


def tokenizer_dir() -> Path:
    return data_home() / "tokenizers"


def wheel_cache() -> Path:
    return data_home() / "wheels"


def probe_cache() -> Path:
    return data_home() / "probes"


def quarantine_dir() -> Path:
    """Where the shadow verifier writes mismatch records: private, per user, never in a checkout.

    ``TOKTIER_QUARANTINE`` overrides; else ``$XDG_STATE_HOME/toktier/quarantine``
    (``~/.local/state/toktier/quarantine``).  Records hold users' prompts.
    """
    env = os.environ.get("TOKTIER_QUARANTINE")
    if env:
        return Path(env).expanduser().resolve()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state).expanduser() / "toktier" / "quarantine"
