"""The repair window read as its bytes when all-ASCII (``splice.plan_engine``: no decode, the
word-wise literal scan, the bit-parallel pre-tokenizer where the tokenizer has it) against the
window decoded as before (``EngineArgs.ascii_direct`` off), one process, alternated.

Experiment 10's protocol on the transcripts stream of NAME (``flat_append_ab.py``'s): a session
is seeded about (context - 3.3K) characters, takes one untimed and five timed 1,100-character
continuations, then closes; SESSIONS sessions per context, each variant on every session (its
own tier and engine, warmed with the stream's first 200K characters), the order alternating.
P50 and mean per context; every session's IDs are checked against the reference.
Usage: ``.venv/bin/python tools/append-profile/ascii_window_ab.py [NAME] [SESSIONS]``
(``session_loop.alternated_ab`` runs the loop).
"""

import sys
import threading

from session_loop import alternated_ab

from toktier import Tier, load
from toktier.bench.timing import private_engine

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 20
tok = load(name)
tiers = {
    "ASCII window": Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False),
    "decoded window": Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False),
}
off = tiers["decoded window"]._planner
off.ea = off.ea._replace(ascii_direct=False)
off._local = threading.local()  # no window context made with the old tables
alternated_ab(tiers, name, sessions)
