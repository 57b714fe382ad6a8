"""A 1,100-character append's compiled window, stage by stage, with every cache hot: each
stage of ``splice.plan_engine`` called from Python on the same window again and again (so the
numbers include a dispatch, ~1 us; "noop dispatch" measures it), P50 and min of 2,000 calls.

Set against ``loop_steps.py``'s compiled time (the same window met once, in a loop of real
appends), it says how much of that is the memory the window's pieces live in rather than
work.  Usage: ``.venv/bin/python tools/append-profile/window_stages_hot.py [NAME]``.
"""

import sys
import time

import numpy as np
from session_loop import transcripts_tier

from toktier.engine import cpu
from toktier.engine import splice as S

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
stream, tier = transcripts_tier(name, 1100)
tier.encode(stream[:48_000], session="s")
for k in range(30):
    tier.append("s", stream[48_000 + k * 1100 : 48_000 + (k + 1) * 1100])
st = tier.store.get("s")
old_len = st.text_length
delta = stream[old_len : old_len + 1100]
ws = old_len - tier.window
window = st.tail(old_len - ws) + delta
new_len = old_len + len(delta)
pl = tier._planner
ea, ra = pl.ea, pl.ra
cache, lcache = tier.engine._cache()
u8 = np.frombuffer(window.encode(), dtype=np.uint8)
ctx, wk = pl.window_context(u8.size)
rec = (st.ids, st.starts, st.ends, st.n)


def clocked(f, reps=2000):
    ts = np.empty(reps)
    for i in range(reps):
        t0 = time.perf_counter_ns()
        f()
        ts[i] = time.perf_counter_ns() - t0
    return np.percentile(ts, 50) / 1e3, ts.min() / 1e3


nw = cpu._prepare(u8, ea.bits, wk.cps, wk.char_start, wk.fl)
cut_k = S.find_cut(ra, wk.cps, nw, ws, old_len, st.starts, st.ends, st.n)
c0 = int(st.starts[cut_k]) - ws
lits = (ea.f1, ea.k1, ea.c1, ea.t1, ea.f2, ea.k2, ea.c2, ea.t2, ea.has2, wk.ls, wk.le, wk.lid)
nlit = cpu._find_literals(wk.cps, nw, *lits)
lit0 = S.lower_bound(wk.ls, 0, nlit, c0)


def encode():
    return cpu.encode_range(c0, nw, wk.cps, wk.fl, ea.fold, ea.family, u8, wk.char_start, wk.ls,
                            wk.le, wk.lid, lit0, nlit, ea.bpe, wk.ends, wk.sym, wk.rank, wk.nxt,
                            wk.prv, wk.heap, cache, lcache, wk.f_ids, wk.f_s, wk.f_e, 0, True,
                            wk.ring, False)  # fmt: skip


nf = encode()
stages = {
    "noop dispatch (_prepare of 1 byte)":
        lambda: cpu._prepare(u8[:1], ea.bits, wk.cps, wk.char_start, wk.fl),
    "_prepare (decode, classes)": lambda: cpu._prepare(u8, ea.bits, wk.cps, wk.char_start, wk.fl),
    "find_cut": lambda: S.find_cut(ra, wk.cps, nw, ws, old_len, st.starts, st.ends, st.n),
    "_find_literals": lambda: cpu._find_literals(wk.cps, nw, *lits),
    "encode_range (from the cut)": encode,
    "plan_core (match, certificate, keep)": lambda: S.plan_core(
        ra, wk.cps, nw, ws, new_len, old_len, new_len, old_len, 0, *rec, wk.f_ids, wk.f_s,
        wk.f_e, nf, wk, cut_k, -1),
    "plan_engine (all of it, not applied)": lambda: S.plan_engine(
        u8, ws, new_len, old_len, new_len, old_len, 0, *rec, ctx, False, False),
}  # fmt: skip
print(f"{name}: window of {len(window)} characters, cut {c0} characters in: {nw - c0} encoded, "
      f"{nf} tokens; P50 / min us, every cache hot")  # fmt: skip
for label, f in stages.items():
    p50, best = clocked(f)
    print(f"  {label:40s} {p50:7.2f} / {best:7.2f}")
