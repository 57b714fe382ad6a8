"""UTF-8 decode + class bits (``cpu._prepare``) against three rewrites, measured and not kept
(2026-11-27): one pass (bits gathered as each character is decoded); eight ASCII bytes at a
time while a word has no high bit (``jit.load_word``); both.  None beat the two-pass loop
on 1M characters of code, prose or both (the loop writes 14 bytes per character -- code
point, byte offset, bits -- and the stores bound it).  Outputs are checked equal first.
Usage: ``.venv/bin/python tools/engine-experiments/decode_variants.py``.
"""

import time

import numba
import numpy as np

from toktier import load
from toktier.bench.engine_profile import profile_texts
from toktier.engine import cpu

decode_at = cpu.RULES.decode_at
load_word = cpu._jit.load_word
HIGH = np.int64(-0x7F7F7F7F7F7F7F80)  # 0x8080808080808080


@numba.njit(cache=False)
def one_pass(u8, bits, cps, char_start, fl):
    nb = u8.size
    n = 0
    b = 0
    while b < nb:
        cp, k = decode_at(u8, b)
        cps[n] = cp
        char_start[n] = b
        fl[n] = bits[cp]
        b += k
        n += 1
    char_start[n] = nb
    return n


@numba.njit(cache=False)
def ascii_words(u8, bits, cps, char_start, fl, fuse):
    nb = u8.size
    n = 0
    b = 0
    while b < nb:
        if b + 8 <= nb and (load_word(u8, b) & HIGH) == 0:
            for j in range(8):
                c = u8[b + j]
                cps[n + j] = c
                char_start[n + j] = b + j
                if fuse:
                    fl[n + j] = bits[c]
            n += 8
            b += 8
            continue
        stop = min(b + 8, nb)
        while b < stop:
            cp, k = decode_at(u8, b)
            cps[n] = cp
            char_start[n] = b
            if fuse:
                fl[n] = bits[cp]
            b += k
            n += 1
    char_start[n] = nb
    if not fuse:
        for i in range(n):
            fl[i] = bits[cps[i]]
    return n


def best(fn, *args, k=9):
    out = []
    for _ in range(k):
        t0 = time.perf_counter()
        fn(*args)
        out.append(time.perf_counter() - t0)
    return min(out) * 1e3


if __name__ == "__main__":
    t = cpu.engine_for(load("llama3")).tables
    variants = {
        "two passes (kept)": lambda *a: cpu._prepare(*a),
        "one pass": one_pass,
        "ASCII words": lambda *a: ascii_words(*a, False),
        "ASCII words, one pass": lambda *a: ascii_words(*a, True),
    }
    for label, text in profile_texts(1_000_000).items():
        u8 = np.frombuffer(text.encode(), np.uint8)
        bufs = {k: (np.empty(u8.size, np.uint32), np.empty(u8.size + 1, np.int64),
                    np.empty(u8.size, np.uint16)) for k in variants}  # fmt: skip
        ns = {k: f(u8, t.bits, *bufs[k]) for k, f in variants.items()}
        ref = bufs["two passes (kept)"]
        for k, b in bufs.items():
            n = ns[k]
            assert n == ns["two passes (kept)"]
            assert all(np.array_equal(x[: n + 1], y[: n + 1]) for x, y in zip(b, ref, strict=True))
        times = {k: best(f, u8, t.bits, *bufs[k]) for k, f in variants.items()}
        print(label, " | ".join(f"{k} {v:.2f} ms" for k, v in times.items()))
