"""Modelled 2026-11-27, not built: a cache of whole token runs between certified cuts that
follow a newline (line-level chunks: exact by construction, as parallel parts are).

For ``bench-engine-targets``' five 1M-character slices per corpus, in order, counts how
much of each slice is chunks already seen in earlier slices (the engine is one warm object
in that bench). llama3: code has few such cuts (a newline followed by indentation is not a
certified cut: chunks average 340-550 characters) and 6-12% of its characters fall in
repeated chunks; multilingual chunks are 11-12 characters (one or two pieces, which the
piece cache already serves). Too little to pay for a second cache level.
Usage: ``.venv/bin/python tools/engine-experiments/line_chunks.py [NAME]``.
"""

import sys
from itertools import pairwise

import numpy as np

from toktier import load
from toktier.bench import engine_targets as E
from toktier.engine.cpu import CpuEngine

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
eng = CpuEngine(load(name))
for kind, text in E.corpora().items():
    seen: set[str] = set()
    for k, x in enumerate(E.slices(text, 1_000_000, 5)):
        cuts = np.asarray(eng.certified_cuts(x)).tolist()
        after_newline = [c for c in cuts if c > 0 and x[c - 1] == "\n"]
        bounds = [0, *after_newline, len(x)]
        chunks = [x[a:b] for a, b in pairwise(bounds)]
        hit_chars = sum(len(c) for c in chunks if c in seen)
        hits = sum(1 for c in chunks if c in seen)
        print(f"{name} {kind} slice {k}: {len(cuts):,} cuts, {len(chunks):,} line chunks "
              f"(mean {len(x) / len(chunks):.0f} chars); seen before: {hits / len(chunks):.1%} "
              f"of chunks, {hit_chars / len(x):.1%} of characters")  # fmt: skip
        seen.update(chunks)
