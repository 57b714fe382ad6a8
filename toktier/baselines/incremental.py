"""What every clean-room incremental method shares: the audit's calling convention and a
memo of the previous result's character offsets.

An *incremental method* is a callable ``method(prev_text, prev_ids, new_text)`` returning
the IDs it would serve for ``new_text`` — either an array, or ``(ids, kept)`` where
``kept`` is how many leading IDs it took from its cache instead of encoding them (an
``int``; ``0``: it fell back to a full encode) or just whether it took its incremental
path (a ``bool``).  ``reset()``, when present, clears per-session state (the audit calls it at the
start of every session).  ``toktier.audit`` runs any such callable.

The methods reproduced here need the previous prompt's token offsets, which serving stacks
keep beside the cached IDs.  ``OffsetMemo`` keeps them for the last text it encoded (what
a per-session cache holds) and computes them with one reference encode when asked about a
text it has not seen (a cold cache: the audit's seam search, never its timed replay).
"""

from __future__ import annotations

import numpy as np


class OffsetMemo:
    """IDs and character offsets of the last text this method produced IDs for."""

    def __init__(self, tok):
        self._hf = tok.hf
        self.text: str | None = None
        self.ids = np.empty(0, np.int64)
        self.starts = np.empty(0, np.int64)
        self.ends = np.empty(0, np.int64)

    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Reference IDs and offsets of ``text`` (a full encode)."""
        e = self._hf.encode(text, add_special_tokens=False)
        off = np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2)
        return np.asarray(e.ids, dtype=np.int64), off[:, 0].copy(), off[:, 1].copy()

    def of(self, text: str, ids) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The cached entry for ``text`` (recomputed when this memo has not seen it)."""
        if self.text != text:
            self.remember(text, *self.encode(text))
        return self.ids, self.starts, self.ends

    def remember(self, text: str, ids, starts, ends) -> None:
        self.text, self.ids, self.starts, self.ends = text, ids, starts, ends

    def reset(self) -> None:
        self.text = None


def common_prefix_chars(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings (binary search on slices: C speed)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
