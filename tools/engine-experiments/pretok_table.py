"""A table-driven pre-tokenizer for the cl100k lineage, measured and not kept
(README, "The exact CPU engine": tried 2026-11-26, fifth session).

Per character: a class (letter, digit, space, CR/LF, other whitespace, apostrophe, other;
from the same class bits ``rules.cl_next`` reads) and one lookup in a 9-state x 8 x 8
table (state, this class, the next one) that says whether a piece ends before the
character and which state follows; pieces the table cannot decide with one character of
lookahead (whitespace runs, a leading apostrophe: contractions) go to ``rules.cl_next``.
Checked equal to the engine's pre-tokenizer on 1M characters of each corpus, then timed
against it (same arrays, alternated; beside a certification run): no faster (0.92-1.41x
the old time), the
state -> table -> state chain and the per-character class cost what the branches did.
Usage: ``.venv/bin/python tools/engine-experiments/pretok_table.py llama3 qwen3``.
"""

import sys
import time

import numba
import numpy as np

from toktier import load
from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu
from toktier.engine import rules as R
from toktier.engine.cpu import _prepare, new_workspace

cl_next = cpu.RULES.cl_next
pretokenize_segment = cpu.RULES.pretokenize_segment
K_L, K_N, K_SP, K_NL, K_WS, K_AP, K_P, K_END = range(8)
S0, SL, SD1, SD2, SDF, SP_, SPC, SLEAD, SSPP = range(9)
EMIT, SCALAR = 16, 32


def build(dmax):
    T = np.zeros(9 * 8 * 8, np.uint8)

    def start(k0, k1):
        if k0 == K_L:
            return SL
        if k0 == K_N:
            return SD1 if dmax > 1 else SDF
        if k0 in (K_AP, K_NL, K_END):
            return SCALAR
        if k1 == K_L:
            return SLEAD  # SP, WS, P lead a letter run
        if k0 == K_SP and k1 in (K_P, K_AP):
            return SSPP
        if k0 == K_P:
            return SP_
        return SCALAR  # whitespace runs

    def cont(s, k0):
        if s == SL and k0 == K_L:
            return SL
        if s == SD1 and k0 == K_N:
            return SD2 if dmax > 2 else SDF
        if s == SD2 and k0 == K_N:
            return SDF
        if s == SP_ and k0 in (K_P, K_AP):
            return SP_
        if s in (SP_, SPC) and k0 == K_NL:
            return SPC
        if s == SLEAD:
            return SL
        if s == SSPP:
            return SP_
        return None

    for s in range(9):
        for k0 in range(8):
            for k1 in range(8):
                if s == S0:
                    x = start(k0, k1)
                else:
                    c = cont(s, k0)
                    x = c if c is not None else EMIT | start(k0, k1)
                T[(s * 8 + k0) * 8 + k1] = x
    return T


T3, T1 = build(3), build(1)
SPECIAL = np.zeros(128, np.uint8)  # 0 none, else class + 1
SPECIAL[10] = SPECIAL[13] = K_NL + 1
SPECIAL[32] = K_SP + 1
SPECIAL[39] = K_AP + 1
BITK = np.array([K_P, K_L, K_N, K_L, K_WS, K_L, K_N, K_L], np.uint8)  # idx: letter | N<<1 | WS<<2


@numba.njit(inline="always")
def klass(c, f, letter):
    sp = SPECIAL[min(c, 127)]
    bk = BITK[int((f & letter) != 0) | (int((f & 2) != 0) << 1) | (int((f & 1024) != 0) << 2)]
    return bk if sp == 0 else sp - 1


@numba.njit(nogil=True)
def cl_dfa(cps, fl, fold, lo, hi, dmax, marks, ends, n, T):
    letter = 5 if marks else 1
    i = lo
    s = S0
    if i >= hi:
        return n
    k0 = klass(cps[i], fl[i], letter)
    while i < hi:
        k1 = klass(cps[i + 1], fl[i + 1], letter) if i + 1 < hi else K_END
        x = T[(s * 8 + k0) * 8 + k1]
        ends[n] = i
        n += (x >> 4) & 1
        if x & SCALAR:
            e = cl_next(cps, fl, fold, i, hi, dmax, marks)
            ends[n] = e
            n += 1
            i = e
            s = S0
            if i < hi:
                k0 = klass(cps[i], fl[i], letter)
            continue
        s = x & 15
        i += 1
        k0 = k1
    if s != S0:
        ends[n] = hi
        n += 1
    return n


@numba.njit(nogil=True)
def run_old(cps, fl, fold, n, family, ends, reps):
    m = 0
    for _ in range(reps):
        m = pretokenize_segment(cps, fl, fold, 0, n, family, ends, 0)
    return m


@numba.njit(nogil=True)
def run_new(cps, fl, fold, n, dmax, marks, ends, T, reps):
    m = 0
    for _ in range(reps):
        m = cl_dfa(cps, fl, fold, 0, n, dmax, marks, ends, 0, T)
    return m


def check_and_time(name, texts, reps=20):
    tok = load(name)
    eng = cpu.engine_for(tok)
    t = eng.tables
    fam = t.family_code
    dmax = 3 if fam == R.F_CL100K else 1
    marks = fam == R.F_QWEN_LM
    T = T3 if dmax == 3 else T1
    for label, text in texts.items():
        u8 = np.frombuffer(text.encode(), np.uint8)
        w = new_workspace(max(u8.size, 16))
        n = _prepare(u8, t.bits, w.cps, w.char_start, w.fl)
        ea = np.empty(n + 2, np.int64)
        eb = np.empty(n + 2, np.int64)
        ma = run_old(w.cps, w.fl, t.fold, n, fam, ea, 1)
        mb = run_new(w.cps, w.fl, t.fold, n, dmax, marks, eb, T, 1)
        same = ma == mb and np.array_equal(ea[:ma], eb[:mb])
        if not same:
            k = next(j for j in range(min(ma, mb)) if ea[j] != eb[j])
            a = ea[k - 1] if k else 0
            print("MISMATCH", name, label, k, repr(text[max(0, a - 5) : ea[k] + 5]), ea[k], eb[k])
            return False
        if reps:
            res = {"old": [], "new": []}
            for r in range(reps):
                for lab in ("old", "new") if r % 2 else ("new", "old"):
                    s0 = time.perf_counter()
                    if lab == "old":
                        run_old(w.cps, w.fl, t.fold, n, fam, ea, 1)
                    else:
                        run_new(w.cps, w.fl, t.fold, n, dmax, marks, eb, T, 1)
                    res[lab].append((time.perf_counter() - s0) * 1e3)
            print(
                name,
                label,
                ma,
                "pieces",
                {k: round(float(np.median(v)), 3) for k, v in res.items()},
            )
    return True


if __name__ == "__main__":
    c = corpora()
    texts = {k: slices(v, 1_000_000, 1)[0] for k, v in c.items()}
    for name in sys.argv[1:]:
        check_and_time(name, texts)
