"""Could a fresh piece start from its characters' tokens instead of its bytes?  Checked, no
(README, "The exact CPU engine": tried 2026-11-26, fifth session).

A multi-byte character whose bytes merge to one token T costs its fresh pieces one to
three merge steps each.  Starting from T is exact when no merge outside the character
can happen before the character is whole, and no merge would have happened differently
had it been whole from the start.  A sufficient condition, per character (R: the highest
priority among the merges that build T from its bytes, taken alone):

1. every merge with T as an operand has priority above R, and
2. every merge whose right operand is a symbol at the character's left edge before it is
   whole (or whose left operand is one at its right edge) has priority above R.

Then while the character is unfinished some merge inside it (priority <= R) always comes
first, and a merge between finished symbols is chosen in the same order either way.
This counts, per tokenizer, the Basic Multilingual Plane characters whose bytes merge to
one token and those that meet each condition.  Condition 2 fails for ~96% of them: a
lead byte merges with a preceding space or letter long before its character is whole
(e.g. " " + 0xD0 at a low priority), so the shortcut would hardly ever apply.
Usage: ``.venv/bin/python tools/engine-experiments/char_first_merges.py``.
"""

import itertools

import numpy as np

from toktier import load
from toktier.engine import cpu
from toktier.engine.rules import PRIO_GROUP_BITS

for name in ("llama3", "qwen3", "gpt-oss"):
    bt = cpu.engine_for(load(name)).bpe
    slots = bt.merges[bt.merges != -1]
    key = slots >> 27
    left, right, prio = key >> 18, key & ((1 << 18) - 1), slots & 0x7FFFFFF
    big = np.int64(1 << 40)
    min_as_left = np.full(bt.nbytes.size, big)
    np.minimum.at(min_as_left, left, prio)
    min_as_right = np.full(bt.nbytes.size, big)
    np.minimum.at(min_as_right, right, prio)
    table = {(int(a), int(b)): int(p) for a, b, p in zip(left, right, prio, strict=True)}

    whole = fail1 = fail2 = passed = 0
    for cp in range(0x80, 0x10000):
        if 0xD800 <= cp < 0xE000:
            continue
        sym = [int(bt.byte_ids[b]) for b in chr(cp).encode()]
        lefts, rights, top = [], [], -1
        while len(sym) > 1:
            lefts.append(sym[0])
            rights.append(sym[-1])
            cands = [(table[p], k) for k, p in enumerate(itertools.pairwise(sym)) if p in table]
            if not cands:
                break
            p, k = min(cands)  # lowest priority, leftmost among equals
            top = max(top, p)
            sym[k : k + 2] = [p >> PRIO_GROUP_BITS if bt.direct else int(bt.merged[p])]
        if len(sym) != 1:
            continue
        whole += 1
        c1 = min_as_left[sym[0]] <= top or min_as_right[sym[0]] <= top
        c2 = any(min_as_right[s] <= top for s in lefts) or any(min_as_left[s] <= top for s in rights)
        fail1 += c1
        fail2 += c2
        passed += not (c1 or c2)
    print(f"{name}: {whole:,} BMP characters merge to one token; condition 1 fails for "
          f"{fail1:,}, condition 2 for {fail2:,}; both hold for {passed:,}")  # fmt: skip
