"""Which NFC stretches changed, found by a compiled walk over both texts (``cpu.nfc_changes``
now) against splitting the normalized and original joins and comparing the parts in Python
(before), in whole one-thread engine calls: one engine, warm piece caches, variants
alternated per slice, each call on a fresh str copy; outputs checked equal.  Since 3130c18 the new
variant also normalizes each distinct stretch once and the old one does not, so a run now
measures both changes together (``results/runs/engine-ab/nfc-segmented.txt`` has each alone).

Usage: ``.venv/bin/python tools/engine-experiments/nfc_walk_ab.py NAME KIND [CHARS] [N]``.
"""

import sys

import numpy as np
from alternate import alternate, report

from toktier.engine import cpu

NEW = cpu.nfc_changes


def split_compare(normalize, cps, ra, rb):
    """The previous ``nfc_changes``: both joins split at the separator, parts compared."""
    m = len(ra)
    if m == 0:
        return np.zeros(0, dtype=bool)
    joined, sep = cpu._join_stretches(cps, ra, rb)
    if m >= 2 and sep >= 0:
        s = cpu._utf32(joined)
        normed = normalize(s)
        if normed == s:
            return np.zeros(m, dtype=bool)
        parts = normed.split(chr(sep))
        if len(parts) == m:
            return np.array([q != p for q, p in zip(parts, s.split(chr(sep)), strict=True)])
    pieces = [cpu._utf32(cps[a:b]) for a, b in zip(ra.tolist(), rb.tolist(), strict=True)]
    return np.array([normalize(p) != p for p in pieces], dtype=bool)


def main(name: str, kind: str, chars: int = 1_000_000, n: int = 8) -> None:
    def use(fn):
        return lambda: setattr(cpu, "nfc_changes", fn)

    res = alternate(name, kind, chars, n, {"split and compare (old)": use(split_compare),
                                           "compiled walk (new)": use(NEW)})  # fmt: skip
    cpu.nfc_changes = NEW
    report(f"{name} {kind} {chars:,} chars, {n} slices x 3 rounds, one thread, warm", res)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], *(int(x) for x in a[2:]))
