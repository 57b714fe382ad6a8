"""The session-loop tools' shared setup (``loop_steps.py``, ``first_window_steps.py``): the
transcripts stream of one tokenizer, long enough for 400 appends of ``delta_len`` characters
after a 48K seed, and a tier over a private engine with no verifier and no delta router.
Import it from a script in this folder.
"""

from toktier import Tier, load
from toktier.bench import continuation as C
from toktier.bench.streams import load_trajectories
from toktier.bench.timing import private_engine
from toktier.workload import archives


def transcripts_tier(name: str, delta_len: int) -> tuple[str, Tier]:
    """(the transcripts stream, a fresh tier for ``name``)."""
    trajs = load_trajectories(archives.find_archive("mini-swe-agent"))
    stream = C.standard_streams(trajs, name, 48_000 + delta_len * 400, "x" * 1000)["transcripts"]
    tok = load(name)
    return stream, Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False)
