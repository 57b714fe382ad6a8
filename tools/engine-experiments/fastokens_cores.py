"""fastokens against the engine per core: wall and process CPU time of one 1M request.

fastokens splits a request over threads of its own; the engine's "all cores" row does too.
Run once unpinned and once under ``taskset -c 0`` (every thread on one core) to compare the
work per core apart from the parallel split:

    .venv/bin/python tools/engine-experiments/fastokens_cores.py llama3 code 8
    taskset -c 0 .venv/bin/python tools/engine-experiments/fastokens_cores.py llama3 code 8

Warm objects as in ``bench-engine-targets`` (each served the corpus' last 20K characters and
one untimed 1M slice first); each timed call gets its own str (``fresh_str``); the methods'
order alternates per slice; outputs checked equal.
"""

import os
import sys
import time

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")

import fastokens

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str
from toktier.engine.cpu import new_engine
from toktier.registry import load


def main(name: str, kind: str, samples: int = 8) -> None:
    tok = load(name)
    one, all_ = new_engine(tok), new_engine(tok)
    fk = fastokens.Tokenizer.from_file(tok.checked_path())
    methods = {
        "toktier 1 thread": lambda s: one.encode_ids(s, threads=1),
        "toktier all cores": lambda s: all_.encode_ids(s),
        "fastokens": lambda s: (
            fk.encode(s, add_special_tokens=False).ids
        ),  # a list, as timed in the bench
    }
    text = corpora()[kind]
    one.warmup()
    all_.warmup()
    warm = slices(text[len(text) // 2 :] + text, 1_000_000, 1)[0]
    for f in methods.values():
        f(text[-20_000:])
        f(warm)
    res = {k: ([], []) for k in methods}
    for i, s in enumerate(slices(text, 1_000_000, samples)):
        names = list(methods)[i % 3 :] + list(methods)[: i % 3]
        outs = []
        for k in names:
            s2 = fresh_str(s)
            w, c = time.perf_counter(), time.process_time()
            out = methods[k](s2)
            res[k][0].append((time.perf_counter() - w) * 1e3)
            res[k][1].append((time.process_time() - c) * 1e3)
            outs.append(np.asarray(out, dtype=np.int64))  # after the clocks
        assert all(np.array_equal(outs[0], o) for o in outs[1:])
    cpus = len(os.sched_getaffinity(0))
    for k, (wall, cpu) in res.items():
        print(f"{name} {kind} 1M, {cpus} core(s): {k:18s} wall P50 {np.median(wall):7.2f} ms,"
              f" CPU P50 {np.median(cpu):7.2f} ms ({np.median(np.array(cpu) / wall):.2f} CPU/wall)",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(x) for x in sys.argv[3:4]))
