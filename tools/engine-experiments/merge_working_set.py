"""The engine's merges (``merges_only``, tables warm) of 9-16-byte never-met multilingual
pieces, by how many distinct pieces the loop cycles through: one piece repeated, 64, 512,
4,096, all (~10-13K).  Result (``results/runs/engine-ab/merge-locality.txt``): ~130-170 ns
a piece up to 512 distinct pieces, ~320-390 from 4,096 on.
Usage: ``.venv/bin/python tools/engine-experiments/merge_working_set.py NAME``.
"""

import sys

import numpy as np

sys.path.insert(0, "tools/append-profile")
from multilingual_fresh import byte_level_bytes, merge_cost

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu
from toktier.registry import load

name = sys.argv[1]
tok = load(name)
eng = cpu.CpuEngine(tok)
bl = byte_level_bytes()
vocab = tok.hf.get_vocab()
split = tok.hf.pre_tokenizer.pre_tokenize_str
seen = set()
multi = []
for s in slices(corpora()["multilingual"], 48000, 15):
    for p, _ in split(s):
        if p not in seen and p not in vocab and 9 <= len(p.encode()) <= 16:
            multi.append(bytes(bl[c] for c in p))
        seen.add(p)
multi = list(dict.fromkeys(multi))
ns_all, _ = merge_cost(eng.bpe, multi)
one = []
for p in multi[:200:10]:
    ns, _ = merge_cost(eng.bpe, [p] * 2000)
    one.append(ns)
sub = []
for k in (64, 512, 4096):
    ns, _ = merge_cost(eng.bpe, (multi[:k] * (40000 // k + 1))[:40000])
    sub.append((k, ns))
print(
    f"{name}: {len(multi)} distinct 9-16 byte pieces: across all {ns_all:.0f} ns a piece; one piece repeated {np.median(one):.0f} ns; working sets {[(k, round(v)) for k, v in sub]}"
)
