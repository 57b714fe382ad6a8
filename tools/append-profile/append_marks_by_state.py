"""``append_marks.py``'s clocks between the steps of ``Tier._append``'s flat path, split by the
core's state: each timed append is preceded by the contention probe (``bench.contention``), and
the steps' P50s are reported for the appends that ran on a core the host did not share and for
those that ran on a shared one (``docs/hardware.md``).  Experiment 10's 48K cells (60 sessions,
five timed appends each).  The marks themselves add ~0.2 us each.
Usage: ``.venv/bin/python tools/append-profile/append_marks_by_state.py [NAME [CORPUS]]``
(run from this folder, as ``append_marks.py``).
"""

import collections
import itertools
import sys
import time

import append_marks as AM
import numpy as np
from session_loop import protocol_tier

import toktier.tier as T
from toktier.bench import continuation as C
from toktier.bench.contention import ContentionTagger


def main(name: str, corp: str) -> None:
    inner = AM.marked_append()
    runs = []

    def clocked(self, *a, **k):
        AM.MARKS.clear()
        AM.MARKS.append(("start", time.perf_counter_ns()))
        r = inner(self, *a, **k)
        AM.MARKS.append(("return", time.perf_counter_ns()))
        runs.append(list(AM.MARKS))
        return r

    T.Tier._append = clocked
    streams, tier = protocol_tier(name)
    tails = C.continuation_tails([48000], 1100, 5, 60)
    cells = C.session_cells(streams[corp], 48000, 1100, 5, 60, tails[48000])
    tagger = ContentionTagger()
    tagger.calibrate()
    acc = {False: collections.defaultdict(list), True: collections.defaultdict(list)}
    for prefix, deltas in cells:
        tier.close("x")
        tier.encode(prefix, session="x")
        tier.append("x", deltas[0])
        for d in deltas[1:]:
            _, busy = tagger.tag()
            runs.clear()
            t0 = time.perf_counter_ns()
            tier.append("x", d)
            t1 = time.perf_counter_ns()
            if runs and len(runs[0]) == len(AM.STEPS) + 2:  # the flat path, every mark reached
                r = runs[0]
                for (_, ta), (label, tb) in itertools.pairwise(r):
                    acc[busy][label].append((tb - ta) / 1e3)
                acc[busy]["_append in all"].append((r[-1][1] - r[0][1]) / 1e3)
                acc[busy]["Tier.append in all"].append((t1 - t0) / 1e3)
    for busy in (False, True):
        a = acc[busy]
        state = "contended" if busy else "not contended"
        print(f"{name} {corp} {state}: {len(a['Tier.append in all'])} flat appends, P50 us")
        for label, v in a.items():
            print(f"  {label:34s} {np.median(v):6.1f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "llama3",
         sys.argv[2] if len(sys.argv) > 2 else "transcripts")  # fmt: skip
