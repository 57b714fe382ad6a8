"""The session-loop tools' shared setup (``loop_steps.py``, ``first_window_steps.py``): the
transcripts stream of one tokenizer, long enough for 400 appends of ``delta_len`` characters
after a 48K seed, and a tier over a private engine with no verifier and no delta router; and
experiment 10's 48K streams with such a tier, warm (``protocol_parts.py``, ``append_marks.py``);
and the alternated A/B of tier variants on experiment 10's sessions (``flat_append_ab.py``,
``ascii_window_ab.py``).  Import it from a script in this folder.
"""

import time

import numpy as np

from toktier import Tier, load
from toktier.bench import continuation as C
from toktier.bench.streams import load_trajectories
from toktier.bench.timing import private_engine
from toktier.campaigns import corpus
from toktier.workload import archives


def transcripts_tier(name: str, delta_len: int) -> tuple[str, Tier]:
    """(the transcripts stream, a fresh tier for ``name``)."""
    trajs = load_trajectories(archives.find_archive("mini-swe-agent"))
    stream = C.standard_streams(trajs, name, 48_000 + delta_len * 400, "x" * 1000)["transcripts"]
    tok = load(name)
    return stream, Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False)


def protocol_tier(name: str) -> tuple[dict[str, str], Tier]:
    """(experiment 10's transcripts and multilingual streams for 48K sessions, a fresh tier
    for ``name`` whose engine has encoded each stream's first 48K characters)."""
    trajs = load_trajectories(archives.find_archive("mini-swe-agent"))
    multi = "".join(corpus.pycountry_documents())
    streams = C.standard_streams(trajs, name, 48000 + 2 * 1100 * 102 * 2, multi)
    tok = load(name)
    tier = Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False)
    for st in streams.values():
        tier.engine.encode(st[:48000])
    return streams, tier


def alternated_ab(tiers: dict, name: str, sessions: int,
                  contexts=(12_000, 48_000, 200_000)) -> None:  # fmt: skip
    """Experiment 10's protocol on the transcripts stream of ``name``, each tier of ``tiers``
    (label -> Tier, all of ``name``) on every session, the order alternating: a session is
    seeded about (context - 3.3K) characters, takes one untimed and five timed 1,100-character
    continuations, then closes.  Prints P50 and mean per context and the first two tiers'
    P50 ratio; every session's IDs are checked against the reference."""
    trajs = load_trajectories(archives.find_archive("mini-swe-agent"))
    stream = C.standard_streams(trajs, name, max(contexts) + 3 * 1100 * 204, "")["transcripts"]
    tok = load(name)
    for t in tiers.values():
        t.engine.encode(stream[:200_000])
    tails = C.continuation_tails(list(contexts), 1100, 5, sessions)
    print(f"{name}, transcripts, {sessions} sessions x 5 timed continuations per context and variant")
    for ctx in contexts:
        out = {k: [] for k in tiers}
        cells = C.session_cells(stream, ctx, 1100, 5, sessions, tails[ctx])
        for s, (prefix, deltas) in enumerate(cells):
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
        row = "  ".join(
            f"{k}: P50 {np.median(v) / 1e3:6.1f} us, mean {np.mean(v) / 1e3:6.1f} us"
            for k, v in out.items()
        )
        a, b = (np.median(v) for v in list(out.values())[:2])
        print(f"  {ctx:>7,}  {row}  A/B {a / b:.3f}")
