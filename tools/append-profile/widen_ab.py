"""An append after a long run without stable pairs: the widening as built (``repair.widen_left``,
a failed first window not encoded again) against the earlier one (every doubling encoded, within
the ``max_widenings`` budget, then the full-text fallback), in one process, alternated.

A llama3 (or NAME) session holds CONTEXT characters of the transcripts stream followed by a run
(letters, CJK letters or '=' signs: no cut anywhere in it); the timed request is the stream's
next 1,100 characters appended.  ``reps`` fresh sessions per cell and variant, IDs checked
against the reference in the first round.  Usage:
``.venv/bin/python tools/append-profile/widen_ab.py [NAME] [REPS]``.
"""

import sys
import time

import numpy as np
from session_loop import transcripts_tier

from toktier.engine import splice

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 6
stream, tier = transcripts_tier(name, 1100)
stream = stream * 3  # room for 1M-character contexts
ref = tier.tokenizer.reference
planner = tier._planner
new_widen, new_first_window = splice.widen_left, planner.first_window


def old_widen(wl, prefix, has_cut):
    return wl * 2, 1


def old_first_window(*args, **kws):
    found = new_first_window(*args, **kws)
    return None if found is not None and found[1] is None else found


def use(variant: str) -> None:
    splice.widen_left = new_widen if variant == "new" else old_widen
    planner.first_window = new_first_window if variant == "new" else old_first_window


cells = [(48_000, "letters x5,000", "x" * 5000), (48_000, "CJK x5,000", "漢字" * 2500),
         (48_000, "'=' x5,000", "=" * 5000), (48_000, "letters x20,000", "x" * 20000),
         (1_000_000, "letters x20,000", "x" * 20000)]  # fmt: skip
clock = time.perf_counter_ns
rows = {}
sid = 0
for rep in range(reps):
    for context, label, run in cells:
        for variant in ("new", "old") if rep % 2 == 0 else ("old", "new"):
            use(variant)
            sid += 1
            off = (sid * 1777) % 100_000
            text = stream[off : off + context] + run
            tier.encode(text, session="ab")
            delta = stream[off + context : off + context + 1100]
            t0 = clock()
            r = tier.append("ab", delta)
            dt = (clock() - t0) / 1e3
            text += delta
            if rep == 0:
                assert r.ids.tolist() == ref(text), (label, variant)
            rows.setdefault((context, label, variant), []).append((dt, r.reason))
            tier.close("ab")
use("new")
print(f"{name}: the 1,100-character append after a run, P50 us of {reps} sessions per cell "
      "(alternated); every result equal to the reference")  # fmt: skip
for context, label, _ in cells:
    o, n = rows[(context, label, "old")], rows[(context, label, "new")]
    po, pn = np.median([x[0] for x in o]), np.median([x[0] for x in n])
    print(f"  {context:>9,} + {label:16s} before: {po:8.0f} ({o[0][1]})")
    print(f"  {'':>9}   {'':16s} now:    {pn:8.0f} ({n[0][1]})  ratio {pn / po:.2f}")
