"""Each Python step of an append alone, warm and after a 32 MB memory sweep (caches cold),
P50 of 200
llama3, a live session of ~70K characters.  Not a protocol: a step timed alone
pays its own first touches.  Usage: ``.venv/bin/python tools/append-profile/cold_steps.py [MB]``.
"""

import sys
import time

import numpy as np

from toktier import Tier
from toktier.campaigns import corpus
from toktier.textcheck import check_text
from toktier.tier import Result

code = "".join(corpus.stdlib_documents())[:500_000]
tier = Tier("llama3", gpu=None, verify_rate=0.0)
tier.encode(code[:48_000], session="s")
for k in range(20):
    tier.append("s", code[48_000 + k * 1100 : 48_000 + (k + 1) * 1100])
st = tier.store.get("s")
d = code[70_000:71_100]
junk = np.ones(int(sys.argv[1]) << 20, np.uint8)
planner = tier._planner
u8w = np.frombuffer((st.tail(400) + d).encode(), np.uint8)
ctx, wk = planner.window_context(u8w.size)
ol = st.text_length
args = (
    u8w,
    ol - 400,
    ol + 1100,
    ol,
    ol + 1100,
    ol,
    0,
    st.ids,
    st.starts,
    st.ends,
    st.n,
    ctx,
    False,
    False,
)


def noop():
    pass


pos = [71_100]


def do_append():
    tier.append("s2", code[pos[0] : pos[0] + 1100])
    pos[0] += 1100


tier.encode(code[:48_000], session="s2")
steps = {
    "noop call": noop,
    "store.get": lambda: tier.store.get("s"),
    "store.refresh": lambda: tier.store.refresh(st),
    "Tier._count": lambda: tier._count("requests", "hits", "appends", "first_window"),
    "router.hit": lambda: tier.router.hit(st.text_length, 1100),
    "tail+delta": lambda: st.tail(400) + d,
    "utf8 window": lambda: np.frombuffer((st.tail(400) + d).encode("utf-8"), np.uint8),
    "check_text": lambda: check_text(d),
    "snapshot": lambda: st.snapshot(),
    "new_ids copy": lambda: st.ids[st.n - 300 : st.n].copy(),
    "planner.window_context": lambda: planner.window_context(u8w.size),
    "plan_engine (no apply)": lambda: planner._plan_engine(*args),
    "res.tolist": lambda: wk.res.tolist(),
    "Result(...)": lambda: Result(None, "repair", "r", "s", 0, 0, (None, None), keep=1, new_ids=d),
    "whole append": do_append,
}
for label, fn in steps.items():
    for pollute in (0, 1):
        ts = []
        for _ in range(200):
            if pollute:
                junk[::64] += 1
            t0 = time.perf_counter_ns()
            fn()
            ts.append(time.perf_counter_ns() - t0)
        print(f"{label:24s} {'cold' if pollute else 'warm'} {np.median(ts) / 1e3:7.2f} us")
