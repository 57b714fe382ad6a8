"""NFC tokenizers' continuations and full encodes with and without the memo of the
reference's NFC verdicts (``engine.nfc_memo``): two tiers on private engines (one with the
memo switched off), the same sessions and continuations, alternated per session;
experiment 10's cell layout at 48K (sessions seeded, one untimed append, four timed), then
one-thread full encodes of 1M-character slices alternated.  Every continuation's new IDs
and every encode's IDs are compared with the reference's.
Measured 2026-11-28 and not kept: apply ``tools/append-profile/nfc_memo.patch`` first
(``git apply``), then run
``.venv/bin/python tools/append-profile/nfc_memo_ab.py [NAME] [SESSIONS]``.
"""

import sys

import numpy as np
from alternated_sessions import alternated_appends

from toktier import Tier, load
from toktier.bench import continuation as C
from toktier.bench.engine_targets import corpora, slices
from toktier.bench.streams import load_trajectories
from toktier.bench.timing import fresh_str, private_engine, time_ms
from toktier.campaigns import corpus
from toktier.workload import archives

name = sys.argv[1] if len(sys.argv) > 1 else "qwen3"
sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 40
trajs = load_trajectories(archives.find_archive("mini-swe-agent"))
multi = "".join(corpus.pycountry_documents())
streams = C.standard_streams(trajs, name, 48000 + 2 * 1100 * 102 * 2, multi)
tok = load(name)
engines, tiers = {}, {}
for label, on in (("no memo", False), ("memo", True)):
    eng = private_engine(tok)
    if not on:
        eng.nfc_memo = lambda: None  # the memo off: every stretch goes to the normalizer
    engines[label] = eng
    tiers[label] = Tier(tok, engine=eng, verify_rate=0, delta_aware=False)
tails = C.continuation_tails([48000], 1100, 5, sessions)


def exact(s, prefix, deltas, records):
    ref = tok.hf.encode(prefix + "".join(deltas), add_special_tokens=False).ids
    assert all(r.tolist() == ref for r in records.values()), f"session {s}: not the reference's"


for corp, stream in streams.items():
    cells = C.session_cells(stream, 48000, 1100, 5, sessions, tails[48000])
    times = alternated_appends(tiers, cells, exact)
    old, new = (np.array(v) for v in times.values())
    print(f"{name} {corp}, 48K, {old.size} appends each: P50 no memo {np.median(old) * 1e3:.1f} us, "
          f"memo {np.median(new) * 1e3:.1f} us; P99 {np.percentile(old, 99) * 1e3:.1f} / "
          f"{np.percentile(new, 99) * 1e3:.1f} us; paired median {np.median(old / new):.3f}x")  # fmt: skip
texts = slices(corpora()["multilingual"], 1_000_000, 8)
times = {k: [] for k in engines}
for rnd in range(2):
    for i, text in enumerate(texts):
        order = list(engines.items())
        ids = {}
        for label, eng in order[(i + rnd) % 2 :] + order[: (i + rnd) % 2]:
            t = fresh_str(text)
            times[label].append(time_ms(lambda eng=eng, t=t: eng.encode_ids(t, threads=1)))
            ids[label] = eng.encode_ids(t, threads=1).tolist()
        if rnd == 0:
            ref = tok.hf.encode(text, add_special_tokens=False).ids
            assert all(x == ref for x in ids.values()), f"slice {i}: not the reference's"
old, new = (np.array(v) for v in times.values())
print(f"{name} multilingual 1M, one thread, {old.size} encodes each (raw text, not NFC'd first): "
      f"P50 no memo {np.median(old):.2f} ms, memo {np.median(new):.2f} ms; "
      f"paired median {np.median(old / new):.3f}x")  # fmt: skip
