"""In-process A/B of two WordPiece engine versions (bert-uncased) on the same texts.

A is this checkout's ``toktier``; B another revision's package copied under another name
(as ``inproc_ab.py``):

    git worktree add /tmp/wt-b REV
    mkdir -p /tmp/abpkg && cp -r /tmp/wt-b/toktier /tmp/abpkg/toktier_b
    .venv/bin/python tools/engine-experiments/wordpiece_ab.py [KIND ...] [--sizes N ...] [--b-first]

Per slice of ``bench-engine-targets``' corpora (8 of 48K, 4 of 1M, 2 of 4.4M characters by
default; ``--sizes`` to choose), the two
engines alternated (order flipped every slice), each warm from the same warm-up text:
``encode_ids`` on one thread the first time (fresh) and again (warm), ``encode_ids`` on
all cores, and ``encode`` (IDs and spans, one thread); outputs checked equal to each other
and, on each cell's first slice, to the reference.  P50 ms and the median paired ratio.

Mind numba's typecode cache: it keys a tuple argument by its fields' types alone, so two
packages' named tuples of the same fields (``WordPieceTables``, ``Workspace``) share one
entry, holding the type of the package that called first; each call of the other package
through its dispatcher then types ~50 arrays in Python (~0.5-1 ms a call: 1.4-2x at 48K
with B a copy of A).  Since 9c9706c the engine's calls go through ``jit.BoundKernel`` and
skip the dispatcher, so construct the old revision first (``--b-first``) when B predates
it; when both bind, either order.  (The byte-level ``inproc_ab.py`` passes structrefs and
bound kernels: A/A' 1.01-1.07x.)
"""

import os
import sys
import time

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")
sys.path.insert(0, "/tmp/abpkg")

import toktier_b.engine.wordpiece as B

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import wordpiece as A
from toktier.registry import load

METHODS = ("fresh", "warm", "all cores", "spans")


def _ms(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return (time.perf_counter() - t0) * 1e3, out


def one(eng, text: str, rec: dict):
    ms, ids = _ms(eng.encode_ids, text, threads=1)
    rec["fresh"].append(ms)
    rec["warm"].append(_ms(eng.encode_ids, text, threads=1)[0])
    rec["all cores"].append(_ms(eng.encode_ids, text)[0])
    ms, full = _ms(eng.encode, text)
    rec["spans"].append(ms)
    return ids, full


SAMPLES = {48_000: 8, 1_000_000: 4, 4_400_000: 2}


def main(kinds: list[str], sizes: list[int], b_first: bool = False) -> None:
    tok = load("bert-uncased")
    if b_first:  # the construction order decides which engine's memory is slower (above)
        eng_b = B.WordPieceEngine(tok)
        engines = {"A": A.WordPieceEngine(tok), "B": eng_b}
    else:
        eng_a = A.WordPieceEngine(tok)
        engines = {"A": eng_a, "B": B.WordPieceEngine(tok)}
    print(f"# constructed first: {'B' if b_first else 'A'}", flush=True)
    texts = corpora()
    for e in engines.values():
        e.warmup()
        e.encode_ids(texts["code"][-30000:], threads=1)
    for kind in kinds:
        for chars in sizes:
            samples = SAMPLES.get(chars, 4)
            res = {k: {m: [] for m in METHODS} for k in engines}
            for i, s in enumerate(slices(texts[kind], chars, samples)):
                order = ["A", "B"] if i % 2 == 0 else ["B", "A"]
                outs = {k: one(engines[k], s, res[k]) for k in order}
                (ia, fa), (ib, fb) = outs["A"], outs["B"]
                assert np.array_equal(ia, ib) and np.array_equal(ia, fa[0])
                assert all(np.array_equal(x, y) for x, y in zip(fa, fb, strict=True))
                if i == 0:
                    ref = tok.hf.encode(s, add_special_tokens=False)
                    assert ia.tolist() == ref.ids
                    assert list(zip(fa[1].tolist(), fa[2].tolist(), strict=True)) == ref.offsets
            line = f"{kind:20s} {chars:>9,}"
            for m in METHODS:
                a, b = np.array(res["A"][m]), np.array(res["B"][m])
                line += f" | {m} {np.median(b):7.2f} -> {np.median(a):7.2f} ms ({np.median(b / a):.2f}x)"
            print(line, flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    b_first = "--b-first" in args
    args = [a for a in args if a != "--b-first"]
    cut = args.index("--sizes") if "--sizes" in args else len(args)
    sizes = [int(x) for x in args[cut + 1 :]] or [48_000, 1_000_000, 4_400_000]
    main(args[:cut] or ["code", "multilingual", "code + multilingual"], sizes, b_first)
