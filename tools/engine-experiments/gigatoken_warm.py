"""Where issue #12's code cells lose to Gigatoken: the warm path (every piece cached) or the
fresh pieces' merges?  Both engines measured in both states, in one process, alternated.

For each of ``bench-engine-targets``' slices (the grid's cells): a new Gigatoken object
(construction not timed) encodes the slice (empty cache, what the grid times) and then the
same slice again (every piece in its cache); toktier's one-thread engine (one object, its
piece caches holding the earlier slices, as in the grid) encodes the fresh slice, then the
same slice again.  Each call on its own copy of the text with the allocator settled first
(``bench.timing.time_method``), its CPU time read beside its wall time (a ratio near 1:
one thread).  Outputs checked equal to the reference.  P50 over the slices; ``fresh cost``
= fresh (or empty) minus again: what the never-seen pieces cost each engine.

Usage: ``.venv/bin/python tools/engine-experiments/gigatoken_warm.py [NAMES] [KINDS] [CHARS]``
(comma-separated; defaults ``llama3`` ``code,multilingual`` ``48000,1000000``).
"""

import sys
import time

import gigatoken
import numpy as np

from toktier.bench.engine_targets import cell_samples, corpora, slices
from toktier.bench.timing import fresh_str, settle_allocator
from toktier.engine.cpu import CpuEngine
from toktier.registry import load


def clocked(fn) -> tuple[float, float, object]:
    """(wall ms, CPU ms of this process, result) of one call, the allocator settled first."""
    settle_allocator()
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    t1, c1 = time.perf_counter(), time.process_time()
    return (t1 - t0) * 1e3, (c1 - c0) * 1e3, out


def cell(tok, eng, text: str, chars: int, samples: int) -> dict[str, list[tuple[float, float]]]:
    res = {k: [] for k in ("Gigatoken empty", "Gigatoken again", "toktier fresh",
                           "toktier again")}  # fmt: skip
    path = tok.checked_path()
    nfc = tok.hf.normalizer is not None
    for i, s in enumerate(slices(text, chars, samples)):
        if nfc:
            s = tok.hf.normalizer.normalize_str(s)
        ref = tok.hf.encode(s, add_special_tokens=False).ids
        g = gigatoken.Tokenizer(path)
        runs = [("Gigatoken empty", lambda g=g, s=s: g.encode(fresh_str(s))),
                ("Gigatoken again", lambda g=g, s=s: g.encode(fresh_str(s))),
                ("toktier fresh", lambda s=s: eng.encode_ids(fresh_str(s), threads=1)),
                ("toktier again", lambda s=s: eng.encode_ids(fresh_str(s), threads=1))]  # fmt: skip
        if i % 2:  # alternate which engine goes first
            runs = runs[2:] + runs[:2]
        for label, fn in runs:
            wall, cpu, out = clocked(fn)
            if list(np.asarray(out).tolist()) != ref:
                raise SystemExit(f"{label} differs from the reference on slice {i}")
            res[label].append((wall, cpu))
    return res


def main(names, kinds, sizes) -> None:
    texts = corpora()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; P50 ms (CPU/wall in brackets)")
    for name in names:
        tok = load(name)
        eng = CpuEngine(tok)
        eng.warmup()
        for kind in kinds:
            eng.encode_ids(texts[kind][-30_000:], threads=1)
            for chars in sizes:
                res = cell(tok, eng, texts[kind], chars, cell_samples(chars, 5))
                p50 = {k: float(np.median([w for w, _ in v])) for k, v in res.items()}
                cpu = {k: float(np.median([c / w for w, c in v])) for k, v in res.items()}
                mb = len(texts[kind][:chars].encode()) / 1e6
                print(f"{name:8s} {kind:20s} {chars:>9,} | "
                      + " | ".join(f"{k} {p50[k]:7.3f} [{cpu[k]:.2f}]" for k in p50)
                      + f" | warm MB/s: Gigatoken {mb / p50['Gigatoken again'] * 1e3:5.0f}, "
                      f"toktier {mb / p50['toktier again'] * 1e3:5.0f} | fresh cost: Gigatoken "
                      f"{p50['Gigatoken empty'] - p50['Gigatoken again']:.3f}, toktier "
                      f"{p50['toktier fresh'] - p50['toktier again']:.3f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0].split(",") if a else ["llama3"],
         a[1].split(",") if len(a) > 1 else ["code", "multilingual"],
         [int(x) for x in a[2].split(",")] if len(a) > 2 else [48000, 1_000_000])  # fmt: skip
