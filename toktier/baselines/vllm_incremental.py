"""Clean-room reproduction of vLLM's opt-in incremental prompt encoding (vllm-project/vllm
RFC #47582, PR #47583, both open).

From the RFC, the PR's description and the module's documentation (written here from that
description; no code copied): when a new prompt extends a cached one, the method backs up
``backup_chars`` characters from the end of the cached text, pre-tokenizes that window with
the tokenizer's own pre-tokenizer, and takes as the seam the first pre-token start that is
at least ``margin_chars`` from both window edges, has no special-token sigil ``"<|"``
within ``margin_chars`` on either side, and is a token boundary of the cached encoding (a
cached token ends there and the next one starts there).  It re-encodes the text from the
seam and accepts the splice only if the re-encoded tokens over the overlap (the cached
tokens from the seam that end at least ``margin_chars`` before the cached text's end;
at least one) have the cached IDs and offsets.  Anything it cannot prove safe falls back
to a full encode: no pre-tokenizer, a normalizer that changes the window, no seam, a failed
overlap check, a prompt shorter than ``min_chars``.

Defaults, from the PR's constructor: ``backup_chars = 1024``, ``margin_chars = 96``,
``min_chars = 16384`` (which must be at least ``backup_chars + 2 * margin_chars``).
**[reading]**: a serving cache holds many conversations and matches by longest string
prefix; the audit's calling convention gives it the session's previous prompt, which is
that match.  Texts shorter than ``min_chars`` are never cached, so a prompt extending one
is encoded in full.
"""

from __future__ import annotations

import numpy as np

from .incremental import OffsetMemo

PUBLISHED_BACKUP_CHARS = 1024
PUBLISHED_MARGIN_CHARS = 96
PUBLISHED_MIN_CHARS = 16384
SPECIAL_SIGIL = "<|"


class VllmIncremental:
    def __init__(self, tok, backup_chars: int = PUBLISHED_BACKUP_CHARS,
                 margin_chars: int = PUBLISHED_MARGIN_CHARS,
                 min_chars: int = PUBLISHED_MIN_CHARS):  # fmt: skip
        if backup_chars < 1 or margin_chars < 0:
            raise ValueError("backup_chars must be >= 1 and margin_chars >= 0")
        if min_chars < backup_chars + 2 * margin_chars:
            raise ValueError(
                f"min_chars must be at least backup_chars + 2 * margin_chars "
                f"({backup_chars + 2 * margin_chars}), got {min_chars}"
            )
        self.backup_chars, self.margin_chars, self.min_chars = backup_chars, margin_chars, min_chars
        self.name = f"vLLM incremental encoding (margin {margin_chars}, backup {backup_chars})"
        self._memo = OffsetMemo(tok)
        self._pre_tokenizer = tok.hf.pre_tokenizer  # None: the method is off for this tokenizer
        self._normalizer = tok.hf.normalizer

    def reset(self) -> None:
        self._memo.reset()

    def _full(self, text: str):
        ids, starts, ends = self._memo.encode(text)
        if len(text) >= self.min_chars:  # only long prompts are cached
            self._memo.remember(text, ids, starts, ends)
        else:
            self._memo.reset()
        return ids, 0

    def __call__(self, prev_text: str, prev_ids, new_text: str):
        if (self._pre_tokenizer is None or len(new_text) < self.min_chars
                or len(prev_text) < self.min_chars or not new_text.startswith(prev_text)):  # fmt: skip
            return self._full(new_text)
        ids, starts, ends = self._memo.of(prev_text, prev_ids)
        if len(new_text) == len(prev_text):
            return ids, len(ids)
        spliced = self._splice(new_text, len(prev_text), ids, starts, ends)
        if spliced is None:
            return self._full(new_text)
        out, out_s, out_e, split = spliced
        self._memo.remember(new_text, out, out_s, out_e)
        return out, split

    def _seam(self, text: str, cached_len: int, starts, ends) -> tuple[int, int] | None:
        """(character position, token index) of the first provably usable seam, or None."""
        base = cached_len - self.backup_chars
        window = text[base:cached_len]
        if self._normalizer is not None and self._normalizer.normalize_str(window) != window:
            return None
        m = self.margin_chars
        for _, (s, _e) in self._pre_tokenizer.pre_tokenize_str(window):
            if not m <= s <= len(window) - m:
                continue
            pos = base + s
            if SPECIAL_SIGIL in text[max(0, pos - m) : pos + m]:
                continue
            k = int(np.searchsorted(ends, pos, side="right")) - 1  # last cached token ending <= pos
            if k >= 0 and ends[k] == pos and k + 1 < len(starts) and starts[k + 1] == pos:
                return pos, k + 1
        return None

    def _splice(self, text: str, cached_len: int, ids, starts, ends):
        seam = self._seam(text, cached_len, starts, ends)
        if seam is None:
            return None
        pos, split = seam
        t_ids, t_s, t_e = self._memo.encode(text[pos:])
        t_s, t_e = t_s + pos, t_e + pos
        # the overlap: cached tokens from the seam that end at least margin_chars before the end
        stop = int(np.searchsorted(ends, cached_len - self.margin_chars, side="right"))
        n = stop - split
        if n <= 0 or n > len(t_ids):
            return None
        if not (np.array_equal(ids[split:stop], t_ids[:n])
                and np.array_equal(starts[split:stop], t_s[:n])
                and np.array_equal(ends[split:stop], t_e[:n])):  # fmt: skip
            return None
        return (np.concatenate([ids[:split], t_ids]), np.concatenate([starts[:split], t_s]),
                np.concatenate([ends[:split], t_e]), split)  # fmt: skip
