"""The cl100k-lineage and o200k pre-tokenizers for ASCII, piece starts derived bit-parallel (CPU).

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

o200k (gpt-oss) and tekken differ on ASCII in three places (``start_words_o200k``): a letter
run also starts a piece at each capital after a small letter (``[A-Z]*[a-z]+|[A-Z]+[a-z]*``);
o200k attaches a contraction to the word before it (``word's``) where the cl100k lineage makes
it a piece of its own, tekken has none; and a punctuation piece absorbs ``[\r\n/]*``, so the
absorbed tail is a run of CR/LF and ``/`` seeded by a CR/LF after punctuation.

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

ML, MN, MW, MR, MS, MA, MV, MU, MSL = 0, 1, 2, 3, 4, 5, 6, 7, 8  # mask rows: letters, digits,
ROWS = 9  # \s, CR/LF, space, apostrophe (deepseek: the controls), inside the range, A-Z and '/'
# (o200k); then the starts
# ``BpeTables.ascii_pre``: the digits of a piece (3 or 1) | the variant << 2
CL100K = 0  # contractions are pieces of their own (llama3, cl100k, qwen3, qwen3.6)
O200K = 1  # case-aware words, contractions attached to the word before, '/' after CR/LF (gpt-oss)
TEKKEN = 2  # o200k's words without contractions (tekken)
DEEPSEEK = rules.ASCII_DEEPSEEK  # deepseek-v4's three Split stages (digits in threes isolated)


@numba.njit(cache=True, nogil=True)
def scratch_words(nchars):
    """Scratch int64 words ``pretokenize_ascii`` needs for a range of ``nchars`` bytes."""
    return (ROWS + 1) * ((nchars + 63) >> 6)


def ascii_mode(family_code: int, bits: np.ndarray) -> int:
    """``BpeTables.ascii_pre``: the digits of a piece (3 or 1) | the variant << 2 where this
    pre-tokenizer is the tokenizer's on ASCII, else 0.  The family must be of the cl100k
    lineage, o200k or tekken, and the engine's own class bits of the 128 ASCII code points
    must be exactly the classes hard-coded here (letters A-Z a-z -- for o200k and tekken
    A-Z upper-case only and a-z lower-case only --, digits 0-9, whitespace 9-13 and 32,
    nothing else) -- asked of the tables, not assumed."""
    mode = {
        rules.F_CL100K: (3, CL100K), rules.F_QWEN: (1, CL100K), rules.F_QWEN_LM: (1, CL100K),
        rules.F_O200K: (3, O200K), rules.F_TEKKEN: (1, TEKKEN), rules.F_DEEPSEEK: (3, DEEPSEEK),
    }.get(int(family_code))  # fmt: skip
    if mode is None:
        return 0
    digits, variant = mode
    b = np.asarray(bits[:128], dtype=np.int64)
    cp = np.arange(128)
    upper = (cp >= 65) & (cp <= 90)
    lower = (cp >= 97) & (cp <= 122)
    digit = (cp >= 48) & (cp <= 57)
    space = ((cp >= 9) & (cp <= 13)) | (cp == 32)
    letter_bits = rules.B_L | (rules.B_M if family_code == rules.F_QWEN_LM else 0)
    same = (
        np.array_equal((b & letter_bits) != 0, upper | lower)
        and np.array_equal((b & rules.B_N) != 0, digit)
        and np.array_equal((b & rules.B_WS) != 0, space)
    )
    if variant == DEEPSEEK:  # its third stage reads punctuation and symbols, and marks
        punct = ~(upper | lower | digit | space) & (cp >= 33) & (cp <= 126)
        same = (same and np.array_equal((b & (rules.B_P | rules.B_S)) != 0, punct)
                and not (b & rules.B_M).any())  # fmt: skip
    elif variant != CL100K:  # the classes of o200k's two word alternatives
        upperish = rules.B_LU | rules.B_LT | rules.B_LM | rules.B_LO | rules.B_M
        lowerish = rules.B_LL | rules.B_LM | rules.B_LO | rules.B_M
        same = (same and np.array_equal((b & upperish) != 0, upper)
                and np.array_equal((b & lowerish) != 0, lower))  # fmt: skip
    return digits | (variant << 2) if same else 0


@numba.njit(cache=True, nogil=True, inline="always")
def _u(x):
    return np.uint64(x)


@numba.njit(cache=True, nogil=True)
def class_masks(u8, lo, hi, m, nw, variant):
    """``m[c * nw + w]`` bit j: byte ``lo + 64 w + j`` (< ``hi``) is of class c (A-Z and '/'
    only for o200k and tekken; row MA the apostrophe, for deepseek the controls instead).
    Vector compares wherever 32 bytes can be read (past ``hi`` too: masked), bytes near the
    array's end one by one."""
    cased = variant in (O200K, TEKKEN)
    controls = variant == DEEPSEEK
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
        if controls:  # [\x00-\x08\x0e-\x1f\x7f]: neither letter, digit, space nor punctuation
            ctl = range_mask32(u8, i, 0, 8) | range_mask32(u8, i, 14, 31)
            m[MA * nw + w] |= ((ctl | range_mask32(u8, i, 127, 127)) & keep) << sh
        else:
            m[MA * nw + w] |= (range_mask32(u8, i, 39, 39) & keep) << sh
        m[MV * nw + w] |= keep << sh
        if cased:
            m[MU * nw + w] |= (range_mask32(u8, i, 65, 90) & keep) << sh
            m[MSL * nw + w] |= (range_mask32(u8, i, 47, 47) & keep) << sh
        i += 32
    for k in range(i, hi):
        b = u8[k]
        d = k - lo
        w = d >> 6
        bit = 1 << (d & 63)
        m[MV * nw + w] |= bit
        if (65 <= b <= 90) or (97 <= b <= 122):
            m[ML * nw + w] |= bit
            if cased and b <= 90:
                m[MU * nw + w] |= bit
        elif 48 <= b <= 57:
            m[MN * nw + w] |= bit
        elif (9 <= b <= 13) or b == 32:
            m[MW * nw + w] |= bit
            if b == 10 or b == 13:
                m[MR * nw + w] |= bit
            if b == 32:
                m[MS * nw + w] |= bit
        elif (b == 39) if not controls else (b <= 8 or 14 <= b <= 31 or b == 127):
            m[MA * nw + w] |= bit
        elif b == 47 and cased:
            m[MSL * nw + w] |= bit


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


@numba.njit(cache=True, nogil=True, inline="always")
def _digit_starts(N, N1, N2, pG, digits):
    """(the digits that start a piece, the same word to carry): every digit for ``\\p{N}``;
    for ``\\p{N}{1,3}`` a run's start, then every third digit while the run lasts (``pG``:
    the previous word's)."""
    if digits == 1:
        return N, pG
    z = _u(0)
    s3, s61 = _u(3), _u(61)
    g = N & ~N1
    nxt = ((g << s3) | (pG >> s61)) & N & N1 & N2 & ~g
    while nxt != z:
        g |= nxt
        nxt = ((g << s3) | (pG >> s61)) & N & N1 & N2 & ~g
    return g, g


@numba.njit(cache=True, nogil=True, inline="always")
def _next_non_ws(m, nw, w):
    """1 when the byte after word ``w`` is in the range and no whitespace, else 0 (uint64)."""
    if w + 1 >= nw:
        return _u(0)
    return (_u(m[MV * nw + w + 1]) & ~_u(m[MW * nw + w + 1])) & _u(1)


@numba.njit(cache=True, nogil=True, inline="always")
def _row(m, row, nw, w):
    """Word ``w`` of mask row ``row``, as a uint64."""
    return _u(m[row * nw + w])


@numba.njit(cache=True, nogil=True, inline="always")
def _back1(x, px):
    """Bit j: the character before j has the mask's bit (``x`` this word, ``px`` the last)."""
    return (x << _u(1)) | (px >> _u(63))


@numba.njit(cache=True, nogil=True, inline="always")
def _back2(x, px):
    """Bit j: the character two before j has the mask's bit."""
    return (x << _u(2)) | (px >> _u(62))


@numba.njit(cache=True, nogil=True, inline="always")
def _ahead1(x, nxt):
    """Bit j: the character after j has the mask's bit (``nxt``: the next word's bit 0)."""
    return (x >> _u(1)) | (nxt << _u(63))


@numba.njit(cache=True, nogil=True, inline="always")
def _runs_from(run, seeds, carry):
    """The bits of ``run`` from each seed (a bit of ``run``) to the end of its run, and the
    carry into the next word: adding a seed carries it through the ones above it."""
    summed, carry = _add_carry(run, seeds, carry)
    return (run & ~summed) | seeds, carry


@numba.njit(cache=True, nogil=True, inline="always")
def _write_starts(m, so, w, out, Q, R, R1, abs1, carry):
    """Word ``w``'s starts: ``out``, and the blank runs right after a CR/LF (not absorbed,
    ``abs1``) that do not end at another CR/LF -- candidates first, those whose run the
    carry brings to a CR/LF (their terminator) cleared again.  Returns the carry."""
    cand = Q & R1 & ~abs1
    summed, carry = _add_carry(Q, cand, carry)
    bad = summed & ~Q & R
    m[so + w] |= _i(out | cand)
    while bad != _u(0):
        _drop_candidate(m, so, (w << 6) + cttz(bad))
        bad &= bad - _u(1)
    return carry


@numba.njit(cache=True, nogil=True)
def start_words(u8, lo, hi, m, nw, fold, digits):
    """``m[ROWS * nw + w]`` (zeroed) bit j: a piece starts at ``lo + 64 w + j``."""
    so = ROWS * nw
    z = _u(0)
    one = _u(1)
    pL = pN = pW = pR = pP = pS = pA = pAbs = pG = z  # the previous word's masks
    cA = cT = z  # carries of the two additions
    for w in range(nw):
        L = _row(m, ML, nw, w)
        N = _row(m, MN, nw, w)
        W = _row(m, MW, nw, w)
        R = _row(m, MR, nw, w)
        S = _row(m, MS, nw, w)
        A = _row(m, MA, nw, w)
        V = _row(m, MV, nw, w)
        P = V & ~(L | N | W)  # punctuation: [^\s\p{L}\p{N}]
        Q = W & ~R  # whitespace but CR/LF
        nxt_non_ws = _next_non_ws(m, nw, w)
        # "1": the character before is of the class; "2": the one before that
        L1 = _back1(L, pL)
        N1 = _back1(N, pN)
        N2 = _back2(N, pN)
        W1 = _back1(W, pW)
        R1 = _back1(R, pR)
        P1 = _back1(P, pP)
        P2 = _back2(P, pP)
        S1 = _back1(S, pS)
        S2 = _back2(S, pS)
        A1 = _back1(A, pA)
        Q1 = W1 & ~R1
        lone_p = P1 & ~P2 & ~S2  # lone punctuation before, itself starting a match
        letter_run = L & ~L1
        out = letter_run & ~(Q1 | lone_p)
        g, pG = _digit_starts(N, N1, N2, pG, digits)
        out |= g
        out |= P & ~P1 & ~S1
        # CR/LF right after punctuation end its piece (`[\r\n]*`): the runs seeded there
        absorbed, cA = _runs_from(R, R & P1, cA)
        abs1 = _back1(absorbed, pAbs)
        out |= W & ~W1 & ~absorbed
        out |= Q & abs1
        out |= Q & _ahead1(V & ~W, nxt_non_ws)  # last space before non-space
        # spaces after a CR/LF start a piece when the run ends with them: candidates now,
        # the ones whose spaces end at a CR/LF (their terminator) dropped below
        cT = _write_starts(m, so, w, out, Q, R, R1, abs1, cT)
        con = letter_run & A1 & ~P2 & ~S2
        while con != z:
            _contraction_start(u8, lo + (w << 6) + cttz(con), hi, fold, m, so, lo)
            con &= con - one
        pL, pN, pW, pR, pP, pS, pA, pAbs = L, N, W, R, P, S, A, absorbed


@numba.njit(cache=True, nogil=True)
def _attached_contraction(u8, a, hi, fold, m, so, lo):
    """o200k: the apostrophe at ``a`` follows a word's letter; if a contraction (``'s`` ...
    ``'ll``, case as ``fold`` says, inside the range) follows, it ends that word: the
    apostrophe starts no piece, nor do its letters, and a letter right after it starts one.
    Returns the contraction's end, or -1."""
    if a + 1 >= hi:
        return -1
    f = fold[u8[a + 1]]
    k = 0
    if f == 115 or f == 116 or f == 109 or f == 100:
        k = 1
    elif a + 2 < hi:
        g = fold[u8[a + 2]]
        if (f == 114 and g == 101) or (f == 118 and g == 101) or (f == 108 and g == 108):
            k = 2
    if k == 0:
        return -1
    d = a - lo
    m[so + (d >> 6)] &= ~(1 << (d & 63))
    if k == 2:  # nor its second letter (a capital after a small one: ``'lL``)
        d += 2
        m[so + (d >> 6)] &= ~(1 << (d & 63))
    e = a + 1 + k
    if e < hi:
        b = u8[e]
        if (65 <= b <= 90) or (97 <= b <= 122):
            _set_bit(m, so, e - lo)
    return e


@numba.njit(cache=True, nogil=True)
def start_words_o200k(u8, lo, hi, m, nw, fold, digits, contractions):
    """``start_words`` for o200k (``contractions``) and tekken, the rules derived in
    ``docs/engine.md``.  Against the cl100k lineage's: a capital after a small letter
    starts a piece; the tail absorbed after punctuation is a run of CR/LF and '/' (seeded by
    a CR/LF after punctuation; several seeds may fall in one run, so the seeds are or-ed
    back in) and whatever follows it starts a piece, a letter included (the character
    before it is no lead: it ended the tail); a punctuation character leads the letters
    after it when it starts a piece itself; a contraction after a letter joins the word
    (``_attached_contraction``) unless that letter ended a contraction itself (``x's'll``:
    the second apostrophe leads ``ll``), none standing alone."""
    so = ROWS * nw
    z = _u(0)
    one = _u(1)
    pL = pN = pW = pR = pP = pS = pAbs = pG = pLo = pPs = z  # the previous word's masks
    cA = cT = z  # carries of the two additions
    for w in range(nw):
        L = _row(m, ML, nw, w)
        N = _row(m, MN, nw, w)
        W = _row(m, MW, nw, w)
        R = _row(m, MR, nw, w)
        S = _row(m, MS, nw, w)
        A = _row(m, MA, nw, w)
        V = _row(m, MV, nw, w)
        U = _row(m, MU, nw, w)
        T = R | _row(m, MSL, nw, w)  # what a punctuation piece absorbs: [\r\n/]*
        P = V & ~(L | N | W)
        Q = W & ~R
        Lo = L & ~U
        nxt_non_ws = _next_non_ws(m, nw, w)
        L1 = _back1(L, pL)
        N1 = _back1(N, pN)
        N2 = _back2(N, pN)
        W1 = _back1(W, pW)
        R1 = _back1(R, pR)
        P1 = _back1(P, pP)
        S1 = _back1(S, pS)
        Lo1 = _back1(Lo, pLo)
        Q1 = W1 & ~R1
        # the absorbed tails: from a CR/LF after punctuation through the run of CR/LF and '/'
        absorbed, cA = _runs_from(T, R & P1, cA)
        abs1 = _back1(absorbed, pAbs)
        # punctuation that starts a piece: a run's first (no space before it), or right after a tail
        pstart = ((P & ~P1 & ~S1) | (P & abs1)) & ~absorbed
        lead_p = _back1(pstart, pPs)  # ... just before: it leads a letter run
        letter_run = L & ~L1
        out = (letter_run & ~(Q1 | lead_p)) | (U & Lo1)
        g, pG = _digit_starts(N, N1, N2, pG, digits)
        out |= g
        out |= pstart
        out |= W & ~W1
        out |= V & abs1  # whatever follows a tail
        out |= Q & _ahead1(V & ~W, nxt_non_ws)  # last space before non-space
        out &= ~absorbed
        cT = _write_starts(m, so, w, out, Q, R, R1, abs1, cT)
        m[MA * nw + w] = _i(A & L1)  # apostrophes after a letter, for the pass below
        pL, pN, pW, pR, pP, pS, pAbs, pLo, pPs = L, N, W, R, P, S, absorbed, Lo, pstart
    if not contractions:
        return
    # After every word's starts are written: a contraction may clear a start in the next word.
    con_end = -1  # where the last attached contraction ended
    for w in range(nw):
        con = _row(m, MA, nw, w)
        while con != z:
            a = lo + (w << 6) + cttz(con)
            if a != con_end:
                e = _attached_contraction(u8, a, hi, fold, m, so, lo)
                if e >= 0:
                    con_end = e
            con &= con - one


@numba.njit(cache=True, nogil=True, inline="always")
def _next_bit0(m, row, nw, w):
    """Bit 0 of row ``row``'s word ``w + 1`` (0 past the last word), as a uint64."""
    if w + 1 >= nw:
        return _u(0)
    return _u(m[row * nw + w + 1]) & _u(1)


@numba.njit(cache=True, nogil=True)
def start_words_deepseek(m, nw, kr, so):
    r"""``start_words`` for deepseek-v4's three stages (rules derived in ``docs/engine.md``,
    "deepseek-v4 on ASCII" and "... on any text"), the starts written from row ``so``.
    Stage 1 isolates ``\p{N}{1,3}`` (a digit run's start and every third digit start
    pieces) and stage 2 the CJK runs (row ``kr``; ``kr`` < 0: an all-ASCII range, none), so
    every stretch between them is stage 3's input on its own, whose pattern is
    ``[AP][A-Za-z]+ | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ | ' '?[\p{P}\p{S}]+[\r\n]* |
    \s*[\r\n]+ | \s+(?!\S) | \s+``, AP the 32 ASCII punctuation and symbols; a character of
    none of these classes (row MA: "other", controls, format characters) not before a letter
    matches nothing and joins the others before it.  Against the cl100k lineage's rules: an
    ASCII punctuation character that starts a piece leads the ASCII letters after it (row
    MU: the ASCII letters; a letter that is not ASCII after them starts a piece); a blank or
    an "other" before a letter leads it (never a CR/LF); a blank run before the stretch's
    end (a digit, a CJK change) is one piece (the ``(?!\S)`` meets the input's end); no
    contractions.  A stretch's first character always starts a piece (or-ed in last), so
    the rules that look back never reach across; those that look ahead are masked."""
    z = _u(0)
    pL = pN = pW = pR = pP = pS = pC = pAbs = pG = pPs = pK = pPk = pA1 = z  # previous word's
    cA = cT = cL = z  # carries of the three additions
    for w in range(nw):
        L = _row(m, ML, nw, w)  # letters and marks
        N = _row(m, MN, nw, w)
        W = _row(m, MW, nw, w)
        R = _row(m, MR, nw, w)
        S = _row(m, MS, nw, w)
        C = _row(m, MA, nw, w)
        V = _row(m, MV, nw, w)
        P = V & ~(L | N | W | C)  # \p{P} | \p{S}
        if kr >= 0:
            K = _row(m, kr, nw, w)
            AL = _row(m, MU, nw, w)
            AP = _row(m, MSL, nw, w)
            kn = _next_bit0(m, kr, nw, w)
        else:
            K = kn = z
            AL = L
            AP = P
        Q = W & ~R
        K1 = _back1(K, pK)
        k_next = _ahead1(K, kn)
        # ends a blank run inside its stretch ((?!\S) fails before it): a non-space, no
        # digit, in the same stretch (blanks are never CJK, so no CJK character either)
        X = V & ~(W | N | K)
        L1 = _back1(L, pL)
        N1 = _back1(N, pN)
        N2 = _back2(N, pN)
        W1 = _back1(W, pW)
        R1 = _back1(R, pR)
        P1 = _back1(P, pP)
        S1 = _back1(S, pS)
        C1 = _back1(C, pC)
        Q1 = W1 & ~R1
        l_next = _ahead1(L, _next_bit0(m, ML, nw, w)) & ~(K ^ k_next)
        x_next = _ahead1(X, _next_bit0(m, MV, nw, w) & ~_next_bit0(m, MW, nw, w)
                         & ~_next_bit0(m, MN, nw, w) & ~kn & _u(1))  # fmt: skip
        g, pG = _digit_starts(N, N1, N2, pG, 3)
        first = V & ((K ^ K1) | (N1 & ~N))  # a stretch's first character (after its digits)
        # a punctuation run's first, unless a space before leads it; a stretch's first
        pstart = P & ((~P1 & ~S1) | first)
        lead = pstart & AP  # ... leading the ASCII letters after it ([AP][A-Za-z]+)
        lead1 = _back1(lead, pPs)
        a1, cL = _runs_from(AL, AL & lead1, cL)  # those letters: the run seeded there
        a1_1 = _back1(a1, pA1)
        joined = (L1 & ~(L & ~AL & a1_1)) | Q1 | C1 | (AL & lead1)
        out = g | pstart | (L & ~joined)  # a letter run no lead joins
        out |= C & (~C1 | l_next)  # an "other" run's first, and one leading letters
        # CR/LF right after punctuation of their stretch end its piece (``[\r\n]*``)
        pk1 = _back1(P & ~K, pPk)
        absorbed, cA = _runs_from(R, R & pk1, cA)
        abs1 = _back1(absorbed, pAbs)
        out |= W & ~W1 & ~absorbed
        out |= Q & abs1
        out |= Q & x_next  # the last blank before a non-space of the stretch
        out |= first
        # blanks after a CR/LF start a piece unless they end at another CR/LF (as cl100k's)
        cT = _write_starts(m, so, w, out, Q, R, R1, abs1, cT)
        pL, pN, pW, pR, pP, pS, pC, pAbs, pPs = L, N, W, R, P, S, C, absorbed, lead
        pK, pPk, pA1 = K, P & ~K, a1


# deepseek's classes of a decoded character, one byte each (``_class_codes``), so that each
# mask is a range of codes (``range_mask32``): letters and marks 0-1, ASCII letters 0, digits 2,
# \s 3-5, CR/LF 3, space 4, ASCII punctuation and symbols 6, other punctuation and symbols 7,
# "other" 8; 255 past the range.
C_AL, C_UL, C_N, C_R, C_SP, C_Q, C_AP, C_UP, C_X, C_PAD = 0, 1, 2, 3, 4, 5, 6, 7, 8, 255


@numba.njit(cache=True, nogil=True)
def _class_codes(cps, fl, lo, hi, codes, kk):
    """``codes[i - lo]``: the class code of character i (digits first, then letters and marks,
    punctuation and symbols, whitespace: the order the stages test them in); ``kk[i - lo]``: 1
    in stage 2's CJK ranges (``rules.is_deepseek_cjk``).  No branch: the loop vectorizes."""
    lm_b = rules.B_L | rules.B_M
    ps_b = rules.B_P | rules.B_S
    for i in range(lo, hi):
        c = np.int64(cps[i])
        f = np.int64(fl[i])
        dn = np.int64((f & rules.B_N) != 0)
        lm = np.int64((f & lm_b) != 0) & (1 - dn)
        ps = np.int64((f & ps_b) != 0) & (1 - dn) & (1 - lm)
        ws = np.int64((f & rules.B_WS) != 0) & (1 - dn) & (1 - lm) & (1 - ps)
        asc = np.int64(c < 128)
        r = np.int64((c == 10) | (c == 13))
        sp = np.int64(c == 32)
        codes[i - lo] = np.uint8(lm * (1 - asc) + 2 * dn + ws * (5 - 2 * r - sp)
                                 + ps * (7 - asc) + 8 * (1 - lm - dn - ws - ps))  # fmt: skip
        kk[i - lo] = np.uint8(((c >= 0x3040) & (c <= 0x30FF)) | ((c >= 0x4E00) & (c <= 0x9FA5)))


@numba.njit(cache=True, nogil=True, inline="always")
def _code_mask(codes, at, lo, hi):
    """Bit j: ``lo <= codes[at + j] <= hi``, for the 64 codes from ``at``."""
    return _u(range_mask32(codes, at, lo, hi)) | (_u(range_mask32(codes, at + 32, lo, hi)) << _u(32))


@numba.njit(cache=True, nogil=True)
def class_masks_cps(cps, fl, lo, hi, m, nw):
    r"""deepseek's class masks of the decoded characters ``[lo, hi)`` (``cps``, their class
    bits ``fl``): rows ML letters and marks, MN digits, MW ``\s``, MR CR/LF, MS space, MA
    "other", MV inside the range, MU ASCII letters, MSL ASCII punctuation and symbols, and
    row ROWS the CJK ranges of stage 2.  Each character's class as one byte first, then each
    mask 32 bytes a compare (``scratch_words_cps`` leaves room for the bytes)."""
    nb = nw << 6
    at = (ROWS + 2) * nw
    codes = m[at : at + (nw << 3)].view(np.uint8)
    kk = m[at + (nw << 3) : at + (nw << 4)].view(np.uint8)
    _class_codes(cps, fl, lo, hi, codes, kk)
    for j in range(hi - lo, nb):
        codes[j] = C_PAD
        kk[j] = 0
    for w in range(nw):
        q = w << 6
        m[ML * nw + w] = _i(_code_mask(codes, q, C_AL, C_UL))
        m[MN * nw + w] = _i(_code_mask(codes, q, C_N, C_N))
        m[MW * nw + w] = _i(_code_mask(codes, q, C_R, C_Q))
        m[MR * nw + w] = _i(_code_mask(codes, q, C_R, C_R))
        m[MS * nw + w] = _i(_code_mask(codes, q, C_SP, C_SP))
        m[MA * nw + w] = _i(_code_mask(codes, q, C_X, C_X))
        m[MV * nw + w] = _i(_code_mask(codes, q, 0, C_X))
        m[MU * nw + w] = _i(_code_mask(codes, q, C_AL, C_AL))
        m[MSL * nw + w] = _i(_code_mask(codes, q, C_AP, C_AP))
        m[ROWS * nw + w] = _i(_code_mask(kk, q, 1, 1))


@numba.njit(cache=True, nogil=True)
def scratch_words_cps(nchars):
    """Scratch int64 words ``pretokenize_deepseek_cps`` needs for ``nchars`` characters: the
    masks and starts, and two bytes a character (``class_masks_cps``)."""
    return (ROWS + 2 + 16) * ((nchars + 63) >> 6)


@numba.njit(cache=True, nogil=True)
def pretokenize_deepseek_cps(cps, fl, lo, hi, scratch, ends, n):
    """deepseek-v4's pre-tokenizer over decoded text, bit-parallel: the piece ends of
    ``[lo, hi)`` appended to ``ends[n:]`` (the family matcher's, ``rules.deepseek_segment``);
    returns the new count.  ``scratch``: int64, at least ``scratch_words_cps(hi - lo)``."""
    if hi <= lo:
        return n
    nw = (hi - lo + 63) >> 6
    class_masks_cps(cps, fl, lo, hi, scratch, nw)
    so = (ROWS + 1) * nw
    for w in range(nw):
        scratch[so + w] = 0
    start_words_deepseek(scratch, nw, ROWS, so)
    return _emit_ends(scratch, so, nw, lo, hi, ends, n)


@numba.njit(cache=True, nogil=True)
def _emit_ends(m, so, nw, lo, hi, ends, n):
    """The pieces' ends from the start words at ``m[so:]`` (``lo`` starts the first piece)."""
    one = _u(1)
    base = lo
    x = _u(m[so]) & ~one
    for w in range(nw):
        if w:
            x = _u(m[so + w])
        while x != _u(0):
            ends[n] = base + cttz(x)
            n += 1
            x &= x - one
        base += 64
    ends[n] = hi
    return n + 1


@numba.njit(cache=True, nogil=True, inline="always")
def _ds_class(b):
    """deepseek's classes of an ASCII byte: 0 letter, 1 digit, 2 CR/LF, 3 other blank,
    4 punctuation or symbol, 5 control."""
    if (65 <= b <= 90) or (97 <= b <= 122):
        return 0
    if 48 <= b <= 57:
        return 1
    if b == 10 or b == 13:
        return 2
    if (9 <= b <= 13) or b == 32:
        return 3
    if 33 <= b <= 126:
        return 4
    return 5


@numba.njit(cache=True, nogil=True)
def _ds_run(u8, i, hi, cls):
    """The end of the run of class ``cls`` from ``i``."""
    while i < hi and _ds_class(u8[i]) == cls:
        i += 1
    return i


@numba.njit(cache=True, nogil=True)
def _ds_match(u8, i, hi):
    """deepseek's third stage at ``i`` of a digit-free stretch ending at ``hi``: the match's
    end, or -1 (``rules.deepseek_match`` on bytes, its classes those of ``_ds_class``)."""
    c = _ds_class(u8[i])
    nxt = _ds_class(u8[i + 1]) if i + 1 < hi else -1
    if c == 0:
        return _ds_run(u8, i, hi, 0)
    if nxt == 0 and c != 2:  # [P][A-Za-z]+, or a blank or control leading letters
        return _ds_run(u8, i + 1, hi, 0)
    if c == 4 or (u8[i] == 32 and nxt == 4):  # ' '?[P]+[\r\n]*
        j = _ds_run(u8, i if c == 4 else i + 1, hi, 4)
        return _ds_run(u8, j, hi, 2)
    if c == 5:
        return -1
    j = i  # whitespace: through its last CR/LF, else all but a last blank before a non-space
    last_crlf = -1
    while j < hi and (_ds_class(u8[j]) == 2 or _ds_class(u8[j]) == 3):
        if _ds_class(u8[j]) == 2:
            last_crlf = j
        j += 1
    if last_crlf >= 0:
        return last_crlf + 1
    if j < hi and j - i >= 2:
        return j - 1
    return j if j >= hi else i + 1


@numba.njit(cache=True, nogil=True)
def deepseek_ascii_segment(u8, lo, hi, ends, n):
    """deepseek's three stages over the all-ASCII ``u8[lo:hi]``, a scalar matcher over the
    bytes (the short ranges ``pretokenize_ascii`` leaves to it; no class bits needed)."""
    i = lo
    while i < hi:
        if _ds_class(u8[i]) == 1:  # \p{N}{1,3}, counted from the run's start
            r = _ds_run(u8, i, hi, 1)
            while i < r:
                i = min(i + 3, r)
                ends[n] = i
                n += 1
            continue
        t = i
        while t < hi and _ds_class(u8[t]) != 1:
            t += 1
        while i < t:  # the stretch [i, t): matches, and what no match takes between them
            e = _ds_match(u8, i, t)
            if e < 0:
                e = i + 1
                while e < t and _ds_match(u8, e, t) < 0:
                    e += 1
            ends[n] = e
            n += 1
            i = e
    return n


@numba.njit(cache=True, nogil=True)
def pretokenize_ascii(u8, lo, hi, fold, mode, scratch, ends, n):
    """Append the piece ends of the all-ASCII ``u8[lo:hi]`` to ``ends[n:]``; returns the new
    count.  ``mode``: ``BpeTables.ascii_pre``.  ``scratch``: int64, at least
    ``scratch_words(hi - lo)`` long -- except for deepseek, which takes any range: a short
    one (or one whose scratch is short) goes to its scalar matcher over the bytes, since that
    family has no automaton to fall back on and an all-ASCII text it reads as bytes has no
    class bits for its matcher (``cpu.ascii_reads_bytes``)."""
    if hi <= lo:
        return n
    nw = (hi - lo + 63) >> 6
    digits = mode & 3
    variant = mode >> 2
    if variant == DEEPSEEK and (hi - lo < rules.ASCII_PRETOK_MIN
                                or scratch.size < scratch_words(hi - lo)):  # fmt: skip
        return deepseek_ascii_segment(u8, lo, hi, ends, n)
    class_masks(u8, lo, hi, scratch, nw, variant)
    so = ROWS * nw
    for w in range(nw):
        scratch[so + w] = 0
    if variant == CL100K:
        start_words(u8, lo, hi, scratch, nw, fold, digits)
    elif variant == DEEPSEEK:
        start_words_deepseek(scratch, nw, -1, so)
    else:
        start_words_o200k(u8, lo, hi, scratch, nw, fold, digits, variant == O200K)
    return _emit_ends(scratch, so, nw, lo, hi, ends, n)
