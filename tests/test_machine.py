"""Run records name the code that ran: the checkout's commit, or the one a copied tree names."""

from __future__ import annotations

import re

from toktier.bench import machine


def test_the_checkout_commit_is_recorded(monkeypatch):
    monkeypatch.delenv("TOKTIER_SOURCE_COMMIT", raising=False)
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", machine.source_commit() or "")


def test_a_copied_tree_takes_the_commit_it_is_told(monkeypatch):
    """A GPU lease's copy of the tree carried a stale .git: the caller names the commit."""
    monkeypatch.setenv("TOKTIER_SOURCE_COMMIT", "9ad95116894e38cd8a14d1e181b6d9bb8c9858dd")
    assert machine.source_commit() == "9ad95116894e38cd8a14d1e181b6d9bb8c9858dd"
