"""Clean-room reproductions of TensorRT-LLM's router-side incremental tokenization.

``ExactPrefixSuffix`` — the exact-prefix suffix encode of the KV-cache-aware router (PR
#15040, merged) and its per-session context-server variant (PR #15376): "re-encodes only
the suffix that extends" the previous prompt — ``prev_ids + encode(new[len(prev):])`` when
the previous prompt is a literal prefix, a full encode otherwise.  **[reading]**: no
back-off (the PR descriptions mention none).

``BoundaryRollback`` — the boundary-aware variant (PR #17462, open): "find the rendered-
text longest common prefix, map it to cached tokenizer offsets, roll back one token, and
retokenize only the changed suffix", falling back to a full encode when offsets are
unavailable; rollback configurable (default 1 token) and an optional periodic full
verification (``verify_every`` requests; 0 = off, its default here **[reading]**).
**[reading]**: the LCP maps to the number of cached tokens that end at or before it; the
rollback removes ``rollback`` more; re-tokenization starts at the next kept token's start.
"""

from __future__ import annotations

import numpy as np

from .incremental import OffsetMemo, common_prefix_chars

PUBLISHED_ROLLBACK = 1


class ExactPrefixSuffix:
    name = "TRT-LLM exact-prefix suffix encode"

    def __init__(self, tok):
        self._memo = OffsetMemo(tok)

    def reset(self) -> None:
        self._memo.reset()

    def __call__(self, prev_text: str, prev_ids, new_text: str):
        memo = self._memo
        if not prev_text or not new_text.startswith(prev_text):
            memo.remember(new_text, *memo.encode(new_text))
            return memo.ids, 0
        ids, starts, ends = memo.of(prev_text, prev_ids)
        cut = len(prev_text)
        t_ids, t_s, t_e = memo.encode(new_text[cut:])
        out = np.concatenate([ids, t_ids])
        memo.remember(new_text, out, np.concatenate([starts, t_s + cut]),
                      np.concatenate([ends, t_e + cut]))  # fmt: skip
        return out, len(ids)


class BoundaryRollback:
    def __init__(self, tok, rollback: int = PUBLISHED_ROLLBACK, verify_every: int = 0):
        if rollback < 0:
            raise ValueError("rollback must be >= 0 tokens")
        self.rollback, self.verify_every = rollback, verify_every
        self.name = f"TRT-LLM boundary-aware (rollback {rollback})"
        self._memo = OffsetMemo(tok)
        self._calls = 0

    def reset(self) -> None:
        self._memo.reset()
        self._calls = 0

    def __call__(self, prev_text: str, prev_ids, new_text: str):
        memo = self._memo
        self._calls += 1
        if not prev_text or (self.verify_every and self._calls % self.verify_every == 0):
            memo.remember(new_text, *memo.encode(new_text))
            return memo.ids, 0
        ids, starts, ends = memo.of(prev_text, prev_ids)
        lcp = common_prefix_chars(prev_text, new_text)
        keep = int(np.searchsorted(ends, lcp, side="right"))  # tokens ending at or before
        keep = max(0, keep - self.rollback)
        cut = int(starts[keep]) if keep < len(ids) else lcp
        if keep == 0 or ends[keep - 1] > cut:  # nothing kept, or offsets inconsistent at the cut
            memo.remember(new_text, *memo.encode(new_text))
            return memo.ids, 0
        t_ids, t_s, t_e = memo.encode(new_text[cut:])
        out = np.concatenate([ids[:keep], t_ids])
        memo.remember(new_text, out, np.concatenate([starts[:keep], t_s + cut]),
                      np.concatenate([ends[:keep], t_e + cut]))  # fmt: skip
        return out, keep
