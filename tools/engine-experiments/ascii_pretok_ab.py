"""In-process A/B of the bit-parallel ASCII pre-tokenizer: one engine, its ``BpeTables.ascii_pre``
on (A) and off (B, the automaton; for deepseek-v4 its three-stage matcher over the decoded
text), alternated per slice on the same texts.

Per slice of ``bench-engine-targets``' corpus (CHARS characters): one-thread ``encode_ids``
fresh (the slice's first time for that arm: each arm has its own engine, so its piece caches
hold only what that arm has seen), warm (again) and with empty piece caches; outputs checked
equal.  Usage:
``.venv/bin/python tools/engine-experiments/ascii_pretok_ab.py NAME KIND [SAMPLES [CHARS]]``.
"""

import os
import sys
import time

import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu
from toktier.registry import load


def _ms(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return (time.perf_counter() - t0) * 1e3, out


def main(name: str, kind: str, samples: int = 8, chars: int = 1_000_000) -> None:
    tok = load(name)
    arms = {"A bit-parallel": cpu.CpuEngine(tok), "B automaton": cpu.CpuEngine(tok)}
    arms["B automaton"].bpe = arms["B automaton"].bpe._replace(ascii_pre=0)
    if not arms["A bit-parallel"].bpe.ascii_pre:
        raise SystemExit(f"{name} has no bit-parallel ASCII pre-tokenizer")
    text = corpora()[kind]
    for e in arms.values():
        e.warmup()
        e.encode_ids(text[-30000:], threads=1)
    recs = {k: {"fresh": [], "warm": [], "empty": []} for k in arms}
    for s in slices(text, int(chars), int(samples) + 1)[1:]:
        outs = []
        for label, eng in arms.items():
            rec = recs[label]
            ms, ids = _ms(eng.encode_ids, s, threads=1)
            rec["fresh"].append(ms)
            rec["warm"].append(_ms(eng.encode_ids, s, threads=1)[0])
            eng.clear_piece_caches()
            rec["empty"].append(_ms(eng.encode_ids, s, threads=1)[0])
            outs.append(np.asarray(ids))
        if not np.array_equal(outs[0], outs[1]):
            raise SystemExit("the arms' IDs differ")
    print(f"{name} {kind} {int(chars):,} chars, {samples} slices, P50 ms (equal IDs)")
    for state in ("fresh", "warm", "empty"):
        a = float(np.median(recs["A bit-parallel"][state]))
        b = float(np.median(recs["B automaton"][state]))
        print(f"  {state:6s} bit-parallel {a:8.3f}  automaton {b:8.3f}  A/B {a / b:5.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
