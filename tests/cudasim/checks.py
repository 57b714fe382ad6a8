"""What every simulator test compares against: the reference's IDs, offsets and pieces."""

from __future__ import annotations

import numpy as np

NAMES = ["llama3", "gpt-oss", "deepseek-v4", "qwen3", "qwen3.6", "cl100k"]


def reference(tok, text):
    enc = tok.hf.encode(text, add_special_tokens=False)
    return enc.ids, [tuple(o) for o in enc.offsets]


def check_ids(tok, text, ids, s, e, what):
    ref_ids, ref_off = reference(tok, text)
    assert ids.dtype == np.uint32 and s.dtype == np.int64 and e.dtype == np.int64
    assert ids.tolist() == ref_ids, (tok.name, what, text[:60], ids.tolist()[:20], ref_ids[:20])
    assert list(zip(s.tolist(), e.tolist(), strict=True)) == ref_off, (tok.name, what, text[:60])


def check_split(tok, text, starts, ends):
    ref = [b for _p, (_a, b) in tok.hf.pre_tokenizer.pre_tokenize_str(text)]
    assert ends.tolist() == ref, (tok.name, "split", text[:60], ends.tolist()[:20], ref[:20])
    assert starts.tolist() == ([0, *ref[:-1]] if ref else [])


def representatives(tok):
    """One character of every class of the tokenizer's tables, NFC-safe ones only."""
    from toktier.campaigns.engine_campaign import class_representatives
    from toktier.families.classes import NFC_UNSAFE

    return [c for c in class_representatives(tok) if not tok.class_table.bits[ord(c)] & NFC_UNSAFE]


def stdlib_text(n: int) -> str:
    """Real code: the start of the standard library's JSON decoder."""
    import json

    with open(json.__file__.replace("__init__.py", "decoder.py")) as f:
        return f.read()[:n]
