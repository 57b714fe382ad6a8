"""The append's Python path, flat (``Tier._append`` making the first window's compiled call
itself) against the three frames it replaced (``_append`` -> ``_first_window`` ->
``Planner.first_window``, re-stated here as they were at 235b9a0), one process, alternated.

Experiment 10's protocol on the transcripts stream of NAME: a session is seeded about
(context - 3.3K) characters, takes one untimed and five timed 1,100-character continuations
(``bench.continuation.session_cells``), then closes; SESSIONS sessions per context, each
variant on every session (its own tier and engine, warmed with the stream's first 200K
characters), the order alternating.  P50 and mean per context; every session's IDs are
checked against the reference.  Usage:
``.venv/bin/python tools/append-profile/flat_append_ab.py [NAME] [SESSIONS]``.
"""

import sys

from session_loop import alternated_ab

from toktier import Tier, load
from toktier.bench.timing import private_engine
from toktier.engine.slots import (
    R_APPLIED,
    R_B_LEFT,
    R_CUT,
    R_KEEP,
    R_NEW_N,
    REASON_FIRST_WINDOW,
    REASON_WHOLE_TEXT,
)
from toktier.tier import _FIRST_WINDOW_APPEND, Result, _AppendText, _PlainText

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 20


class Nested(Tier):
    """The append path before 2026-11-29's flattening (its three frames)."""

    def _append(self, state, session, delta, full_text, delta_u8=None):
        old_len = state.text_length
        route = self.router.hit(old_len, len(delta))
        if route.name != "repair":
            raise AssertionError("the A/B runs with delta_aware=False: always repair")
        new_len = old_len + len(delta)
        failed_first = None
        if self._planner is not None and new_len < 2**31 - 1:
            result = self._first_window(state, session, delta, full_text, old_len, new_len,
                                        delta_u8)  # fmt: skip
            if type(result) is Result:
                return result
            failed_first = result
        source = _PlainText(full_text) if full_text is not None else _AppendText(state, delta)
        return self._repair(state, session, old_len, new_len, old_len, 0, source, delta,
                            failed_first)  # fmt: skip

    def _first_window(self, state, session, delta, full_text, old_len, new_len, delta_u8=None):
        ws = old_len - self.window if old_len > self.window else 0
        if full_text is None:
            old_part = state.tail(old_len - ws)
            window_text = old_part + delta
            text_state = state.appended_text(delta)
        else:
            old_part = None
            window_text = full_text[ws:]
            text_state = state.next_text(text=full_text)
        u8 = None
        if delta_u8 is not None:
            if old_part is None:
                old_part = full_text[ws:old_len]
            u8 = old_part.encode("utf-8") + delta_u8
        planner = self._planner
        found = planner.first_window(state, window_text, ws, new_len,
                                     apply_now=not state.readers(), u8=u8)  # fmt: skip
        if found is None:
            return None
        res = found[0]
        if found[1] is None:
            return res
        if res[R_APPLIED] != 1:
            plan = planner.first_window_plan(*found, ws, new_len)
            return self._commit_plan(state, session, plan, new_len - old_len, text_state, "appends")
        new_n, keep, b_left = res[R_NEW_N], res[R_KEEP], res[R_B_LEFT]
        reason = REASON_FIRST_WINDOW if ws else REASON_WHOLE_TEXT
        window_chars = new_len - (b_left if res[R_CUT] >= 0 else ws)
        boundaries = (b_left if b_left >= 0 else None, None)
        state.publish(new_n, new_len - old_len, text_state)
        self.store.refresh(state)
        with self._counts_guard:
            self._counts[_FIRST_WINDOW_APPEND] += 1
        new_ids = state.ids[keep:new_n].copy()
        new_ids.flags.writeable = False
        result = Result(None, "repair", reason, session, 0, window_chars, boundaries, keep=keep,
                        new_ids=new_ids, snapshot=state.snapshot())  # fmt: skip
        if self.verifier is not None:
            self._offer(lambda: result.ids, state.text_parts, "repair", session)
        return result


tok = load(name)
tiers = {
    "flat": Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False),
    "nested (before)": Nested(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False),
}
alternated_ab(tiers, name, sessions)
