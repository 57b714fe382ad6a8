"""Cost of each Python step around an append's compiled call, one at a time (timeit, best
of 5), on a live llama3 session of ~70K characters.  Usage:
``.venv/bin/python tools/append-profile/steps.py``.
"""

import sys
import timeit

import numpy as np

from toktier import Tier
from toktier.campaigns import corpus
from toktier.textcheck import check_text
from toktier.tier import Result

code = "".join(corpus.stdlib_documents())[:80_000]
tier = Tier("llama3", gpu=None, verify_rate=0.0)
tier.encode(code[:48_000], session="s")
for k in range(20):
    tier.append("s", code[48_000 + k * 1100 : 48_000 + (k + 1) * 1100])
st = tier.store.get("s")
d = code[70_000:71_100]
env = {"tier": tier, "st": st, "d": d, "np": np, "sys": sys, "check_text": check_text,
       "Result": Result}  # fmt: skip
steps = {
    "store.get": "tier.store.get('s')",
    "store.refresh": "tier.store.refresh(st)",
    "Tier._count (4 keys)": "tier._count('requests', 'hits', 'appends', 'first_window')",
    "router.hit": "tier.router.hit(st.text_length, 1100)",
    "state.tail(400) + delta": "st.tail(400) + d",
    "state.next_text (this state's chunks)": "st.next_text(appended=d)",
    "state.snapshot": "st.snapshot()",
    "new_ids copy (300 ids)": "x = st.ids[st.n - 300 : st.n].copy(); x.flags.writeable = False",
    "window UTF-8 (1.5K chars)": "np.frombuffer((st.tail(400) + d).encode('utf-8'), np.uint8)",
    "check_text(delta)": "check_text(d)",
    "session lock": "with tier._stripes[hash('s') % len(tier._stripes)]: pass",
    "Result(...)": "Result(None, 'repair', 'r', 's', 0, 0, (None, None), keep=1, new_ids=d)",
}
print("chunks of the session text:", [len(c) for c in st._chunks])
for label, stmt in steps.items():
    best = min(timeit.repeat(stmt, number=20_000, repeat=5, globals=env)) / 20_000
    print(f"{label:40s} {best * 1e6:6.2f} us")
