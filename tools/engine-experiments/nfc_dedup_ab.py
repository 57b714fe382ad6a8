"""Each distinct NFC stretch normalized once (``cpu._nfc_verdicts`` now) against every stretch,
repeats and all (before), in whole one-thread engine calls: one engine, warm piece caches, variants
alternated per slice, each call on a fresh str copy; outputs checked equal.

Usage: ``.venv/bin/python tools/engine-experiments/nfc_dedup_ab.py NAME KIND [CHARS] [N]``.
"""

import sys

import numpy as np
from alternate import alternate, report

from toktier.engine import cpu

NEW = cpu._nfc_verdicts


def all_stretches(normalize, cps, ra, rb, first, which, joined, sep):
    """Before: every stretch into the reference's normalizer, repeats and all."""
    if len(ra) == 0:
        return np.zeros(0, dtype=bool)
    return cpu._nfc_changes_distinct(normalize, cps, ra, rb, *cpu._join_stretches(cps, ra, rb))


def main(name: str, kind: str, chars: int = 1_000_000, n: int = 8) -> None:
    def use(fn):
        return lambda: setattr(cpu, "_nfc_verdicts", fn)

    res = alternate(name, kind, chars, n, {"every stretch (old)": use(all_stretches),
                                           "distinct once (new)": use(NEW)})  # fmt: skip
    cpu._nfc_verdicts = NEW
    report(f"{name} {kind} {chars:,} chars, {n} slices x 3 rounds, one thread, warm", res)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], *(int(x) for x in a[2:]))
