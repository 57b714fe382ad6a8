"""The planner's Python steps around an append's compiled call, clocked in a loop of real
appends: ``Planner.first_window`` re-stated (ASCII appends, no NFC path) with clocks
between window bytes, context and arguments, the compiled call, and reading the written
splice off the result slots (``Planner.written_splice``); P50 of each after the first 20
appends.  Comparing DELTA 10 with 1100 shows how much more the same fixed-size steps cost
after a larger window's compiled call.
Usage: ``.venv/bin/python tools/append-profile/first_window_steps.py [DELTA]``.
"""

import sys
import time

import numpy as np
from session_loop import transcripts_tier

from toktier.engine import splice as SP

NAME = "llama3"
DELTA = int(sys.argv[1]) if len(sys.argv) > 1 else 1100
STEPS = ("window bytes + records", "context + arguments", "compiled call", "written splice")

stream, tier = transcripts_tier(NAME, DELTA)
planner = tier._planner
clock = time.perf_counter_ns
marks = []


def first_window(state, window_text, ws, new_len, *, apply_now, u8=None):
    """``Planner.first_window`` for an ASCII append, with a clock between its steps."""
    m = [clock()]
    old_len = state.text_length
    u8 = np.frombuffer(window_text.encode("utf-8") if u8 is None else u8, dtype=np.uint8)
    records = (state.ids, state.starts, state.ends, state.n)
    m.append(clock())
    ctx, wk = planner.window_context(u8.size)
    args = (u8, ws, new_len, old_len, new_len, old_len, 0, *records, ctx, apply_now)
    m.append(clock())
    status = planner._plan_engine(*args, False)
    m.append(clock())
    if status != SP.OK:
        return None  # the protocol runs (not timed here)
    planner.written_splice(wk.res, ws, new_len)  # what the tier reads next
    m.append(clock())
    marks.append(m)
    return wk.res, (wk.f_ids, wk.f_s, wk.f_e)


planner.first_window = first_window
tier.encode(stream[:48_000], session="s")
pos = 48_000
for _ in range(300):
    delta = stream[pos : pos + DELTA]
    pos += DELTA
    if delta.isascii():
        tier.append("s", delta)
p50 = np.median(np.diff(np.array(marks[20:]), axis=1), axis=0) / 1e3
print(f"{NAME}, {DELTA}-char appends, {len(marks) - 20} timed, P50 us: "
      + " | ".join(f"{s} {v:.2f}" for s, v in zip(STEPS, p50, strict=True)))  # fmt: skip
