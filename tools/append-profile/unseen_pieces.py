"""How many of a 1,100-character append's pieces a warm engine has never met, against how
much text it met first: experiment 10 warms each engine with the opening 200K characters of
each stream; a server that has run for a while has met more.  The reference's pre-tokenizer
splits the transcripts stream; the appends are 200 stretches after 1.2M characters, counted
against the pieces of the first 200K (the benchmark's warm-up) and of the first 1.2M.
"Not one token": pieces the engine must merge (the others the short-piece map answers).
Usage: ``.venv/bin/python tools/append-profile/unseen_pieces.py [NAME]``.
"""

import sys

from toktier import load
from toktier.bench.streams import load_trajectories, stream_text
from toktier.workload import archives

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
tok = load(name)
split = tok.hf.pre_tokenizer.pre_tokenize_str
vocab = tok.hf.get_vocab()
stream = stream_text(load_trajectories(archives.find_archive("mini-swe-agent")), name, 3_000_000)
deltas = [stream[1_200_000 + k * 1100 : 1_200_000 + (k + 1) * 1100] for k in range(200)]
for label, upto in (("first 200K (experiment 10's warm-up)", 200_000), ("first 1.2M", 1_200_000)):
    seen = {p for p, _ in split(stream[:upto])}
    pieces = unseen = merged = 0
    for d in deltas:
        for p, _ in split(d):
            pieces += 1
            if p not in seen:
                unseen += 1
                merged += p not in vocab
    n = len(deltas)
    print(f"{name}, warm on the {label}: per append {pieces / n:.1f} pieces, {unseen / n:.1f} "
          f"never met, {merged / n:.1f} of them not one token")  # fmt: skip
