"""Session starts of experiment 09's mixture (each trajectory's call 0) in one process:
fastokens, the engine alone, the tier stateless and the tier opening a session, then a
profile of the last.

``TOKTIER_HOME=data/build .venv/bin/python tools/capacity-profile/session_start.py``
(2026-12-02, AMD VM, edadf34: call 0 median 6,588 chars; P50 us fastokens 33.5, engine
encode_ids 62.6, tier stateless 58.7, tier opening a session 111.4 -- about 50 us of session
bookkeeping: the store's reserve and copies, commit_full, put).
"""

import cProfile
import pstats
import time

import fastokens
import numpy as np

import toktier
from toktier.bench.streams import load_trajectories
from toktier.loadgen import build_workload
from toktier.workload.archives import find_archive


def timed(texts, fn, label):
    ts = []
    for i, x in enumerate(texts):
        t0 = time.perf_counter()
        fn(i, x)
        ts.append(time.perf_counter() - t0)
    print(f"{label:40s} P50 {1e6 * np.median(ts):7.1f} us  mean {1e6 * np.mean(ts):7.1f}")


def main() -> int:
    work = build_workload(load_trajectories(find_archive("mini-swe-agent")), "llama3")
    tok = toktier.load("llama3")
    tier = toktier.Tier(tok, verify_rate=0.0)
    fast = fastokens.Tokenizer.from_file(tok.checked_path())
    texts = [work.text(t, 0) for t in range(len(work.finals))]
    print("call-0 chars median", int(np.median([len(x) for x in texts])))
    eng = tier.engine
    timed(texts, lambda i, x: fast.encode(x, add_special_tokens=False).ids, "fastokens .ids")
    timed(texts, lambda i, x: eng.encode_ids(x), "engine.encode_ids")
    timed(texts, lambda i, x: eng.encode_full(x), "engine.encode_full (ids+spans)")
    timed(texts, lambda i, x: tier.encode(x), "tier.encode stateless")
    timed(texts, lambda i, x: tier.encode(x, session=f"a{i}"), "tier.encode opening a session")
    prof = cProfile.Profile()
    prof.enable()
    for i, x in enumerate(texts):
        tier.encode(x, session=f"b{i}")
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
