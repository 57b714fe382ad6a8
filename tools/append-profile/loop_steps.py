"""An append's time by step in a loop of real appends (not a tight loop over one state).

Written for toktier 4799684 and earlier: it re-states ``Tier._first_window``, which
6f3cf7c folded into ``Tier._append`` (``tools/append-profile/flat_append_ab.py`` compares
the two); the hook below replaces a method the current ``Tier`` no longer calls.

A llama3 (or NAME) session seeded with 48K characters of the transcripts stream takes 300
appends of DELTA characters each (the stream's own next text, so the engine meets fresh
pieces), timed around ``Tier._first_window``'s steps re-stated here with clocks between
them; the first 20 are dropped, P50 of the rest.  Usage:
``.venv/bin/python tools/append-profile/loop_steps.py [NAME] [DELTA]``.
"""

import sys
import time

import numpy as np
from session_loop import transcripts_tier

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
delta_len = int(sys.argv[2]) if len(sys.argv) > 2 else 1100
stream, tier = transcripts_tier(name, delta_len)
planner = tier._planner
clock = time.perf_counter_ns
marks, compiled = [], []


def first_window(state, session, delta, full_text, old_len, new_len, delta_u8=None):
    """``Tier._first_window`` for an ASCII append, with a clock between its steps."""
    m = [clock()]
    ws = old_len - tier.window if old_len > tier.window else 0
    window_text = state.tail(old_len - ws) + delta
    m.append(clock())
    text_state = state.next_text(appended=delta)
    m.append(clock())
    found = planner.first_window(state, window_text, ws, new_len, apply_now=not state.readers())
    m.append(clock())
    if found is None or found[1] is None:  # no first-window splice: the protocol runs
        return None
    written = planner.written_splice(found[0], ws, new_len)
    if written is None:  # a result still reads the arrays: the splice is written now
        plan = planner.first_window_plan(*found, ws, new_len)
        out = tier._commit_plan(state, session, plan, new_len - old_len, text_state, "appends")
    else:
        new_n, keep, reason, window_chars, boundaries = written
        state.publish(new_n, new_len - old_len, text_state)
        out = tier._answer_splice(state, session, "appends", keep, 0, reason, window_chars,
                                  boundaries)  # fmt: skip
    m.append(clock())
    marks.append(m)
    return out


def timed_plan_engine(*args, _f=planner._plan_engine):
    t0 = clock()
    out = _f(*args)
    compiled.append(clock() - t0)
    return out


tier._first_window = first_window
planner._plan_engine = timed_plan_engine
tier.encode(stream[:48_000], session="s")
outer = []
pos = 48_000
for _ in range(300):
    delta = stream[pos : pos + delta_len]
    pos += delta_len
    if not delta.isascii():
        continue  # the re-stated step list covers ASCII deltas only
    t0 = clock()
    tier.append("s", delta)
    outer.append((t0, clock()))
outer, m, c = np.array(outer[20:]), np.array(marks[20:]), np.array(compiled[20:])
med = lambda x: np.median(x) / 1e3  # noqa: E731
print(f"{name}, {delta_len}-char appends to 48K+ of transcripts, {len(outer)} timed, P50 us:")
print(f"  whole append                    {med(outer[:, 1] - outer[:, 0]):6.1f}")
print(f"  before the window (checks, lock, store lookup, route) {med(m[:, 0] - outer[:, 0]):6.1f}")
print(f"  window text (tail + delta)      {med(m[:, 1] - m[:, 0]):6.1f}")
print(f"  next text chunks                {med(m[:, 2] - m[:, 1]):6.1f}")
print(
    f"  planner.first_window            {med(m[:, 3] - m[:, 2]):6.1f}  of which compiled {med(c):.1f}"
)
print(f"  commit (store, counters, new IDs, result) {med(m[:, 4] - m[:, 3]):6.1f}")
print(f"  after (return path)             {med(outer[:, 1] - m[:, 4]):6.1f}")
