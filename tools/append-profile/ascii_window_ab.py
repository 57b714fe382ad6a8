"""The repair window read as its bytes when all-ASCII (``splice.plan_engine``: no decode, the
word-wise literal scan, the bit-parallel pre-tokenizer where the tokenizer has it) against the
window decoded as before (``EngineArgs.ascii_direct`` off), one process, alternated.

Experiment 10's protocol on the transcripts stream of NAME (``flat_append_ab.py``'s): a session
is seeded about (context - 3.3K) characters, takes one untimed and five timed 1,100-character
continuations, then closes; SESSIONS sessions per context, each variant on every session (its
own tier and engine, warmed with the stream's first 200K characters), the order alternating.
P50 and mean per context; every session's IDs are checked against the reference.
Usage: ``.venv/bin/python tools/append-profile/ascii_window_ab.py [NAME] [SESSIONS]``.
"""

import sys
import threading
import time

import numpy as np

from toktier import Tier, load
from toktier.bench import continuation as C
from toktier.bench.streams import load_trajectories
from toktier.bench.timing import private_engine
from toktier.workload import archives

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 20

trajs = load_trajectories(archives.find_archive("mini-swe-agent"))
contexts = [12_000, 48_000, 200_000]
stream = C.standard_streams(trajs, name, max(contexts) + 3 * 1100 * 204, "")["transcripts"]
tok = load(name)
tiers = {
    "ASCII window": Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False),
    "decoded window": Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False),
}
off = tiers["decoded window"]._planner
off.ea = off.ea._replace(ascii_direct=False)
off._local = threading.local()  # no window context made with the old tables
for t in tiers.values():
    t.engine.encode(stream[:200_000])
tails = C.continuation_tails(contexts, 1100, 5, sessions)
print(f"{name}, transcripts, {sessions} sessions x 5 timed continuations per context and variant")
for ctx in contexts:
    out = {k: [] for k in tiers}
    for s, (prefix, deltas) in enumerate(C.session_cells(stream, ctx, 1100, 5, sessions, tails[ctx])):
        for label in list(tiers) if s % 2 else list(tiers)[::-1]:
            tier = tiers[label]
            tier.encode(prefix, session="x")
            tier.append("x", deltas[0])
            for d in deltas[1:]:
                t0 = time.perf_counter_ns()
                tier.append("x", d)  # the result is dropped at once, as the benchmark does
                out[label].append(time.perf_counter_ns() - t0)
            ids = tier.session_records("x")[0]
            assert np.array_equal(ids, tok.reference(prefix + "".join(deltas))), label
            tier.close("x")
    cells = "  ".join(
        f"{k}: P50 {np.median(v) / 1e3:6.1f} us, mean {np.mean(v) / 1e3:6.1f} us"
        for k, v in out.items()
    )
    a, b = (np.median(v) for v in out.values())
    print(f"  {ctx:>7,}  {cells}  A/B {a / b:.3f}")
