"""The never-seen pieces of fresh 48K multilingual slices and what merging them costs (not a
change): bench-engine-targets' slices in order after a 20K opening, each slice's distinct
pieces that no earlier text had (what the targets run's warm engine must merge), and the
engine's own ``merges_only`` over them, hot (best of 5).
Usage: ``.venv/bin/python tools/engine-experiments/fresh_slice_merges.py [NAME]`` (from the
repository root).
"""

import sys
import time

import numpy as np

sys.path.insert(0, "tools/engine-experiments")
from fresh_piece_set import piece_bounds, seq_all

from toktier import load
from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
eng = cpu.engine_for(load(name))
bt = eng.bpe


def pieces(text: str) -> list[bytes]:
    u8 = np.frombuffer(text.encode(), np.uint8)
    bs, be = piece_bounds(eng, u8)
    return [bytes(u8[a:b]) for a, b in zip(bs.tolist(), be.tolist(), strict=True)]


texts = corpora()["multilingual"]
seen = set(pieces(texts[-20000:]))
scratch = (*(np.empty(1 << 16, np.int64) for _ in range(4)), np.empty(3 << 16, np.int64))
for k, w in enumerate(slices(texts, 48_000, 30)[:12]):
    ps = pieces(w)
    new = list(dict.fromkeys(p for p in ps if p not in seen))
    seen.update(ps)
    if k < 4 or not new:
        continue  # the first slices still meet the corpus's common words
    u8 = np.frombuffer(b"".join(new), np.uint8)
    lengths = np.array([len(p) for p in new])
    st = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    en = st + lengths
    out = np.empty(u8.size + 16, np.int64)
    offs = np.empty(st.size + 1, np.int64)
    best = 1 << 62
    for _ in range(5):
        t0 = time.perf_counter_ns()
        seq_all(u8, st, en, bt, *scratch, out, offs)
        best = min(best, time.perf_counter_ns() - t0)
    tokens = np.diff(offs)
    print(f"slice {k}: {len(ps)} pieces, {len(new)} never seen ({(tokens > 1).sum()} multi-token, "
          f"{(lengths > 16).sum()} over 16 bytes), {lengths.sum()} bytes, {tokens.sum()} tokens; "
          f"merging them {best / 1e6:.2f} ms hot ({best / max(1, tokens.sum()):.0f} ns a token)")  # fmt: skip
