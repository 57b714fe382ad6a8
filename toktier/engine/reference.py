"""The reference engine (HF ``tokenizers``): IDs and character spans as numpy arrays."""

from __future__ import annotations

import numpy as np


class ReferenceEngine:
    """Window and full encodes through the reference itself (exact by definition)."""

    name = "reference"

    def __init__(self, tokenizer):
        self._hf = tokenizer.hf

    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids uint32, starts int64, ends int64): each token's character span in ``text``."""
        enc = self._hf.encode(text, add_special_tokens=False)
        ids = np.asarray(enc.ids, dtype=np.uint32)
        if not len(ids):
            empty = np.zeros(0, dtype=np.int64)
            return ids, empty, empty.copy()
        off = np.asarray(enc.offsets, dtype=np.int64)
        return ids, off[:, 0].copy(), off[:, 1].copy()

    encode_full = encode  # the reference is serial: same call for windows and full texts

    def encode_ids(self, text: str) -> np.ndarray:
        """The IDs alone (no offsets converted)."""
        return np.asarray(self._hf.encode(text, add_special_tokens=False).ids, dtype=np.uint32)

    def warmup(self) -> float:
        return 0.0
