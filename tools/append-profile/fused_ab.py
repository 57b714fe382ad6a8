"""A/B in one process: an append's answer read straight off the compiled call's result slots
(``Tier._first_window`` at the time; since 6f3cf7c part of ``Tier._append``, so this A/B
needs its hook moved to run on current code) vs through a ``Planned`` object and ``_commit_plan`` (the path
before, re-stated here).  Two tiers over private engines take the same appends of the
transcripts stream (and, with ``multilingual``, of pycountry's catalogs) to 48K+ sessions,
alternating which goes first; every answer is compared.  Prints P50s and the paired ratio
(before / now) per run.  Usage:
``.venv/bin/python tools/append-profile/fused_ab.py [NAME] [DELTA] [transcripts|multilingual]``.
"""

import sys
import time

import numpy as np
from session_loop import transcripts_tier

from toktier import Tier
from toktier.bench.timing import private_engine
from toktier.campaigns import corpus

NAME = sys.argv[1] if len(sys.argv) > 1 else "llama3"
DELTA = int(sys.argv[2]) if len(sys.argv) > 2 else 1100
CORPUS = sys.argv[3] if len(sys.argv) > 3 else "transcripts"
APPENDS = 400

stream, now = transcripts_tier(NAME, DELTA)
if CORPUS == "multilingual":
    stream = "".join(corpus.pycountry_documents())
before = Tier(now.tokenizer, engine=private_engine(now.tokenizer), verify_rate=0,
              delta_aware=False)  # fmt: skip


def planned_path(self, state, session, delta, full_text, old_len, new_len, delta_u8=None):
    """The answer through a ``Planned`` (as before): an append of the stream (no full text)."""
    ws = old_len - self.window if old_len > self.window else 0
    old_part = state.tail(old_len - ws)
    text_state = state.next_text(appended=delta)
    u8 = None if delta_u8 is None else old_part.encode("utf-8") + delta_u8
    found = self._planner.first_window(state, old_part + delta, ws, new_len,
                                       apply_now=not state.readers(), u8=u8)  # fmt: skip
    if found is None or found[1] is None:
        return None
    plan = self._planner.first_window_plan(*found, ws, new_len)
    return self._commit_plan(state, session, plan, new_len - old_len, text_state, "appends")


before._first_window = planned_path.__get__(before)
tiers = {"before": before, "now": now}
for t in tiers.values():
    t.encode(stream[:48_000], session="s")
clock = time.perf_counter_ns
times = {k: [] for k in tiers}
pos = 48_000
for k in range(APPENDS):
    d = stream[pos : pos + DELTA]
    pos += DELTA
    got = {}
    for label in (("before", "now") if k % 2 == 0 else ("now", "before")):
        t0 = clock()
        got[label] = tiers[label].append("s", d)
        times[label].append(clock() - t0)
    a, b = got["before"], got["now"]
    assert (a.keep, a.reason, a.boundaries, a.window_chars, a.path) == (
        b.keep, b.reason, b.boundaries, b.window_chars, b.path), k  # fmt: skip
    assert np.array_equal(a.new_ids, b.new_ids), k
    del got, a, b  # no result outlives its request (the compiled call writes in place)
assert np.array_equal(before.session_records("s")[0], now.session_records("s")[0])
t_before, t_now = (np.array(times[k][20:]) / 1e3 for k in ("before", "now"))
print(f"{NAME} {CORPUS} {DELTA}-char appends, {t_now.size} paired: P50 before "
      f"{np.median(t_before):.1f} us, now {np.median(t_now):.1f} us; paired ratio before/now "
      f"P50 {np.median(t_before / t_now):.3f}; first-window splices "
      f"{now.stats()['first_window']}/{APPENDS}")
