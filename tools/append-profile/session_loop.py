"""The session-loop tools' shared setup (``loop_steps.py``, ``first_window_steps.py``): the
transcripts stream of one tokenizer, long enough for 400 appends of ``delta_len`` characters
after a 48K seed, and a tier over a private engine with no verifier and no delta router; and
experiment 10's 48K streams with such a tier, warm (``protocol_parts.py``, ``append_marks.py``).
Import it from a script in this folder.
"""

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
