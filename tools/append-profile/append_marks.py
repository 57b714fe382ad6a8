"""Clocks between the steps of ``Tier._append``'s flat path, in experiment 10's protocol
(48K sessions: a seed, one untimed and five timed 1,100-character continuations; pass 0 fresh
text, pass 1 the same again).

The clocks go into ``_append``'s own source (re-compiled with a mark after each step line,
so the path timed is the library's as it stands, not a restatement); only appends that took
the flat path (every mark reached) count.  P50 µs of each step: the time from the mark
before it.  Usage: ``.venv/bin/python tools/append-profile/append_marks.py [NAME [CORPUS]]``
(CORPUS ``transcripts`` or ``multilingual``).
"""

import collections
import inspect
import itertools
import sys
import textwrap
import time

import numpy as np
from session_loop import protocol_tier

import toktier.tier as T
from toktier.bench import continuation as C
from toktier.bench.timing import time_ms

# a line of _append's source (its start) -> the step that ends there
STEPS = {
    "route = self.router.hit": "router.hit",
    "text_state = state.appended_text(delta)": "tail, window str, appended_text",
    "apply_now = not state.readers()": "readers",
    "u8 = np.frombuffer(": "UTF-8 + frombuffer",
    "ctx, wk = planner.window_context": "window_context",
    "status = planner.first_window_call": "first_window_call (compiled)",
    "res = wk.res.tolist()": "res.tolist",
    "state.publish(new_n": "publish",
    "self.store.refresh(state)": "store.refresh",
    "self._counts[_FIRST_WINDOW_APPEND] += 1": "counter",
    "new_ids.flags.writeable = False": "new_ids copy",
    "snapshot=state.snapshot())": "Result + snapshot",
}
MARKS = []


def marked_append():
    """``Tier._append`` with a clock after each line that ends a step in ``STEPS``."""
    src = textwrap.dedent(inspect.getsource(T.Tier._append)).splitlines()
    out = []
    for line in src:
        out.append(line)
        for key, label in STEPS.items():
            if key in line:
                indent = len(line) - len(line.lstrip())
                if label == "counter":  # inside ``with``: the mark goes after the block
                    indent -= 4
                if label == "Result + snapshot":  # a continuation line of the statement
                    indent = 4
                out.append(" " * indent + f"_MARKS.append(({label!r}, _CLOCK()))")
    missing = [k for k in STEPS if not any(k in ln for ln in src)]
    if missing:
        raise SystemExit(f"_append no longer has these lines: {missing}")
    ns = dict(vars(T))
    ns.update(_MARKS=MARKS, _CLOCK=time.perf_counter_ns)
    exec(compile("\n".join(out), "append_marks", "exec"), ns)
    return ns["_append"]


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
    corp = sys.argv[2] if len(sys.argv) > 2 else "transcripts"
    inner = marked_append()
    runs = []

    def clocked(self, *a, **k):
        MARKS.clear()
        MARKS.append(("start", time.perf_counter_ns()))
        r = inner(self, *a, **k)
        MARKS.append(("return", time.perf_counter_ns()))
        runs.append(list(MARKS))
        return r

    T.Tier._append = clocked
    streams, tier = protocol_tier(name)
    tails = C.continuation_tails([48000], 1100, 5, 20)
    cells = C.session_cells(streams[corp], 48000, 1100, 5, 20, tails[48000])
    steps_acc = {}
    for rep in range(2):
        outer = []
        for prefix, deltas in cells:
            tier.close("x")
            tier.encode(prefix, session="x")
            tier.append("x", deltas[0])
            runs.clear()
            for d in deltas[1:]:
                outer.append(time_ms(lambda d=d: tier.append("x", d)))
            steps_acc.setdefault(rep, []).extend(r for r in runs if len(r) == len(STEPS) + 2)
        flat = steps_acc.get(rep, [])
        acc = collections.defaultdict(list)
        for r in flat:
            for (_, ta), (label, tb) in itertools.pairwise(r):
                acc[label].append((tb - ta) / 1e3)
            acc["_append in all"].append((r[-1][1] - r[0][1]) / 1e3)
        print(f"{name} {corp} pass {rep}: Tier.append P50 {np.median(outer) * 1e3:.1f} us; "
              f"{len(flat)} of {len(outer)} appends on the flat path")  # fmt: skip
        for label, v in acc.items():
            print(f"  {label:34s} {np.median(v):6.1f}")


if __name__ == "__main__":
    main()
