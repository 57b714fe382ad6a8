"""Clean-room reproduction of TensorRT-LLM's prefix-tokenization cache (NVIDIA/TensorRT-LLM
PR #18389, merged; cherry-picked for MiniMax-M3 in PR #19373).

From the PR's description and its review threads (no code of theirs was read or copied
beyond the fragments quoted in those threads): when a new prompt extends a cached one, the
cache "backs off ``overlap`` tokens from the end of the cached prefix, re-tokenizes from
there, and accepts the splice only if the first ``resync`` re-tokenized ids equal the
cached ids over the same span"; otherwise it tokenizes the prompt in full.  The comparison
span is ``min(resync, len(tail_ids), len(cached_tail))`` and must be non-empty (review
thread on ``prefix_token_cache.py``).  Prompts shorter than ``min_chars`` are not cached.

Defaults, with where each comes from: ``overlap = 64`` tokens and ``resync = 32`` (issue
#15's reading of PR #18389: constructor-only "correctness internals"); ``min_chars = 4096``
(the review thread: "the 4096-char default").  **[reading]**: the back-off point's character
position is the start offset of the first backed-off token (the cache keeps offsets with
the IDs); the splice is ``cached[:split] + tail``.
"""

from __future__ import annotations

import numpy as np

from .incremental import OffsetMemo

PUBLISHED_OVERLAP = 64
PUBLISHED_RESYNC = 32
PUBLISHED_MIN_CHARS = 4096


class TrtllmPrefixCache:
    def __init__(self, tok, overlap: int = PUBLISHED_OVERLAP, resync: int = PUBLISHED_RESYNC,
                 min_chars: int = PUBLISHED_MIN_CHARS):  # fmt: skip
        if overlap < 1 or resync < 1:
            raise ValueError("overlap and resync must be at least 1 token")
        self.overlap, self.resync, self.min_chars = overlap, resync, min_chars
        self.name = f"TRT-LLM prefix cache (overlap {overlap}, resync {resync})"
        self._memo = OffsetMemo(tok)

    def reset(self) -> None:
        self._memo.reset()

    def __call__(self, prev_text: str, prev_ids, new_text: str):
        memo = self._memo
        if len(prev_text) < self.min_chars or not new_text.startswith(prev_text):
            memo.remember(new_text, *memo.encode(new_text))
            return memo.ids, 0
        ids, starts, ends = memo.of(prev_text, prev_ids)
        split = max(0, len(ids) - self.overlap)
        cut = int(starts[split]) if split < len(ids) else len(prev_text)
        t_ids, t_s, t_e = memo.encode(new_text[cut:])
        cached_tail = ids[split:]
        span = min(self.resync, len(t_ids), len(cached_tail))
        if span > 0 and np.array_equal(t_ids[:span], cached_tail[:span]):
            out = np.concatenate([ids[:split], t_ids])
            memo.remember(new_text, out, np.concatenate([starts[:split], t_s + cut]),
                          np.concatenate([ends[:split], t_e + cut]))  # fmt: skip
            return out, split
        memo.remember(new_text, *memo.encode(new_text))
        return memo.ids, 0
