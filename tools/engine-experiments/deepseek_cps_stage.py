"""deepseek-v4's pre-tokenizer over decoded text: the bit-parallel one
(``ascii_pretok.pretokenize_deepseek_cps``) against the three-stage matcher
(``rules.deepseek_segment``) on 1M characters of each of bench-engine-targets' texts, the
same decoded arrays, equal ends checked; then its two parts (class masks, start words).
Usage: ``.venv/bin/python tools/engine-experiments/deepseek_cps_stage.py``.
"""

import os
import time

import numba
import numpy as np

os.environ.setdefault("TOKTIER_HOME", "data/build")

from toktier.bench.engine_targets import corpora
from toktier.engine import ascii_pretok as AP
from toktier.engine import cpu
from toktier.registry import load

_segment = cpu.RULES.pretokenize_segment


@numba.njit(cache=False)
def matcher(cps, fl, fold, family, n, ends):
    return _segment(cps, fl, fold, 0, n, family, ends, 0)


@numba.njit(cache=False)
def bitpar(cps, fl, n, scratch, ends):
    return AP.pretokenize_deepseek_cps(cps, fl, 0, n, scratch, ends, 0)


@numba.njit(cache=False)
def masks_only(cps, fl, n, scratch):
    nw = (n + 63) >> 6
    AP.class_masks_cps(cps, fl, 0, n, scratch, nw)
    return nw


@numba.njit(cache=False)
def starts_only(scratch, nw):
    so = (AP.ROWS + 1) * nw
    for w in range(nw):
        scratch[so + w] = 0
    AP.start_words_deepseek(scratch, nw, AP.ROWS, so)


def _ms(fn, *args, repeats=9):
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args)
        out.append(time.perf_counter() - t0)
    return float(np.median(out)) * 1e3


def main() -> None:
    eng = cpu.CpuEngine(load("deepseek-v4"))
    t = eng.tables
    for kind in ("multilingual", "code + multilingual", "code"):
        u8 = np.frombuffer(corpora()[kind][300_000:1_300_000].encode(), dtype=np.uint8)
        cps = np.empty(u8.size, np.uint32)
        fl = np.empty(u8.size, np.uint16)
        n = cpu._prepare(u8, t.bits, cps, np.empty(u8.size + 1, np.int64), fl)
        a, b = np.empty(n + 1, np.int64), np.empty(n + 1, np.int64)
        scratch = np.empty(AP.scratch_words_cps(n), np.int64)
        ma, mb = matcher(cps, fl, t.fold, t.family_code, n, a), bitpar(cps, fl, n, scratch, b)
        assert ma == mb and np.array_equal(a[:ma], b[:mb])
        tm = _ms(matcher, cps, fl, t.fold, t.family_code, n, a)
        tb = _ms(bitpar, cps, fl, n, scratch, b)
        nw = masks_only(cps, fl, n, scratch)
        print(f"{kind}: {n:,} characters, {ma:,} pieces; matcher {tm:.2f} ms, bit-parallel "
              f"{tb:.2f} ms ({tb / tm:.2f}x): masks {_ms(masks_only, cps, fl, n, scratch):.2f}, "
              f"starts {_ms(starts_only, scratch, nw):.2f}")


if __name__ == "__main__":
    main()
