"""In-process A/B (2026-11-27, kept): the byte-level pre-tokenizers as automata
(``engine.pretok_dfa``, ``rules.dfa_segment``) against the family matchers (``rules.cl_next``,
``rules.o200k_next``).

One engine; the matcher arm is the same ``BpeTables`` with the automaton's arrays
replaced by one-element ones (``rules.pretokenize_range`` then calls the matcher), so
both arms share the piece caches, buffers and threads.  Per tokenizer and corpus, eight
1M slices of ``bench-engine-targets``' corpora: the stage alone (pre-tokenizing the
decoded slice), the whole one-thread ``encode_ids`` warm (the slice encoded once before)
and with empty piece caches, the arms alternated (which goes first flips per slice),
outputs checked equal.  Run it with nothing else on the machine.
Usage: ``.venv/bin/python tools/engine-experiments/pretok_automaton_ab.py llama3 qwen3 ...``.

``--pairs`` (2026-11-27, later): the automaton one character a read (its pair table
replaced by a one-element array) against two characters a read (``pretok_dfa.build_pairs``).
"""

import sys
import time

import numba
import numpy as np

from toktier import load
from toktier.bench import engine_targets as E
from toktier.engine import cpu

dfa_segment = cpu.RULES.dfa_segment
pretokenize_segment = cpu.RULES.pretokenize_segment


@numba.njit(cache=False)
def _stage_dfa(cps, fl, fold, family, n, classes, table, pairs, ends):
    return dfa_segment(cps, fl, fold, family, classes, table, pairs, 0, n, ends, 0)


@numba.njit(cache=False)
def _stage_matcher(cps, fl, fold, family, n, ends):
    return pretokenize_segment(cps, fl, fold, 0, n, family, ends, 0)


def _ms(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return (time.perf_counter() - t0) * 1e3, out


def run(name: str, kinds=E.KINDS, samples: int = 8, chars: int = 1_000_000,
        pairs: bool = False) -> None:  # fmt: skip
    tok = load(name)
    eng = cpu.engine_for(tok)
    eng.warmup()
    new = eng.bpe
    if pairs:  # the baseline ("matcher" below) reads one character at a time
        old = new._replace(pre_pairs=np.zeros(1, np.int16))
    else:
        old = new._replace(pre_table=np.zeros(1, np.int32), pre_classes=np.zeros(1, np.uint8),
                           pre_pairs=np.zeros(1, np.int16))  # fmt: skip
    t = eng.tables
    texts = E.corpora()
    for kind in kinds:
        text = texts[kind]
        if t.nfc:
            text = tok.hf.normalizer.normalize_str(text)
        res = {k: {"matcher": [], "automaton": []} for k in ("stage", "warm", "empty")}
        for i, s in enumerate(E.slices(text, chars, samples)):
            u8 = np.frombuffer(s.encode(), np.uint8)
            cps = np.empty(u8.size, np.uint32)
            fl = np.empty(u8.size, np.uint16)
            n = cpu._prepare(u8, t.bits, cps, np.empty(u8.size + 1, np.int64), fl)
            ends = np.empty(n + 1, np.int64)
            arms = [("matcher", old), ("automaton", new)]
            outs = {}
            for arm, bt in arms if i % 2 == 0 else arms[::-1]:
                eng.bpe = bt
                if arm == "automaton" or pairs:
                    ms, m = _ms(_stage_dfa, cps, fl, t.fold, t.family_code, n, bt.pre_classes,
                                bt.pre_table, bt.pre_pairs, ends)  # fmt: skip
                else:
                    ms, m = _ms(_stage_matcher, cps, fl, t.fold, t.family_code, n, ends)
                res["stage"][arm].append(ms)
                outs[arm, "ends"] = ends[:m].copy()
                eng.clear_piece_caches()
                ms, ids = _ms(eng.encode_ids, s, threads=1)
                res["empty"][arm].append(ms)
                ms, ids2 = _ms(eng.encode_ids, s, threads=1)
                res["warm"][arm].append(ms)
                outs[arm, "ids"] = np.asarray(ids)
                assert np.array_equal(np.asarray(ids), np.asarray(ids2))
            eng.bpe = new
            assert np.array_equal(outs["matcher", "ends"], outs["automaton", "ends"])
            assert np.array_equal(outs["matcher", "ids"], outs["automaton", "ids"])
        line = [f"{name:7s} {kind:20s}"]
        for k, r in res.items():
            a, b = np.median(r["matcher"]), np.median(r["automaton"])
            ratios = [x / y for x, y in zip(r["matcher"], r["automaton"], strict=True)]
            line.append(
                f"{k} {a:6.2f} -> {b:6.2f} ms ({a / b:.2f}x, {min(ratios):.2f}-{max(ratios):.2f})"
            )
        print(" | ".join(line), flush=True)


if __name__ == "__main__":
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    for name in names or ["llama3", "qwen3"]:
        run(name, pairs="--pairs" in sys.argv)
