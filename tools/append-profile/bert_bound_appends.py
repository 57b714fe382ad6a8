"""bert-uncased appends with the WordPiece engine's calls bound (``jit.BoundKernel``, the
default since 9c9706c) against numba's dispatcher: two tiers over private engines, the same
40 sessions of ~48K characters of transcripts and five timed 1,100-character appends each,
the order alternated per session.  Prints P50s and the paired ratio.
Usage: ``.venv/bin/python tools/append-profile/bert_bound_appends.py``.
"""

import time

import numpy as np

from toktier import Tier, load
from toktier.bench.streams import load_trajectories, stream_text
from toktier.bench.timing import private_engine
from toktier.engine import wordpiece as W
from toktier.workload import archives

tok = load("bert-uncased")
stream = stream_text(load_trajectories(archives.find_archive("mini-swe-agent")), tok.name,
                     1_000_000)  # fmt: skip
tiers = {k: Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False)
         for k in ("bound", "dispatcher")}  # fmt: skip
unbound = tiers["dispatcher"].engine
unbound._decode, unbound._unsafe_positions, unbound._encode_range = (
    W._decode, W._unsafe_positions, W._encode_range,
)  # fmt: skip
for t in tiers.values():
    t.engine.encode(stream[:200_000])
res: dict[str, list[float]] = {k: [] for k in tiers}
pos = 300_000
for s in range(40):
    prefix = stream[: 48_000 + s * 137]
    deltas = [stream[pos + j * 1100 : pos + (j + 1) * 1100] for j in range(6)]
    pos += 6 * 1100
    for k in list(tiers) if s % 2 == 0 else list(tiers)[::-1]:
        t, sid = tiers[k], f"s{s}"
        t.encode(prefix, session=sid)
        t.append(sid, deltas[0])
        for d in deltas[1:]:
            t0 = time.perf_counter()
            r = t.append(sid, d)
            res[k].append(time.perf_counter() - t0)
            del r  # no snapshot outlives its request: the splice is written in place
        t.close(sid)
a, b = np.array(res["bound"]), np.array(res["dispatcher"])
print(f"bert-uncased, {a.size} appends each: P50 bound {np.median(a) * 1e6:.1f} us, "
      f"dispatcher {np.median(b) * 1e6:.1f} us, paired median {np.median(b / a):.3f}x")  # fmt: skip
