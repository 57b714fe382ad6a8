"""The session text's chunk rule, before and after (one process, alternated): 1,100-character
appends of the transcripts stream to a llama3 (or NAME) session seeded with 48K characters,
300 appends a session, sessions alternating between the level rule (``store.py``: four
trailing chunks of one size level merge, three appends in four copy nothing) and the rule
before it (merge the last two while the last is at least half the one before), re-stated
here.  P50 and mean of each rule's appends (the first 20 of a session dropped), and the
characters each copied per appended character.  Usage:
``.venv/bin/python tools/append-profile/chunk_levels_ab.py [NAME] [ROUNDS]``.
"""

import sys
import time

import numpy as np
from session_loop import transcripts_tier

from toktier import store

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 12
stream, tier = transcripts_tier(name, 1100)
level_rule = store.SessionState.appended_text
copied = {"level rule": 0, "halving rule": 0}


def halving_rule(self, appended):
    """The rule before the level rule (toktier 4799684), counting the characters it copies."""
    if not appended:
        return self._chunks, self._text_nbytes
    chunks = [*self._chunks, appended]
    size = self._text_nbytes + sys.getsizeof(appended)
    while (len(chunks) > 1 and len(chunks[-2]) < store.TEXT_CHUNK_FROZEN
           and 2 * len(chunks[-1]) >= len(chunks[-2])):  # fmt: skip
        last = chunks.pop()
        size -= sys.getsizeof(last) + sys.getsizeof(chunks[-1])
        chunks[-1] = chunks[-1] + last
        size += sys.getsizeof(chunks[-1])
    return chunks, size


rules = {"level rule": level_rule, "halving rule": halving_rule}
times = {k: [] for k in rules}
appended = {k: 0 for k in rules}
for r in range(rounds):
    order = list(rules) if r % 2 else list(rules)[::-1]
    for label in order:
        store.SessionState.appended_text = rules[label]
        tier.encode(stream[:48_000], session="s")
        pos = 48_000
        for k in range(300):
            delta = stream[pos : pos + 1100]
            pos += 1100
            st = tier.store.get("s")
            before = {id(c) for c in st._chunks}
            t0 = time.perf_counter_ns()
            tier.append("s", delta)
            t = time.perf_counter_ns() - t0
            copied[label] += sum(len(c) for c in st._chunks if id(c) not in before and c != delta)
            appended[label] += len(delta)
            if k >= 20:
                times[label].append(t)
        tier.close("s")
store.SessionState.appended_text = level_rule
print(f"{name}, 1,100-character appends to 48K+ of transcripts, {rounds} sessions of 300 per rule")
for label, t in times.items():
    t = np.array(t) / 1e3
    print(f"  {label:13s} P50 {np.median(t):6.1f} us  mean {t.mean():6.1f} us  "
          f"copied {copied[label] / appended[label]:4.2f} characters per appended one")
