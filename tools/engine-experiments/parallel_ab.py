"""In-process A/B of two CPU engine versions' all-cores encodes, alternated per slice.

A is this checkout's ``toktier``, B another revision's package copied as ``toktier_b``
(set up as for ``inproc_ab.py``).  Per slice of ``bench-engine-targets``' corpora (1M
characters unless CHARS): ``encode_ids`` on THREADS threads (default 2) the first time
(fresh) and again (warm), then one thread again (warm, for the speedup); outputs checked
equal.  Prints P50s, the A/B ratio's median and range, and each side's warm speedup.

    .venv/bin/python tools/engine-experiments/parallel_ab.py llama3 code [SAMPLES [CHARS [THREADS]]]
"""

import os
import sys

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")  # toktier_b has no checkout of its own
sys.path.insert(0, "/tmp/abpkg")

from inproc_ab import _ms, warm_engines

from toktier.bench.engine_targets import corpora, slices
from toktier.registry import load


def one(eng, text: str, threads: int, rec: dict) -> np.ndarray:
    ms, ids = _ms(eng.encode_ids, text, threads=threads)
    rec["fresh"].append(ms)
    rec["warm"].append(_ms(eng.encode_ids, text, threads=threads)[0])
    rec["warm 1t"].append(_ms(eng.encode_ids, text, threads=1)[0])
    return np.asarray(ids)


def main(name: str, kind: str, samples: int = 8, chars: int = 1_000_000, threads: int = 2):
    tok = load(name)
    text = corpora()[kind]
    engines = warm_engines(tok, text, threads)
    res = {k: {"fresh": [], "warm": [], "warm 1t": []} for k in engines}
    for i, s in enumerate(slices(text, chars, samples)):
        order = ["A", "B"] if i % 2 == 0 else ["B", "A"]
        outs = [one(engines[k], s, threads, res[k]) for k in order]
        assert np.array_equal(outs[0], outs[1])
    line = f"{name:7s} {kind:20s} {chars:>9,} {threads}t"
    for k in ("fresh", "warm"):
        a, b = np.array(res["A"][k]), np.array(res["B"][k])
        r = a / b
        line += (f" | {k} {np.median(a):6.2f} vs {np.median(b):6.2f} ms"
                 f" ({np.median(r):.3f}x, {r.min():.2f}-{r.max():.2f})")  # fmt: skip
    for k in ("A", "B"):
        sp = np.array(res[k]["warm 1t"]) / np.array(res[k]["warm"])
        line += f" | {k} warm speedup {np.median(sp):.2f}"
    print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(x) for x in sys.argv[3:6]))
