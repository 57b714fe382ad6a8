"""In-process A/B of two SentencePiece engine versions (``inproc_ab.py``'s protocol for
``sentencepiece.SentencePieceEngine``): per slice, one-thread ``encode_ids`` fresh, warm
and with the piece cache emptied, A and B alternated; outputs checked equal.

    git worktree add /tmp/wt-b REV   # then change it
    mkdir -p /tmp/abpkg && cp -r /tmp/wt-b/toktier /tmp/abpkg/toktier_b
    .venv/bin/python tools/engine-experiments/sp_ab.py mistral-sp-v3 multilingual [SAMPLES [CHARS]]
"""
import os
import sys
import time

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")  # toktier_b has no checkout of its own
sys.path.insert(0, "/tmp/abpkg")

import toktier_b.engine.sentencepiece as B

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import sentencepiece as A
from toktier.registry import load


def _ms(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return (time.perf_counter() - t0) * 1e3, out


def one(eng, text: str, rec: dict) -> np.ndarray:
    ms, ids = _ms(eng.encode_ids, text, threads=1)
    rec["fresh"].append(ms)
    rec["warm"].append(_ms(eng.encode_ids, text, threads=1)[0])
    eng._piece_cache[:] = 0  # every piece merged again
    rec["empty"].append(_ms(eng.encode_ids, text, threads=1)[0])
    return np.asarray(ids)


def main(name: str, kind: str, samples: int = 8, chars: int = 1_000_000) -> None:
    tok = load(name)
    engines = {"A": A.SentencePieceEngine(tok), "B": B.SentencePieceEngine(tok)}
    text = corpora()[kind]
    if tok.hf.normalizer is not None:
        text = tok.hf.normalizer.normalize_str(text)
    for e in engines.values():
        e.warmup()
        e.encode_ids(text[-30000:], threads=1)
    res = {k: {"fresh": [], "warm": [], "empty": []} for k in engines}
    for i, s in enumerate(slices(text, chars, samples)):
        order = ["A", "B"] if i % 2 == 0 else ["B", "A"]
        outs = [one(engines[k], s, res[k]) for k in order]
        assert np.array_equal(outs[0], outs[1])
    line = f"{name:14s} {kind:20s} {chars:>9,}"
    for k in ("fresh", "warm", "empty"):
        a, b = np.array(res["A"][k]), np.array(res["B"][k])
        r = b / a
        line += (f" | {k} A {np.median(a):6.2f} B {np.median(b):6.2f} ms"
                 f" (B/A {np.median(r):.3f}, {r.min():.2f}-{r.max():.2f})")  # fmt: skip
    print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(x) for x in sys.argv[3:5]))
