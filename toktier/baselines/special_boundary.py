"""Clean-room reproduction of the special-token-boundary prefix caches that front ends ship
(the paper's description of them; SGLang's gateway L1 prefix cache, which caches at
special-token boundaries — smg-project/smg PR #1637 fixed its key, which had ignored
``add_special_tokens`` and so returned the wrong BOS once warm; Dynamo's cached tokenizer).

The premise: an added (special) token is extracted before normalization and
pre-tokenization, so the text after it tokenizes independently of the text before it.
The method keeps the previous IDs through the last added token (a literal occurrence of
its text, not an ``[UNK]`` the model produced) that ends inside the common prefix of the two prompts and encodes the rest.  **[reading]**: one previous prompt
per session (not a shared radix tree); the cut is the end of that added token.
"""

from __future__ import annotations

import numpy as np

from .incremental import OffsetMemo, common_prefix_chars


class SpecialTokenBoundary:
    name = "special-token boundary cache"

    def __init__(self, tok):
        self._memo = OffsetMemo(tok)
        added = tok.hf.get_added_tokens_decoder()
        self._content = {i: t.content for i, t in added.items()}
        self._added = np.array(sorted(added), dtype=np.int64)

    def reset(self) -> None:
        self._memo.reset()

    def __call__(self, prev_text: str, prev_ids, new_text: str):
        memo = self._memo
        if not prev_text or self._added.size == 0:
            memo.remember(new_text, *memo.encode(new_text))
            return memo.ids, 0
        ids, starts, ends = memo.of(prev_text, prev_ids)
        lcp = common_prefix_chars(prev_text, new_text)
        inside = np.flatnonzero(np.isin(ids, self._added) & (ends <= lcp))
        # only a literal occurrence in the text is a boundary (a WordPiece [UNK] is not)
        inside = [i for i in inside.tolist()
                  if prev_text[starts[i]:ends[i]] == self._content[int(ids[i])]]  # fmt: skip
        if not inside:
            memo.remember(new_text, *memo.encode(new_text))
            return memo.ids, 0
        keep = inside[-1] + 1
        cut = int(ends[keep - 1])
        t_ids, t_s, t_e = memo.encode(new_text[cut:])
        out = np.concatenate([ids[:keep], t_ids])
        memo.remember(new_text, out, np.concatenate([starts[:keep], t_s + cut]),
                      np.concatenate([ends[:keep], t_e + cut]))  # fmt: skip
        return out, keep
