"""An edit through the full-text API, with the right cut as built (``repair.find_right_cut``:
the new text encoded only between the two cuts, each side jumping to the first doubling with a
cut) against the same planner without it (a right cut never qualifies: an all-False cut matrix,
so the right side runs the window-and-run protocol of before), in one process, alternated.

A llama3 (or NAME) session holds CONTEXT characters of the transcripts stream; the timed request
is ``Tier.encode`` of the text with one edit at a random place in its first 90% (replace one
character, insert 40, delete 200), or a one-character edit in the middle of a 20,000-letter run
put in the middle of the text.  ``reps`` fresh sessions per cell and variant, every result
checked against the reference.  Usage:
``.venv/bin/python tools/append-profile/right_cut_ab.py [NAME] [REPS]``.
"""

import random
import sys
import time

import numpy as np
from session_loop import transcripts_tier

from toktier.engine import splice

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
stream, tier = transcripts_tier(name, 1100)
stream = stream * 3  # room for 1M-character contexts
ref = tier.tokenizer.reference
planners = {"now": tier._planner}
old = splice.Planner(tier.tokenizer, tier._rules, tier.engine)
old.ra = old.ra._replace(cut_stable=np.zeros_like(old.ra.cut_stable))
planners["without"] = old

cells = [(48_000, "replace 1"), (48_000, "insert 40"), (48_000, "delete 200"),
         (48_000, "1 in a 20K run"), (1_000_000, "replace 1"), (1_000_000, "insert 40")]  # fmt: skip


def edited(text: str, kind: str, rng: random.Random) -> str:
    if kind == "1 in a 20K run":
        m = len(text) // 2
        text = text[:m] + "x" * 20_000 + text[m:]
        at = m + 10_000
        return text, text[:at] + "yz" + text[at + 1 :]
    at = rng.randrange(100, int(len(text) * 0.9))
    if kind == "replace 1":
        return text, text[:at] + "Q" + text[at + 1 :]
    if kind == "insert 40":
        return text, text[:at] + " inserted: forty characters of new text" + text[at:]
    return text, text[:at] + text[at + 200 :]


clock = time.perf_counter_ns
rows = {}
rng = random.Random(7)
for rep in range(reps + 1):  # round 0 warms both planners, untimed
    for context, kind in cells:
        off = rng.randrange(0, 100_000)
        text, new = edited(stream[off : off + context], kind, rng)
        want = ref(new)
        for variant in ("now", "without") if rep % 2 == 0 else ("without", "now"):
            tier._planner = planners[variant]
            tier.encode(text, session="ab")
            t0 = clock()
            r = tier.encode(new, session="ab")
            dt = (clock() - t0) / 1e3
            assert r.ids.tolist() == want, (context, kind, variant)
            if rep:
                rows.setdefault((context, kind, variant), []).append((dt, r.window_chars, r.reason))
            tier.close("ab")
tier._planner = planners["now"]
print(f"{name}: one edit through Tier.encode(full text), P50 us (window characters encoded, "
      f"reason) of {reps} sessions per cell, alternated; every result equal to the reference")
for context, kind in cells:
    o, n = rows[(context, kind, "without")], rows[(context, kind, "now")]
    po, pn = np.median([x[0] for x in o]), np.median([x[0] for x in n])
    wo, wn = np.median([x[1] for x in o]), np.median([x[1] for x in n])
    print(f"  {context:>9,} {kind:15s} without: {po:8.0f} ({wo:6.0f} chars; {o[0][2]})")
    print(f"  {'':>9} {'':15s} now:     {pn:8.0f} ({wn:6.0f} chars; {n[0][2]})  "
          f"ratio {pn / po:.2f}")
