"""A prototype check of a *right cut* for edits (not in the library): is a stable pair in the
common suffix a cut, as the left cut is in the common prefix?

For random edits (replace, insert, delete; 1-200 characters, at random places, some inside long
runs) of real texts, the splice ``cached[:k1] + encode(T[q1:q2]) + cached[k2:]`` (shifted) --
``q1`` the left cut (``repair.find_cut``'s conditions, searched back from the edit), ``q2`` the
first cached record start in the common suffix whose pair is stable and NFC-safe, with both
characters in the suffix, ordinal 0, no cached record across it and no literal of the new text
straddling it -- is compared with the reference's IDs for the whole new text.  Prints the
counts, mismatches (with an example) and how many characters the splice encodes against the
text's length.  Usage: ``.venv/bin/python tools/append-profile/right_cut_check.py NAME [EDITS] [SEED] [LOOK]``
(LOOK: characters encoded past the right cut, 1 by default; 0 shows why one is needed).
"""

import random
import sys

import numpy as np
from session_loop import transcripts_tier

from toktier import load, repair
from toktier.campaigns import corpus

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
edits = int(sys.argv[2]) if len(sys.argv) > 2 else 300
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
LOOK = int(sys.argv[4]) if len(sys.argv) > 4 else 1  # characters encoded past the right cut
tok = load(name)
rules = repair.rules_for(tok)
stream, _ = transcripts_tier(name, 1100)
multi = "".join(corpus.pycountry_documents())
RUNS = ["x" * 3000, "漢字" * 800, "=" * 2000, " " * 500]


def cps_of(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)


def pair_ok(cps, q) -> bool:
    x, y = cps[q - 1], cps[q]
    if not rules.stable[rules.class_of[x], rules.class_of[y]]:
        return False
    return rules.nfc_unsafe is None or not (rules.nfc_unsafe[x] or rules.nfc_unsafe[y])


def left_cut(new, cps, c_s, c_e, prefix):
    """Index of the last cached record usable as the left cut, or 0 (the text's start)."""
    k = int(np.searchsorted(c_s, prefix, side="left")) - 1
    while k >= 1:
        q = int(c_s[k])
        if q <= prefix - 1 and c_s[k - 1] < q and c_e[k - 1] <= q and pair_ok(cps, q) and \
                not rules.straddles_literal(new, q):  # fmt: skip
            return k
        k -= 1
    return 0


def right_cut(new, cps, c_s, c_e, old_len, suffix, shift):
    """Index of the first cached record usable as the right cut, or len (the text's end)."""
    lo = old_len - suffix + 1  # both characters of the pair in the common suffix
    k = int(np.searchsorted(c_s, lo, side="left"))
    while k < len(c_s):
        q = int(c_s[k])
        if c_s[k - 1] < q and c_e[k - 1] <= q and pair_ok(cps, q + shift) and \
                not rules.straddles_literal(new, q + shift):  # fmt: skip
            return k
        k += 1
    return len(c_s)


checked = mismatched = 0
encoded = total = 0
example = None
for i in range(edits):
    src = stream if i % 2 == 0 else multi
    a = rng.randrange(0, len(src) - 30_000)
    old = src[a : a + rng.choice([3_000, 12_000, 30_000])]
    if i % 5 == 0:  # a long run in the middle, the edit often inside it
        m = rng.randrange(len(old))
        old = old[:m] + rng.choice(RUNS) + old[m:]
    i0 = rng.randrange(len(old))
    i1 = min(len(old), i0 + rng.choice([0, 1, 3, 20, 200]))
    ins = src[rng.randrange(len(src) - 200) :][: rng.choice([0, 1, 5, 40, 200])]
    new = old[:i0] + ins + old[i1:]
    if new == old:
        continue
    enc = tok.hf.encode(old, add_special_tokens=False)
    ids = np.array(enc.ids)
    offs = np.array(enc.offsets) if len(enc.ids) else np.zeros((0, 2), int)
    c_s, c_e = offs[:, 0], offs[:, 1]
    prefix = 0
    n = min(len(old), len(new))
    while prefix < n and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < n - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    shift = len(new) - len(old)
    cps = cps_of(new)
    k1 = left_cut(new, cps, c_s, c_e, prefix)
    k2 = right_cut(new, cps, c_s, c_e, len(old), suffix, shift)
    q1 = int(c_s[k1]) if k1 < len(c_s) and k1 > 0 else 0
    q2 = int(c_s[k2]) + shift if k2 < len(c_s) else len(new)
    # The text from the left cut is encoded up to the right cut plus ``LOOK`` characters, and
    # its tokens that start before the right cut are kept: the pieces left of a stable pair
    # do not depend on the text right of it *given its second character* (a pattern's
    # ``\s+(?!\S)`` looks one character ahead); encoded exactly up to the cut (LOOK = 0),
    # "oth\n  " ends in a two-space piece where the whole text has "\n", " ", " 1032".
    end = min(len(new), q2 + LOOK)
    if q2 > q1:
        enc2 = tok.hf.encode(new[q1:end], add_special_tokens=False)
        mid = [t for t, (a, _) in zip(enc2.ids, enc2.offsets, strict=True) if a < q2 - q1]
    else:
        mid = []
    spliced = list(ids[:k1]) + list(mid) + list(ids[k2:])
    ref = tok.hf.encode(new, add_special_tokens=False).ids
    checked += 1
    encoded += q2 - q1
    total += len(new)
    if spliced != ref:
        mismatched += 1
        example = example or (i, i0, i1, len(ins), q1, q2)
print(f"{name}, LOOK={LOOK}: {checked} edits, {mismatched} mismatches (first: {example}); the splice encodes "
      f"{encoded / max(total, 1):.2%} of the new texts' characters")  # fmt: skip
