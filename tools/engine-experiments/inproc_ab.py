"""In-process A/B of two CPU engine versions on the same texts, alternated per slice.

A is this checkout's ``toktier``; B is another revision's package copied under another
name, so both compile and run in one process (processes on this VM differ by up to 1.5x
from one minute to the next; alternating in one process resolves a few percent):

    git worktree add /tmp/wt-b REV   # then change it, or not
    mkdir -p /tmp/abpkg && cp -r /tmp/wt-b/toktier /tmp/abpkg/toktier_b
    .venv/bin/python tools/engine-experiments/inproc_ab.py llama3 code [SAMPLES [CHARS]]

Per slice (1M characters unless CHARS) of ``bench-engine-targets``' corpora: one-thread ``encode_ids`` fresh (first
time), warm (again) and with empty piece caches; outputs checked equal.  Each side's engine is
its package's ``new_engine`` (the byte-level ``CpuEngine``, or the SentencePiece engine for
mistral-sp-v1/v3: ``results/runs/engine-ab/sp-merge-inline.txt``).  A KIND ending in
``-ascii`` (``code-ascii``) has every non-ASCII character replaced by ``?`` first.  Used for
``results/runs/engine-ab/short-map-bytes.txt`` and ``ascii-path.txt``.
"""

import os
import sys
import time

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")  # toktier_b has no checkout of its own
sys.path.insert(0, "/tmp/abpkg")

import toktier_b.engine.cpu as B

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu as A
from toktier.registry import load


def _ms(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return (time.perf_counter() - t0) * 1e3, out


def warm_engines(tok, text: str, threads: int = 1) -> dict:
    """Both sides' engines ("A" this checkout's, "B" ``toktier_b``'s), each warmed up and
    having served the corpus tail once (also used by ``parallel_ab.py``, ``flushed_ab.py``,
    ``settled_ab.py``)."""
    engines = {"A": A.new_engine(tok), "B": B.new_engine(tok)}
    for e in engines.values():
        e.warmup()
        e.encode_ids(text[-30000:], threads=threads)
    return engines


def one(eng, text: str, rec: dict) -> np.ndarray:
    ms, ids = _ms(eng.encode_ids, text, threads=1)
    rec["fresh"].append(ms)
    rec["warm"].append(_ms(eng.encode_ids, text, threads=1)[0])
    eng.clear_piece_caches()
    rec["empty"].append(_ms(eng.encode_ids, text, threads=1)[0])
    return np.asarray(ids)


def main(name: str, kind: str, samples: int = 8, chars: int = 1_000_000) -> None:
    tok = load(name)
    ascii_only = kind.endswith("-ascii")  # e.g. code-ascii: every non-ASCII character -> "?"
    text = corpora()[kind.removesuffix("-ascii")]
    if ascii_only:
        text = text.encode("ascii", "replace").decode()
    if tok.hf.normalizer is not None:
        text = tok.hf.normalizer.normalize_str(text)
    engines = warm_engines(tok, text)
    res = {k: {"fresh": [], "warm": [], "empty": []} for k in engines}
    for i, s in enumerate(slices(text, chars, samples)):
        order = ["A", "B"] if i % 2 == 0 else ["B", "A"]
        outs = [one(engines[k], s, res[k]) for k in order]
        assert np.array_equal(outs[0], outs[1])
    line = f"{name:7s} {kind:20s} {chars:>9,}"
    for k in ("fresh", "warm", "empty"):
        a, b = np.array(res["A"][k]), np.array(res["B"][k])
        r = a / b
        line += (f" | {k} {np.median(a):6.2f} -> {np.median(b):6.2f} ms"
                 f" ({np.median(r):.3f}x, {r.min():.2f}-{r.max():.2f})")  # fmt: skip
    print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(x) for x in sys.argv[3:5]))
