"""The cl100k-lineage pre-tokenizer for ASCII, with piece starts derived bit-parallel (CPU).

Why: on code the automaton (``pretok_dfa``) walks a dependent chain of table reads, ~2.2-3.1
ns a character; the fastest peers split ASCII with vector class masks.  Here three passes do
it for the pattern of llama3 / cl100k (digits in threes) and qwen3 / qwen3.6 (single digits)::

    (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*
    |\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+

1. ``class_masks``: one bit per byte for letters, digits, whitespace, CR/LF, space and the
   apostrophe, 32 bytes per vector compare (``jit.range_mask32``).
2. ``start_words``: from each 64-bit word of masks, the word of piece starts, by rules that
   follow from the pattern on ASCII (each derived in ``docs/engine.md``): a letter run starts
   a piece unless the character before it starts one and joins it (a space or tab; a lone
   punctuation character not after a space); a punctuation run starts one unless a space
   before it does; a whitespace run starts one unless its CR/LF follow punctuation (then
   they end that piece); after a CR/LF, spaces start a piece if they end the run; the last
   space or tab before a non-space starts one; digit runs start every 1 or 3.  Two additions
   carry runs along (CR/LF after punctuation; spaces after a CR/LF to where they end);
   contractions, digit runs beyond one word and spaces between two CR/LF are fixed up in
   scalar code (rare).
3. The starts are enumerated with ``cttz``.

Exact by test against the automaton and the reference (``tests/test_ascii_pretok.py``) and
by the engine campaigns; used only where ``ascii_mode`` finds the tokenizer's ASCII classes
equal to the ones hard-coded here.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from . import rules
from .jit import range_mask32

ML, MN, MW, MR, MS, MA, MV = 0, 1, 2, 3, 4, 5, 6  # mask rows: letters, digits, \s, CR/LF,
ROWS = 7  # space, apostrophe, inside the range; the starts follow them in the scratch


@numba.njit(cache=True, nogil=True)
def scratch_words(nchars):
    """Scratch int64 words ``pretokenize_ascii`` needs for a range of ``nchars`` bytes."""
    return (ROWS + 1) * ((nchars + 63) >> 6)


def ascii_mode(family_code: int, bits: np.ndarray) -> int:
    """``BpeTables.ascii_pre``: 3 or 1 (digits per piece) where this pre-tokenizer is the
    tokenizer's on ASCII, else 0.  The family must be of the cl100k lineage and the engine's
    own class bits of the 128 ASCII code points must be exactly the classes hard-coded here
    (letters A-Z a-z, digits 0-9, whitespace 9-13 and 32, nothing else) -- asked of the
    tables, not assumed."""
    digits = {rules.F_CL100K: 3, rules.F_QWEN: 1, rules.F_QWEN_LM: 1}.get(int(family_code), 0)
    if not digits:
        return 0
    b = np.asarray(bits[:128], dtype=np.int64)
    cp = np.arange(128)
    letter = ((cp >= 65) & (cp <= 90)) | ((cp >= 97) & (cp <= 122))
    digit = (cp >= 48) & (cp <= 57)
    space = ((cp >= 9) & (cp <= 13)) | (cp == 32)
    letter_bits = rules.B_L | (rules.B_M if family_code == rules.F_QWEN_LM else 0)
    same = (
        np.array_equal((b & letter_bits) != 0, letter)
        and np.array_equal((b & rules.B_N) != 0, digit)
        and np.array_equal((b & rules.B_WS) != 0, space)
    )
    return digits if same else 0


@numba.njit(cache=True, nogil=True, inline="always")
def _u(x):
    return np.uint64(x)


@numba.njit(cache=True, nogil=True)
def class_masks(u8, lo, hi, m, nw):
    """``m[c * nw + w]`` bit j: byte ``lo + 64 w + j`` (< ``hi``) is of class c.  Vector
    compares wherever 32 bytes can be read (past ``hi`` too: masked), bytes near the
    array's end one by one."""
    for k in range(ROWS * nw):
        m[k] = 0
    i = lo
    while i < hi and i + 32 <= u8.size:
        d = i - lo
        w = d >> 6
        sh = d & 32
        lim = hi - i
        keep = 0xFFFFFFFF if lim >= 32 else (1 << lim) - 1
        az = range_mask32(u8, i, 65, 90) | range_mask32(u8, i, 97, 122)
        sp = range_mask32(u8, i, 32, 32)
        cr = range_mask32(u8, i, 10, 10) | range_mask32(u8, i, 13, 13)
        m[ML * nw + w] |= (az & keep) << sh
        m[MN * nw + w] |= (range_mask32(u8, i, 48, 57) & keep) << sh
        m[MW * nw + w] |= ((range_mask32(u8, i, 9, 13) | sp) & keep) << sh
        m[MR * nw + w] |= (cr & keep) << sh
        m[MS * nw + w] |= (sp & keep) << sh
        m[MA * nw + w] |= (range_mask32(u8, i, 39, 39) & keep) << sh
        m[MV * nw + w] |= keep << sh
        i += 32
    for k in range(i, hi):
        b = u8[k]
        d = k - lo
        w = d >> 6
        bit = 1 << (d & 63)
        m[MV * nw + w] |= bit
        if (65 <= b <= 90) or (97 <= b <= 122):
            m[ML * nw + w] |= bit
        elif 48 <= b <= 57:
            m[MN * nw + w] |= bit
        elif (9 <= b <= 13) or b == 32:
            m[MW * nw + w] |= bit
            if b == 10 or b == 13:
                m[MR * nw + w] |= bit
            if b == 32:
                m[MS * nw + w] |= bit
        elif b == 39:
            m[MA * nw + w] |= bit


@numba.njit(cache=True, nogil=True, inline="always")
def _add_carry(a, b, cin):
    """(a + b + cin) mod 2**64 and its carry out (uint64)."""
    s = a + b + cin
    return s, ((a & b) | ((a | b) & ~s)) >> _u(63)


@numba.njit(cache=True, nogil=True, inline="always")
def cttz(x):
    """Trailing zero bits of a nonzero uint64, as an int64 (one ``tzcnt``)."""
    return np.int64(trailing_zeros(x))


@numba.njit(cache=True, nogil=True, inline="always")
def _i(x):
    return np.int64(x)


@numba.njit(cache=True, nogil=True, inline="always")
def _set_bit(m, so, d):
    """Start bit ``d`` (of the starts at ``m[so:]``) on."""
    m[so + (d >> 6)] |= _i(_u(1) << _u(d & 63))


@numba.njit(cache=True, nogil=True)
def _drop_candidate(m, so, t):
    """Spaces after a CR/LF that end at another CR/LF (terminator at ``t``) start no piece:
    clear the start of their run (the nearest start below ``t``: none lies inside it)."""
    q = t - 1
    while ((m[so + (q >> 6)] >> (q & 63)) & 1) == 0:
        q -= 1
    m[so + (q >> 6)] &= ~(1 << (q & 63))


@numba.njit(cache=True, nogil=True)
def _contraction_start(u8, a, hi, fold, m, so, lo):
    """A contraction ``'`` + s/t/m/d or re/ve/ll (case as ``fold`` says) at the apostrophe
    before letter ``a``: the letters after it start a new piece."""
    f = fold[u8[a]]
    k = 0
    if f == 115 or f == 116 or f == 109 or f == 100:
        k = 1
    elif a + 1 < hi:
        g = fold[u8[a + 1]]
        if (f == 114 and g == 101) or (f == 118 and g == 101) or (f == 108 and g == 108):
            k = 2
    if k and a + k < hi:
        b = u8[a + k]
        if (65 <= b <= 90) or (97 <= b <= 122):
            _set_bit(m, so, a + k - lo)


@numba.njit(cache=True, nogil=True)
def start_words(u8, lo, hi, m, nw, fold, digits):
    """``m[ROWS * nw + w]`` (zeroed) bit j: a piece starts at ``lo + 64 w + j``."""
    so = ROWS * nw
    z = _u(0)
    one = _u(1)
    s1, s2, s3, s61, s62, s63 = _u(1), _u(2), _u(3), _u(61), _u(62), _u(63)
    pL = pN = pW = pR = pP = pS = pA = pAbs = pG = z  # the previous word's masks
    cA = cT = z  # carries of the two additions
    for w in range(nw):
        L = _u(m[ML * nw + w])
        N = _u(m[MN * nw + w])
        W = _u(m[MW * nw + w])
        R = _u(m[MR * nw + w])
        S = _u(m[MS * nw + w])
        A = _u(m[MA * nw + w])
        V = _u(m[MV * nw + w])
        P = V & ~(L | N | W)  # punctuation: [^\s\p{L}\p{N}]
        Q = W & ~R  # whitespace but CR/LF
        nxt_non_ws = z
        if w + 1 < nw:
            nxt_non_ws = (_u(m[MV * nw + w + 1]) & ~_u(m[MW * nw + w + 1])) & one
        # "1": the character before is of the class; "2": the one before that
        L1 = (L << s1) | (pL >> s63)
        N1 = (N << s1) | (pN >> s63)
        N2 = (N << s2) | (pN >> s62)
        W1 = (W << s1) | (pW >> s63)
        R1 = (R << s1) | (pR >> s63)
        P1 = (P << s1) | (pP >> s63)
        P2 = (P << s2) | (pP >> s62)
        S1 = (S << s1) | (pS >> s63)
        S2 = (S << s2) | (pS >> s62)
        A1 = (A << s1) | (pA >> s63)
        Q1 = W1 & ~R1
        lone_p = P1 & ~P2 & ~S2  # lone punctuation before, itself starting a match
        letter_run = L & ~L1
        out = letter_run & ~(Q1 | lone_p)
        if digits == 1:
            out |= N
        else:  # a run's start, then every third digit while the run lasts
            g = N & ~N1
            nxt = ((g << s3) | (pG >> s61)) & N & N1 & N2 & ~g
            while nxt != z:
                g |= nxt
                nxt = ((g << s3) | (pG >> s61)) & N & N1 & N2 & ~g
            out |= g
            pG = g
        out |= P & ~P1 & ~S1
        # CR/LF right after punctuation end its piece (`[\r\n]*`): the runs seeded there
        seeds = R & P1
        summed, cA = _add_carry(R, seeds, cA)
        absorbed = R & ~summed
        abs1 = (absorbed << s1) | (pAbs >> s63)
        out |= W & ~W1 & ~absorbed
        out |= Q & abs1
        out |= Q & (((V & ~W) >> s1) | (nxt_non_ws << s63))  # last space before non-space
        # spaces after a CR/LF start a piece when the run ends with them: candidates now,
        # the ones whose spaces end at a CR/LF (their terminator) dropped below
        cand = Q & R1 & ~abs1
        summed, cT = _add_carry(Q, cand, cT)
        bad = summed & ~Q & R
        m[so + w] |= _i(out | cand)
        while bad != z:
            _drop_candidate(m, so, (w << 6) + cttz(bad))
            bad &= bad - one
        con = letter_run & A1 & ~P2 & ~S2
        while con != z:
            _contraction_start(u8, lo + (w << 6) + cttz(con), hi, fold, m, so, lo)
            con &= con - one
        pL, pN, pW, pR, pP, pS, pA, pAbs = L, N, W, R, P, S, A, absorbed


@numba.njit(cache=True, nogil=True)
def pretokenize_ascii(u8, lo, hi, fold, digits, scratch, ends, n):
    """Append the piece ends of the all-ASCII ``u8[lo:hi]`` to ``ends[n:]``; returns the new
    count.  ``scratch``: int64, at least ``scratch_words(hi - lo)`` long."""
    if hi <= lo:
        return n
    nw = (hi - lo + 63) >> 6
    class_masks(u8, lo, hi, scratch, nw)
    so = ROWS * nw
    for w in range(nw):
        scratch[so + w] = 0
    start_words(u8, lo, hi, scratch, nw, fold, digits)
    one = _u(1)
    base = lo
    x = _u(scratch[so]) & ~one  # lo itself starts the first piece
    for w in range(nw):
        if w:
            x = _u(scratch[so + w])
        while x != _u(0):
            ends[n] = base + cttz(x)
            n += 1
            x &= x - one
        base += 64
    ends[n] = hi
    return n + 1
