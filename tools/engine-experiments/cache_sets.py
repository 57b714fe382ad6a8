"""How many pieces the engine's piece caches lose to set conflicts (results/runs/engine-ab/cache-sets.txt).

The bench of issue #12 encodes 4.4M-character slices of a 4.3M-character corpus on one
warm engine, so every sample meets the pieces of the one before.  This replays the
pieces of one such slice twice through a model of the caches (each distinct piece gets
a uniform random set, as a good hash gives; a miss stores the piece in way 0 and moves
way 0 to way 1, as ``rules.cache_store`` / ``rules.long_store`` do) and counts the
second pass's misses: each one is a merge the engine runs again.  Short pieces
(2..16 bytes) that are one vocabulary token are left out (the short-piece map answers
them; the vocabulary test here is an approximation of the map).

Usage: ``.venv/bin/python tools/engine-experiments/cache_sets.py NAME KIND``
(KIND: code, multilingual, "code + multilingual").
"""

import contextlib
import sys

import numpy as np

from toktier import load
from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu
from toktier.engine.tables import CHAR_TO_BYTE

name, kind = sys.argv[1], sys.argv[2]
tok = load(name)
eng = cpu.engine_for(tok)
text = slices(corpora()[kind], 4_400_000, 1)[0]
if tok.hf.normalizer is not None:
    text = tok.hf.normalizer.normalize_str(text)
st, en = eng.split(text)
u8 = text.encode()
cps = np.frombuffer(text.encode("utf-32-le"), np.uint32)
width = np.where(cps < 0x80, 1, np.where(cps < 0x800, 2, np.where(cps < 0x10000, 3, 4)))
cs = np.zeros(len(text) + 1, np.int64)
cs[1:] = np.cumsum(width)
vocab_bytes = set()
for t in tok.hf.get_vocab():
    with contextlib.suppress(KeyError):  # not a byte string
        vocab_bytes.add(bytes(CHAR_TO_BYTE[c] for c in t))
seq_short, seq_long = [], []
for a, b in zip(cs[st].tolist(), cs[en].tolist(), strict=True):
    if 2 <= b - a <= 16:
        if u8[a:b] not in vocab_bytes:
            seq_short.append(u8[a:b])
    elif 17 <= b - a <= 128:
        seq_long.append(u8[a:b])
print(f"{name}, {kind}, 4.4M chars: {len(st):,} pieces; multi-token short {len(seq_short):,} "
      f"({len(set(seq_short)):,} distinct); long {len(seq_long):,} ({len(set(seq_long)):,} distinct)")  # fmt: skip
rng = np.random.default_rng(1)


def second_pass_misses(seq, sets, ways):
    home = {p: int(rng.integers(0, sets)) for p in set(seq)}
    rows = [[] for _ in range(sets)]
    misses = 0
    for _ in range(2):
        misses = 0
        for p in seq:
            s = rows[home[p]]
            if p not in s:
                misses += 1
                s.insert(0, p)
                del s[ways:]
    return misses


for label, seq, configs in (("short", seq_short, ((131072, 2), (262144, 2))),
                            ("long", seq_long, ((32768, 1), (16384, 2), (32768, 2), (65536, 2)))):  # fmt: skip
    for sets, ways in configs:
        m = second_pass_misses(seq, sets, ways)
        print(f"  {label}: {sets * ways:,} rows in {sets:,} sets of {ways}: second-pass misses "
              f"{m:,} ({m / max(1, len(seq)):.1%})")  # fmt: skip
