"""The numba CPU engine: exact IDs and character spans, one thread or all cores.

``CpuEngine(tok).encode(text) -> (ids, starts, ends)`` (the engine interface of
``Tier`` and repair) runs the rules of ``engine.rules`` compiled with
``numba.njit`` in a single compiled call.  ``encode_parallel`` cuts a long text
at *certified* boundaries -- the repair certificate applied across space: a
stable class pair for the family, no added-token occurrence crossing the cut,
both characters NFC-safe -- found by decoding small windows only, and runs the
whole single-thread path on each part on its own thread (the compiled call
releases the GIL).  NFC text with unsafe stretches takes the segmented path
(one decode, reference stretches, engine chunks under ``numba.prange``).

Normalization: for NFC tokenizers, text whose characters are all NFC-safe (the
quick check) is already normalized and goes to the engine; every stretch that
holds an unsafe character is cut out at certified boundaries and encoded by the
reference, so the output stays exact.

Compiled functions are cached on disk (numba ``cache=True``, under
``NUMBA_CACHE_DIR`` when set); ``warmup()`` compiles or loads them outside
request latency and reports how long that took.
"""

from __future__ import annotations

import itertools
import mmap
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from itertools import pairwise
from typing import NamedTuple

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from ..errors import InvalidTextError
from ..families import stability
from ..families.classes import NFC_UNSAFE
from ..textcheck import utf8_array
from . import jit as _jit
from . import pretok_dfa
from . import rules as _rules
from .literal_probe import check_literals
from .tables import EngineTables, EngineUnsupported, build_premerge

CACHE_DIR = _jit.use_engine_cache()  # before any decorator below
from . import ascii_pretok as _ascii_pretok  # noqa: E402 (its functions cached in CACHE_DIR)

# The rules are compiled for their callers' plain argument types (``jit.unliteral``: a
# third less cold compile time).  The two a fresh piece's merges call per piece are inlined
# into their callers (``rules.make``'s ``jit_inline``; whole encodes with every piece merged
# 0.78-0.95x the time, results/runs/engine-ab/merge-calls.txt); their callers are rules
# too, compiled without NRT: inlined into a function that has it they gain nothing.

RULES = _rules.make(_jit.unliteral(numba.njit(cache=True, nogil=True, _nrt=False)),
                    _jit.prefetch_row, _jit.Atomics, _jit.load_word,
                    _jit.unliteral(numba.njit(cache=True, nogil=True, _nrt=False,
                                              inline="always")),
                    _ascii_pretok.pretokenize_ascii, _ascii_pretok.scratch_words,
                    _ascii_pretok.pretokenize_deepseek_cps,
                    _ascii_pretok.scratch_words_cps)  # fmt: skip
# numba resolves callees as module globals, not attributes:
CACHE_SLOTS = _rules.CACHE_SLOTS
CACHE_COLS = _rules.CACHE_COLS
LONG_SLOTS = _rules.LONG_SLOTS
LONG_COLS = _rules.LONG_COLS
RING_WORDS = _rules.RING_WORDS
utf8_decode = RULES.utf8_decode
decode_at = RULES.decode_at
literal_at = RULES.literal_at
pretokenize_segment = RULES.pretokenize_segment
pretokenize_range = RULES.pretokenize_range
literal_scan = RULES.literal_scan
literal_take = RULES.literal_take
encode_range = RULES.encode_range
bpe_merge = RULES.bpe_merge
pair_code = RULES.pair_code
BpeTables = _rules.BpeTables
piece_words = RULES.piece_words
piece_hash = RULES.piece_hash

MIN_PARALLEL_CHARS = 1 << 16  # below this, one thread is faster than splitting
CUT_SEARCH = 1 << 14  # how far past a target position to look for a certified cut
# ... looked at first within this many bytes: the window is decoded whole, and a cut is
# nearly always a few characters away (the first cut in both windows is the same one)
CUT_FIRST_SEARCH = 512
# Join reference stretches closer than this.  The reference costs ~1 us per character here
# and ~8 us per call, and all stretches go to it in one call (``reference_spans``), so only
# overlapping or touching stretches are joined (64, when each stretch was a call of its own,
# sent up to 63 engine characters along: results/runs/append-path/nfc-batch.txt).
NFC_COALESCE = 0


@numba.njit(cache=True, nogil=True)
def _prepare(u8, bits, cps, char_start, fl):
    """Decode UTF-8 and gather class bits; returns the number of characters.

    Bound by its stores (14 bytes per character: code point, byte offset, bits): an
    eight-ASCII-bytes-at-a-time variant and a one-pass one were no faster
    (``tools/engine-experiments/decode_variants.py``)."""
    n = utf8_decode(u8, cps, char_start)
    for i in range(n):
        fl[i] = bits[cps[i]]
    return n


@numba.njit(cache=True, nogil=True)
def _find_literals(cps, n, f1, k1, c1, t1, f2, k2, c2, t2, has2, ls, le, lid):
    """All added-token occurrences, as the reference extracts them.

    Pass 1 finds raw (non-normalized) literals leftmost-longest over the whole
    text; pass 2 finds normalized literals inside the gaps pass 1 leaves.  Every
    position whose code point can begin a literal is visited (``_literals``).
    """
    return _literals(cps, n, False, 0, 0, f1, k1, c1, t1, f2, k2, c2, t2, has2, ls, le, lid)


@numba.njit(cache=True, nogil=True)
def _literals(text, n, words, b1, b2, f1, k1, c1, t1, f2, k2, c2, t2, has2, ls, le, lid):
    """``_find_literals``' two passes, each scan by the byte walk (``literal_scan``) or,
    with ``words``, by the word scan of an all-ASCII text whose literals begin only with
    the bytes ``b1`` or ``b2`` (``_ascii_literal_scan``): the one gap loop of both."""
    if not has2:
        return _literal_gap(text, 0, n, words, b1, b2, f1, k1, c1, t1, ls, le, lid, 0)
    a_s = np.empty(n, dtype=np.int64)
    a_e = np.empty(n, dtype=np.int64)
    a_id = np.empty(n, dtype=np.int64)
    na = _literal_gap(text, 0, n, words, b1, b2, f1, k1, c1, t1, a_s, a_e, a_id, 0)
    m = 0
    pos = 0
    for k in range(na + 1):
        stop = a_s[k] if k < na else n
        m = _literal_gap(text, pos, stop, words, b1, b2, f2, k2, c2, t2, ls, le, lid, m)
        if k < na:
            ls[m] = a_s[k]
            le[m] = a_e[k]
            lid[m] = a_id[k]
            m += 1
            pos = a_e[k]
    return m


@numba.njit(cache=True, nogil=True, inline="always")
def _literal_gap(text, lo, hi, words, b1, b2, first, tkeys, tchild, term, ls, le, lid, m):
    """One trie's literals in ``[lo, hi)``, appended from ``m``; the new count."""
    if words:
        return _ascii_literal_scan(text, lo, hi, b1, b2, first, tkeys, tchild, term, ls, le, lid,
                                   m)  # fmt: skip
    return literal_scan(text, lo, hi, first, tkeys, tchild, term, ls, le, lid, m)


_LOW_BYTES = np.uint64(0x0101010101010101)
NO_ASCII_LITERAL, ASCII_LITERAL_WORDS, ASCII_LITERAL_SCAN = 0, 1, 2  # ``ascii_literal_mode``


def ascii_literal_mode(first: np.ndarray, first2: np.ndarray | None = None) -> tuple[int, int, int]:
    """How an all-ASCII text's added-token literals are found: (mode, byte, byte).

    The literal walk visits the positions whose character can begin a literal
    (``first``, and ``first2`` of the normalized literals where the tokenizer has them).
    In ASCII text that is a byte of ``first[:128]``: none (no literal can occur:
    ``NO_ASCII_LITERAL``), one or two (every tokenizer here: ``<``, and ``[`` for tekken;
    ``_ascii_literal_scan`` finds them 8 bytes a step: ``ASCII_LITERAL_WORDS``), or more
    (the byte-at-a-time ``literal_scan``: ``ASCII_LITERAL_SCAN``)."""
    can = first[:128] != 0
    if first2 is not None:
        can = can | (first2[:128] != 0)
    starts = np.flatnonzero(can)
    if starts.size == 0:
        return NO_ASCII_LITERAL, 0, 0
    if starts.size <= 2:
        return ASCII_LITERAL_WORDS, int(starts[0]), int(starts[-1])
    return ASCII_LITERAL_SCAN, 0, 0


@numba.njit(cache=True, nogil=True)
def _ascii_literal_scan(u8, lo, hi, b1, b2, first, tkeys, tchild, term, ls, le, lid, m):
    """``literal_scan`` of ``[lo, hi)`` of an all-ASCII text whose literals can begin only
    with the bytes ``b1`` or ``b2``: the same walk (``literal_take`` at each such position,
    in order, no literal past ``hi``) appended to ``ls``... from ``m``; returns the new
    count.  The positions are found 8 bytes a step (a word with a zero byte after xor-ing
    with ``b * 0x0101..``; a borrow can flag a byte next to a real match, so each flagged
    byte is checked against ``first`` as ``literal_scan`` checks every byte).
    ~2.5x faster than the byte loop on code (``results/runs/engine-ab/ascii-literals-offsets.txt``)."""
    w = _words(u8)
    x1 = np.uint64(b1) * _LOW_BYTES
    x2 = np.uint64(b2) * _LOW_BYTES
    pos = lo
    for k in range(lo >> 3, min((hi + 7) >> 3, w.size)):  # the words [lo, hi) touches
        v = w[k]
        a = v ^ x1
        b = v ^ x2
        z = ((a - _LOW_BYTES) & ~a & _HIGH_BITS) | ((b - _LOW_BYTES) & ~b & _HIGH_BITS)
        at = k << 3
        if at < lo:  # the bytes below lo
            z &= ~((np.uint64(1) << np.uint64(8 * (lo - at))) - np.uint64(1))
        if at + 8 > hi:  # ... and from hi on
            z &= (np.uint64(1) << np.uint64(8 * (hi - at))) - np.uint64(1)
        while z != 0:
            i = at + (trailing_zeros(z) >> 3)
            if first[u8[i]] != 0:
                pos, m = literal_take(u8, i, pos, hi, first, tkeys, tchild, term, ls, le, lid, m)
            z &= z - np.uint64(1)
    for i in range(max(lo, w.size << 3), hi):
        if first[u8[i]] != 0:
            pos, m = literal_take(u8, i, pos, hi, first, tkeys, tchild, term, ls, le, lid, m)
    return m


@numba.njit(cache=True, nogil=True)
def ascii_literals(u8, f1, k1, c1, t1, f2, k2, c2, t2, has2, lit_mode, lit_b1, lit_b2, ls, le,
                   lid):  # fmt: skip
    """The added-token literals of an all-ASCII text, found as ``lit_mode`` says
    (``ascii_literal_mode``); their count, in ``ls``/``le``/``lid``.  With normalized
    literals (``has2``), the two passes of ``_find_literals``, each by the word scan: the
    raw literals over the whole text, then the normalized ones inside the gaps."""
    if lit_mode == NO_ASCII_LITERAL:
        return 0
    return _literals(u8, u8.size, lit_mode == ASCII_LITERAL_WORDS, lit_b1, lit_b2, f1, k1, c1, t1,
                     f2, k2, c2, t2, has2, ls, le, lid)  # fmt: skip


@numba.njit(cache=True, nogil=True)
def _split(u8, bits, fold, family, bt):
    """Piece ends of the pre-tokenizer alone over the whole text (no added-token extraction):
    the one the piece loop runs (``pretokenize_range``: the automaton where ``bt`` has one;
    an all-ASCII text's bit-parallel one where ``bt.ascii_pre`` says so, and deepseek's over
    decoded text, as ``encode_range``)."""
    nb = u8.size
    if bt.ascii_pre > 0 and nb >= _rules.ASCII_PRETOK_MIN and _all_ascii(u8):
        ends = np.empty(nb + 1, dtype=np.int64)
        scratch = np.empty(_ascii_pretok.scratch_words(nb), dtype=np.int64)
        m = _ascii_pretok.pretokenize_ascii(u8, 0, nb, fold, bt.ascii_pre, scratch, ends, 0)
        return ends[:m].copy()
    cps = np.empty(nb, dtype=np.uint32)
    char_start = np.empty(nb + 1, dtype=np.int64)
    fl = np.empty(nb, dtype=np.uint16)
    n = _prepare(u8, bits, cps, char_start, fl)
    ends = np.empty(n + 1, dtype=np.int64)
    if bt.ascii_pre >> 2 == _rules.ASCII_DEEPSEEK and n >= _rules.ASCII_PRETOK_MIN:
        scratch = np.empty(_ascii_pretok.scratch_words_cps(n), dtype=np.int64)
        m = _ascii_pretok.pretokenize_deepseek_cps(cps, fl, 0, n, scratch, ends, 0)
    else:
        m = pretokenize_range(cps, fl, fold, 0, n, family, bt, ends, 0)
    return ends[:m].copy()


@numba.njit(cache=True, nogil=True)
def _has_bit(fl, n, bit):
    return np.any(fl[:n] & bit)


_certified_cut = RULES.cut_ok  # the rule itself, shared with the GPU (a global for numba)


@numba.njit(cache=True, nogil=True)
def _cut_ok(p, n, cps, fl, class_of, stable, nfc, ls, le, nlit):
    """Is ``p`` a certified cut (``rules.cut_ok``)?  Literals are found in the sorted arrays."""
    k = np.searchsorted(ls[:nlit], p, side="right") - 1  # last literal starting <= p
    edge = k >= 0 and (ls[k] == p or le[k] == p)  # literal boundaries split the input too
    inside = k >= 0 and le[k] > p
    return _certified_cut(p, n, edge, inside, cps, fl, class_of, stable, nfc)


@numba.njit(cache=True, nogil=True)
def _crossed(cps, q0, p, m, first, tkeys, tchild, term, reach):
    """Does any literal of the trie that starts in ``[q0, p)`` end at or after ``reach``?"""
    for q in range(q0, p):
        if first[cps[q]] != 0:
            e, _t = literal_at(cps, q, m, first, tkeys, tchild, term)
            if e >= reach:
                return True
    return False


@numba.njit(cache=True, nogil=True)
def _byte_cut_near(u8, target, search, bits, class_of, stable, nfc, f1, k1, c1, t1, f2, k2, c2,
                   t2, has2, maxlit, isolated=False):  # fmt: skip
    """A byte offset at or after ``target`` (within ``search`` bytes) where the text may be
    cut and both sides encoded alone, found by decoding only a window around it; -1: none.

    The cut must satisfy ``rules.cut_ok`` (stable class pair, NFC-safe), and no added-token
    literal occurrence of either trie may cross it (checked at every start within the
    longest literal's length before it, so the whole text's leftmost-longest scan has a
    boundary there as well).  ``isolated``: no literal may end at the cut either (the
    longest match at each of those starts ends before it), so the text after the cut
    never follows a literal directly -- where SentencePiece would begin a segment, with
    its own "▁".
    """
    nb = u8.size
    b = target
    while 0 < b < nb and (u8[b] & 0xC0) == 0x80:
        b += 1
    lo = max(0, b - 4 * (maxlit + 2))
    while lo > 0 and (u8[lo] & 0xC0) == 0x80:
        lo -= 1
    hi = min(nb, b + search)
    while hi < nb and (u8[hi] & 0xC0) == 0x80:
        hi += 1
    w = hi - lo
    cps = np.empty(w, dtype=np.uint32)
    cs = np.empty(w + 1, dtype=np.int64)
    fl = np.empty(w, dtype=np.uint16)
    m = utf8_decode(u8[lo:hi], cps, cs)
    for i in range(m):
        fl[i] = bits[cps[i]]
    i0 = 0
    while i0 < m and cs[i0] + lo < b:
        i0 += 1
    # p must have maxlit characters before it in the window (unless the window starts the text)
    first_p = max(i0, 1 if lo == 0 else maxlit + 1)
    last_p = m if hi == nb else m - maxlit - 1  # a literal crossing p must fit in the window
    for p in range(first_p, last_p):
        if not _certified_cut(p, m + 1, False, False, cps, fl, class_of, stable, nfc):
            continue
        q0 = max(0, p - maxlit)
        reach = p if isolated else p + 1
        if _crossed(cps, q0, p, m, f1, k1, c1, t1, reach):
            continue
        if has2 and _crossed(cps, q0, p, m, f2, k2, c2, t2, reach):
            continue
        return lo + cs[p]
    return -1


ASCII_RUN_MIN = 1 << 14  # an ASCII stretch this long gets parts of its own (``ascii_part_bounds``)


_HIGH_BITS = np.uint64(0x8080808080808080)  # a word of 8 bytes holds a non-ASCII byte


@numba.njit(cache=True, nogil=True)
def _words(u8):
    """``u8``'s whole 8-byte words, read as uint64 (byte loops do not vectorize here: a
    word a step scans ASCII ~15x faster)."""
    return u8[: u8.size - (u8.size & 7)].view(np.uint64)


@numba.njit(cache=True, nogil=True)
def _first_non_ascii(u8, w, a):
    """The first offset ``>= a`` of a byte ``>= 0x80``, or ``u8.size`` (``w``: ``_words``)."""
    nb = u8.size
    while a < nb and (a & 7) != 0:
        if u8[a] >= 0x80:
            return a
        a += 1
    k = a >> 3
    nw = w.size
    while k + 4 <= nw and ((w[k] | w[k + 1] | w[k + 2] | w[k + 3]) & _HIGH_BITS) == 0:
        k += 4
    while k < nw and (w[k] & _HIGH_BITS) == 0:
        k += 1
    a = max(a, k << 3)
    while a < nb and u8[a] < 0x80:
        a += 1
    return a


@numba.njit(cache=True, nogil=True)
def _last_non_ascii(u8, w, s, t):
    """The last offset in ``[s, t)`` of a byte ``>= 0x80``, or -1 (``w``: ``_words``)."""
    while t > s and (t & 7) != 0:
        t -= 1
        if u8[t] >= 0x80:
            return t
    k = t >> 3
    k0 = (s + 7) >> 3
    while k > k0 and (w[k - 1] & _HIGH_BITS) == 0:
        k -= 1
    t = min(t, k << 3)
    while t > s:
        t -= 1
        if u8[t] >= 0x80:
            return t
    return -1


@numba.njit(cache=True, nogil=True)
def _ascii_part_bounds(u8, min_run, bits, class_of, stable, nfc, f1, k1, c1, t1, f2, k2, c2, t2,
                       has2, maxlit):  # fmt: skip
    """Byte offsets ``[0, ..., len]`` of certified cuts (``_byte_cut_near``) that give every
    ASCII stretch of ``min_run`` or more bytes a part of its own, all ASCII, so that
    ``_encode_text`` reads it without decoding; the rest (the stretches holding other
    characters) become the parts between.  ``[0, len]``: no such stretch.

    A stretch starting at ``s`` is long only if ``u8[s:s + min_run]`` is all ASCII, so
    that window is read from its end: a non-ASCII byte at ``x`` moves ``s`` past it at
    once (prose in other scripts costs a few words read every ~``min_run`` bytes), a
    clean window is extended forward to the stretch's end.  Two small cut searches per
    stretch; a stretch whose edges have no cut within ``CUT_FIRST_SEARCH`` bytes stays
    in its neighbours' parts."""
    nb = u8.size
    w = _words(u8)
    out = np.empty(2 * (nb // max(min_run, 1)) + 3, dtype=np.int64)
    out[0] = 0
    m = 1
    s = 0
    while nb - s >= min_run:
        last = _last_non_ascii(u8, w, s, s + min_run)
        if last >= 0:
            s = last + 1
            continue
        end = _first_non_ascii(u8, w, s + min_run)  # [s, end) is the ASCII stretch
        lo = s
        if s > 0:
            lo = _byte_cut_near(u8, s, CUT_FIRST_SEARCH, bits, class_of, stable, nfc, f1, k1,
                                c1, t1, f2, k2, c2, t2, has2, maxlit)  # fmt: skip
        hi = end
        if end < nb and lo >= 0:
            hi = _byte_cut_near(u8, end - CUT_FIRST_SEARCH, CUT_FIRST_SEARCH, bits, class_of,
                                stable, nfc, f1, k1, c1, t1, f2, k2, c2, t2, has2, maxlit)  # fmt: skip
        if lo >= 0 and lo < hi <= end:
            if lo > out[m - 1]:
                out[m] = lo
                m += 1
            if hi < nb:
                out[m] = hi
                m += 1
        s = end
    if out[m - 1] < nb:
        out[m] = nb
        m += 1
    return out[:m].copy()


def part_bounds(u8: np.ndarray, parts: int, cut_args: tuple, isolated: bool = False) -> list[int]:
    """Byte offsets ``[0, c1, ..., len]`` of cuts near ``parts`` equal sizes, each found by
    ``_byte_cut_near(u8, target, CUT_SEARCH, *cut_args, isolated)`` (both engines' parts),
    asked first within ``CUT_FIRST_SEARCH`` bytes: the rule at a position reads only
    the characters around it, so the first cut of the small window is the first of the
    large one, found without decoding 16 KiB per cut (0.28 ms per 1M-character call)."""
    nb = u8.size
    out = [0]
    for k in range(1, parts):
        target = max(nb * k // parts, out[-1] + 1)
        c = _byte_cut_near(u8, target, CUT_FIRST_SEARCH, *cut_args, isolated)
        if c < 0:
            c = _byte_cut_near(u8, target, CUT_SEARCH, *cut_args, isolated)
        if out[-1] < c < nb:
            out.append(int(c))
    out.append(nb)
    return out


def char_cut_near(text: str, c: int, search: int, cut_args: tuple) -> int:
    """``_byte_cut_near`` at character ``c`` of a str, from a window of it encoded alone: the
    character offset of the first certified cut within ``search`` bytes at or after ``c``,
    or -1.

    ``_byte_cut_near`` reads only the bytes ``[b - 4 * (maxlit + 2), b + search]`` around its
    target ``b`` (its ``lo`` and ``hi``) and asks whether they start and end the text.  The
    window taken here holds more than that on each side (a character is at least one byte),
    or reaches the text's edge where the text's own search would too, so the search sees the
    same bytes with the same edges and finds the same cut."""
    maxlit = cut_args[-1]
    a = max(0, c - 4 * (maxlit + 2) - 8)
    z = min(len(text), c + search + 8)
    wb = utf8_array(text[a:z])
    b = len(text[a:c].encode("utf-8"))
    off = _byte_cut_near(wb, b, search, *cut_args)
    if off < 0:
        return -1
    return a + int(np.count_nonzero((wb[:off] & 0xC0) != 0x80))


def char_part_bounds(text: str, parts: int, cut_args: tuple) -> list[int]:
    """Character offsets ``[0, c1, ..., len]`` of certified cuts near ``parts`` equal
    character counts: ``part_bounds`` on the str, each cut found by ``char_cut_near``, so the
    caller never makes the whole text's UTF-8 (each part makes its own on the thread that
    encodes it)."""
    n = len(text)
    out = [0]
    for k in range(1, parts):
        target = max(n * k // parts, out[-1] + 1)
        c = char_cut_near(text, target, CUT_FIRST_SEARCH, cut_args)
        if c < 0:
            c = char_cut_near(text, target, CUT_SEARCH, cut_args)
        if out[-1] < c < n:
            out.append(c)
    out.append(n)
    return out


@numba.njit(cache=True, nogil=True)
def _all_cuts(n, cps, fl, class_of, stable, nfc, ls, le, nlit):
    out = np.empty(n, dtype=np.int64)
    m = 0
    for p in range(1, n):
        if _cut_ok(p, n, cps, fl, class_of, stable, nfc, ls, le, nlit):
            out[m] = p
            m += 1
    return out[:m].copy()


@numba.njit(cache=True, nogil=True)
def _cut_after(t, limit, n, cps, fl, class_of, stable, nfc, ls, le, nlit):
    """First certified cut in ``[t, limit)``, or -1."""
    for p in range(max(t, 1), min(limit, n)):
        if _cut_ok(p, n, cps, fl, class_of, stable, nfc, ls, le, nlit):
            return p
    return -1


@numba.njit(cache=True, nogil=True)
def _nfc_stretches(n, fl):
    """The smallest stretches around every NFC-unsafe character that NFC treats on their own.

    A stretch ends where both neighbours are NFC-safe (``cut_ok``'s NFC condition) or at
    the text's ends.  A safe character stands unchanged, has combining class 0 and never
    composes backward, so nothing reorders or composes across such a point: NFC of the
    text is the join of NFC of the pieces between them, and runs of safe characters are
    unchanged.  So the text is NFC-stable iff every stretch is (``nfc_changes``).  Only
    a stretch that does change needs the certified cuts around it (rare), not each of
    the thousands of combining marks of Indic or Hangul text (a cut search per mark
    took 12 ms on 1M multilingual characters; this scan of the flags well under 1 ms).
    """
    ra = np.empty(n, dtype=np.int64)
    rb = np.empty(n, dtype=np.int64)
    m = 0
    q = 0
    while q < n:
        if not (fl[q] & NFC_UNSAFE):
            q += 1
            continue
        a = q
        while a > 0 and ((fl[a - 1] | fl[a]) & NFC_UNSAFE):
            a -= 1
        b = q + 1
        while b < n and ((fl[b - 1] | fl[b]) & NFC_UNSAFE):
            b += 1
        ra[m] = a
        rb[m] = b
        m += 1
        q = b
    return ra[:m].copy(), rb[:m].copy()


@numba.njit(cache=True, nogil=True)
def _char_count(u8):
    """Characters of the valid UTF-8 ``u8`` (its non-continuation bytes)."""
    n = 0
    for b in range(u8.size):
        n += (u8[b] & 0xC0) != 0x80
    return n


@numba.njit(cache=True, nogil=True)
def _join_stretches(cps, ra, rb):
    """The stretches ``cps[ra[k]:rb[k]]`` joined by a private-use code point none of them
    contains (returned; -1 when every one of U+E000..U+F8FF occurs in them)."""
    seen = np.zeros(0xF900 - 0xE000, dtype=np.bool_)
    total = 0
    for k in range(ra.size):
        total += rb[k] - ra[k] + 1
        for i in range(ra[k], rb[k]):
            c = cps[i]
            if 0xE000 <= c < 0xF900:
                seen[c - 0xE000] = True
    sep = -1
    for j in range(seen.size):
        if not seen[j]:
            sep = 0xE000 + j
            break
    out = np.empty(max(total - 1, 0), dtype=np.uint32)
    w = 0
    for k in range(ra.size):
        if k:
            out[w] = sep if sep >= 0 else 0
            w += 1
        for i in range(ra[k], rb[k]):
            out[w] = cps[i]
            w += 1
    return out, sep


def nfc_stretch_changes(normalize, cps: np.ndarray, fl: np.ndarray):
    """(starts, ends, changed) of the NFC stretches of ``cps`` and whether the reference's NFC
    changes each: what the segmented path needs, so a caller that has checked a text can
    hand its answer on instead of the engine normalizing the same stretches again.

    Stretches, their distinct contents and the join come from one compiled call
    (``_stretches_joined``; three before: 1.05x on NFC repair windows, whose time is mostly
    the normalizer's, ``results/runs/append-path/nfc-window-ab-2026-11-28.txt``)."""
    sa, sb, first, which, joined, sep = _stretches_joined(cps, fl)
    return sa, sb, _nfc_verdicts(normalize, cps, sa, sb, first, which, joined, sep)


@numba.njit(cache=True, nogil=True)
def _stretches_joined(cps, fl):
    """``nfc_stretch_changes``' compiled part: (starts, ends, first, which, joined, sep) --
    the NFC stretches (``_nfc_stretches``), their distinct contents
    (``_distinct_stretches``) and those joined (``_join_stretches``)."""
    sa, sb = _nfc_stretches(cps.size, fl)
    first, which = _distinct_stretches(cps, sa, sb)
    joined, sep = _join_stretches(cps, sa[first], sb[first])
    return sa, sb, first, which, joined, sep


def _utf32(a: np.ndarray) -> str:
    return a.astype("<u4", copy=False).tobytes().decode("utf-32-le")


@numba.njit(cache=True, nogil=True)
def _same_stretch(cps, a0, b0, a1, b1):
    if b0 - a0 != b1 - a1:
        return False
    for q in range(b0 - a0):  # noqa: SIM110 (numba compiles no generator)
        if cps[a0 + q] != cps[a1 + q]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _distinct_stretches(cps, ra, rb):
    """(first, which): ``first`` the index of each distinct stretch content's first
    occurrence, in order; ``which[k]`` the position in ``first`` of stretch k's content.
    Contents are compared code point by code point (the hash only picks the slot)."""
    m = ra.size
    cap = 16
    while cap < 2 * m:
        cap <<= 1
    slots = np.full(cap, -1, dtype=np.int64)
    first = np.empty(m, dtype=np.int64)
    which = np.empty(m, dtype=np.int64)
    nu = 0
    for k in range(m):
        h = rb[k] - ra[k]
        for i in range(ra[k], rb[k]):
            h = ((h ^ cps[i]) * 0x100000001B3) & 0x7FFFFFFFFFFFFFFF
        s = (h ^ (h >> 29)) & (cap - 1)
        while True:
            u = slots[s]
            if u < 0:
                slots[s] = k
                which[k] = nu
                first[nu] = k
                nu += 1
                break
            if _same_stretch(cps, ra[u], rb[u], ra[k], rb[k]):
                which[k] = which[u]
                break
            s = (s + 1) & (cap - 1)
    return first[:nu].copy(), which


def nfc_changes(normalize, cps: np.ndarray, ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
    """Whether the reference's NFC changes each stretch ``cps[ra[k]:rb[k]]`` (bool array), in
    one call.

    The stretches are joined by a private-use character absent from them and
    normalized once.  Such a character is a starter with no decomposition that no
    composition pair contains, so NFC never reorders, composes or decomposes across
    it: the normalized join is the join of the normalized stretches, and splitting
    it gives each one back (thousands of reference calls become one on
    multilingual text; the common answer, nothing changes, is one string compare).
    Each distinct stretch goes in once: the reference's normalizer takes ~150-180 ns a
    character (it tracks alignments), and a 1M-character slice of prose repeats its
    stretches -- the marks of a language's common words -- 5-13 times over
    (``results/runs/engine-ab/nfc-segmented.txt``).
    """
    first, which = _distinct_stretches(cps, ra, rb)
    joined, sep = _join_stretches(cps, ra[first], rb[first])
    return _nfc_verdicts(normalize, cps, ra, rb, first, which, joined, sep)


def _nfc_verdicts(normalize, cps, ra, rb, first, which, joined, sep) -> np.ndarray:
    """``nfc_changes`` from the distinct stretches (``first``, ``which``) and their join."""
    if ra.size == 0:
        return np.zeros(0, dtype=bool)
    changed = _nfc_changes_distinct(normalize, cps, ra[first], rb[first], joined, sep)
    return changed if first.size == ra.size else changed[which]


def _nfc_changes_distinct(normalize, cps: np.ndarray, ra: np.ndarray, rb: np.ndarray,
                          joined: np.ndarray, sep: int):  # fmt: skip
    """``nfc_changes`` of stretches whose contents differ, ``_join_stretches`` of them given."""
    m = len(ra)
    if m >= 2 and sep >= 0:
        s = _utf32(joined)
        normed = normalize(s)
        if normed == s:
            return np.zeros(m, dtype=bool)
        changed = _changed_stretches(joined, np.frombuffer(normed.encode("utf-32-le"), np.uint32),
                                     sep, m)  # fmt: skip
        if changed is not None:  # always, for NFC (see above)
            return changed
    # one stretch, or every private-use character occurs in them: one call per stretch
    pieces = [_utf32(cps[a:b]) for a, b in zip(ra.tolist(), rb.tolist(), strict=True)]
    return np.array([normalize(p) != p for p in pieces], dtype=bool)


@numba.njit(cache=True, nogil=True)
def _changed_stretch_flags(joined, normed, sep, m, out):
    """``out[k]``: does stretch k of ``normed`` (the stretches split at ``sep``) differ from
    stretch k of ``joined``?  False when ``normed`` has not exactly ``m`` stretches."""
    i = 0
    j = 0
    for k in range(m):
        a = i
        while i < joined.size and joined[i] != sep:
            i += 1
        b = j
        while j < normed.size and normed[j] != sep:
            j += 1
        last = k == m - 1  # the last stretch ends both texts; every other ends at a sep
        if (i == joined.size) != last or (j == normed.size) != last:
            return False  # fewer stretches than m (ran out early) or more (no end after m)
        diff = (i - a) != (j - b)
        q = 0
        while not diff and q < i - a:
            diff = joined[a + q] != normed[b + q]
            q += 1
        out[k] = diff
        i += 1
        j += 1
    return True


def _changed_stretches(joined: np.ndarray, normed: np.ndarray, sep: int, m: int):
    """Which of the ``m`` stretches ``nfc_changes`` joined did NFC change (bool array), found by
    one compiled walk over both texts' code points (splitting both strs and comparing the
    parts in Python cost ~3 ms per 1M characters of Indic-heavy prose); None when the
    normalized join does not hold ``m`` stretches."""
    out = np.zeros(m, dtype=bool)
    return out if _changed_stretch_flags(joined, normed, np.uint32(sep), m, out) else None


def span_separator(tok) -> tuple[str, int] | None:
    """(content, id) of an added token that splits the reference's input wherever it stands
    (special, matched on the raw text, stripping nothing), checked on a sample; None if the
    tokenizer has none.  The reference splits its input at added tokens before it normalizes
    and pre-tokenizes, so texts joined by this token encode as each would alone."""
    for t in tok.added_tokens:
        if not (t.special and t.content) or t.normalized or t.lstrip or t.rstrip or t.single_word:
            continue
        enc = tok.hf.encode("a" + t.content + "b", add_special_tokens=False)
        if enc.ids.count(t.id) == 1 and (1, 1 + len(t.content)) in enc.offsets:
            return t.content, t.id
    return None


# The reference's answers for span texts, per engine: a span runs from certified cut to
# certified cut, so its tokens depend on its own text alone, and the NFC-changed words of a
# language recur (Bengali with U+09DF: a few hundred distinct stretches per 26K characters).
REF_MEMO_ENTRIES = 1 << 14  # cleared when full
REF_MEMO_MAX_CHARS = 256  # longer spans are not kept


def reference_spans(hf, text: str, ra: np.ndarray, rb: np.ndarray, separator, memo=None):
    """The reference's tokens of each ``text[ra[k]:rb[k]]``, offsets in ``text``'s characters:
    (ids, starts, ends, counts), int64, span after span, ``counts[k]`` tokens for span k.

    ``memo`` (a dict, one per tokenizer): span text -> its (ids, starts, ends) relative to
    the span; only the spans it lacks go to the reference.

    One call for all of them, joined by ``separator`` (``span_separator``): a reference
    call costs ~8 us before its first character, and an NFC text has a dozen such spans
    per thousand characters.  The joined result is used only if every separator came
    back as its own token at its own place and every other token lies inside one span;
    otherwise (or without a separator) each span is its own call, as before.
    """
    ra = np.asarray(ra, dtype=np.int64)
    rb = np.asarray(rb, dtype=np.int64)
    if memo is not None:
        return _memo_spans(hf, text, ra, rb, separator, memo)
    if ra.size >= 2 and separator is not None:
        got = _joined_spans(hf, text, ra, rb, separator)
        if got is not None:
            return got
    ids, starts, ends = [_EMPTY], [_EMPTY], [_EMPTY]
    counts = np.zeros(ra.size, dtype=np.int64)
    for k, (a, b) in enumerate(zip(ra.tolist(), rb.tolist(), strict=True)):
        e_ids, offs = _encoding_arrays(hf.encode(text[a:b], add_special_tokens=False))
        ids.append(e_ids)
        starts.append(offs[0::2] + a)
        ends.append(offs[1::2] + a)
        counts[k] = e_ids.size
    return np.concatenate(ids), np.concatenate(starts), np.concatenate(ends), counts


_EMPTY = np.zeros(0, dtype=np.int64)


def _encoding_arrays(enc) -> tuple[np.ndarray, np.ndarray]:
    """(ids, offsets flattened as start, end, start, ...) of a reference ``Encoding``, int64.

    ``np.fromiter`` over the binding's lists: ``np.asarray`` of the offsets' list of tuples
    took ~2x as long (~0.3 us a token; an NFC window's reference call returns ~200)."""
    k = len(enc.ids)
    ids = np.fromiter(enc.ids, dtype=np.int64, count=k)
    offs = np.fromiter(itertools.chain.from_iterable(enc.offsets), dtype=np.int64, count=2 * k)
    return ids, offs


def _memo_spans(hf, text, ra, rb, separator, memo):
    keys = [text[a:b] for a, b in zip(ra.tolist(), rb.tolist(), strict=True)]
    got = [memo.get(k) for k in keys]
    miss = [i for i, g in enumerate(got) if g is None]
    if not miss:
        return _gather_entries(got, ra)
    if len(miss) == len(keys):  # nothing known (new text): the reference's answer as it is
        out = reference_spans(hf, text, ra, rb, separator)
        _remember(memo, keys, ra, out)
        return out
    mi = np.array(miss, dtype=np.int64)
    entries = _remember(memo, [keys[i] for i in miss], ra[mi],
                        reference_spans(hf, text, ra[mi], rb[mi], separator))  # fmt: skip
    for i, e in zip(miss, entries, strict=True):
        got[i] = e
    return _gather_entries(got, ra)


def _remember(memo: dict, keys: list, ra: np.ndarray, out) -> list:
    """Keep the spans of ``reference_spans``' answer ``out`` (for span texts ``keys``
    starting at ``ra``) in ``memo``, read-only and relative to their spans; returns them.

    The entries are views of three arrays made for them (one copy for all, not three per
    span), unless a span too long to keep shares them: then each entry is copied, so a
    kept entry never holds a long span's tokens in memory."""
    ids, starts, ends, counts = out
    shift = np.repeat(ra, counts)
    ids, rel_s, rel_e = ids.copy(), starts - shift, ends - shift
    at = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(counts, out=at[1:])
    at = at.tolist()
    views = all(len(k) <= REF_MEMO_MAX_CHARS for k in keys)
    if views:
        for arr in (ids, rel_s, rel_e):
            arr.setflags(write=False)
    if len(memo) + len(keys) > REF_MEMO_ENTRIES:
        memo.clear()
    entries = []
    for j, key in enumerate(keys):
        x, y = at[j], at[j + 1]
        entry = (ids[x:y], rel_s[x:y], rel_e[x:y])
        if not views:
            entry = tuple(a.copy() for a in entry)
            for a in entry:
                a.setflags(write=False)
        entries.append(entry)
        if len(key) <= REF_MEMO_MAX_CHARS:
            memo[key] = entry
    return entries


def _gather_entries(got: list, ra: np.ndarray):
    """``reference_spans``' answer from memo entries (relative to their spans at ``ra``)."""
    counts = np.array([g[0].size for g in got], dtype=np.int64)
    shift = np.repeat(ra, counts)
    return (np.concatenate([g[0] for g in got] or [_EMPTY]),
            np.concatenate([g[1] for g in got] or [_EMPTY]) + shift,
            np.concatenate([g[2] for g in got] or [_EMPTY]) + shift, counts)  # fmt: skip


def _joined_spans(hf, text, ra, rb, separator):
    content, sep_id = separator
    enc = hf.encode(
        content.join([text[a:b] for a, b in zip(ra.tolist(), rb.tolist(), strict=True)]),
        add_special_tokens=False,
    )
    ids, offs = _encoding_arrays(enc)
    ok, out_ids, starts, ends, counts = _split_joined(ids, offs, ra, rb, len(content), sep_id)
    return (out_ids, starts, ends, counts) if ok else None


@numba.njit(cache=True, nogil=True)
def _split_joined(ids, offs, ra, rb, width, sep_id):
    """The tokens of a joined reference call (``_joined_spans``: the spans ``[ra[k], rb[k])``
    joined by a separator of ``width`` characters) back per span, offsets in the text's
    characters: (ok, ids, starts, ends, counts).  ``ok`` is False unless every separator
    came back as one token ``sep_id`` exactly at its place and every other token lies
    inside one span (its start and end within the span's part of the joined text)."""
    m = ra.size
    k = ids.size
    out_ids = np.empty(k, dtype=np.int64)
    out_s = np.empty(k, dtype=np.int64)
    out_e = np.empty(k, dtype=np.int64)
    counts = np.zeros(m, dtype=np.int64)
    t = 0  # next token of the joined call
    w = 0  # next output slot
    q = 0  # span p's start in the joined text
    for p in range(m):
        end = q + rb[p] - ra[p]  # span p's end in the joined text (its separator's start)
        shift = ra[p] - q
        w0 = w
        while t < k and (p == m - 1 or offs[2 * t] < end):
            s = offs[2 * t]
            e = offs[2 * t + 1]
            if s < q or e > end:
                return False, out_ids[:0], out_s[:0], out_e[:0], counts
            out_ids[w] = ids[t]
            out_s[w] = s + shift
            out_e[w] = e + shift
            w += 1
            t += 1
        counts[p] = w - w0
        if p < m - 1:
            if t >= k or ids[t] != sep_id or offs[2 * t] != end or offs[2 * t + 1] != end + width:
                return False, out_ids[:0], out_s[:0], out_e[:0], counts
            t += 1
        q = end + width
    return True, out_ids[:w], out_s[:w], out_e[:w], counts


@numba.njit(cache=True, nogil=True)
def _reference_stretches(sa, sb, changed, coalesce, n, cps, fl, class_of, stable, nfc, ls, le,
                         nlit):  # fmt: skip
    """The stretches ``[sa[k], sb[k])`` that NFC changes, each widened to the certified cuts
    around it, joined where they overlap or lie closer than ``coalesce``: (starts, ends)."""
    ra = np.empty(sa.size, dtype=np.int64)
    rb = np.empty(sa.size, dtype=np.int64)
    m = 0
    for k in range(sa.size):
        if not changed[k]:
            continue
        a = _cut_before(sa[k], n, cps, fl, class_of, stable, nfc, ls, le, nlit)
        b = _cut_after(sb[k], n + 1, n, cps, fl, class_of, stable, nfc, ls, le, nlit)
        if b < 0:
            b = n
        if m > 0 and a <= rb[m - 1] + coalesce:
            rb[m - 1] = max(b, rb[m - 1])
        else:
            ra[m] = a
            rb[m] = b
            m += 1
    return ra[:m].copy(), rb[:m].copy()


@numba.njit(cache=True, nogil=True)
def _cut_before(t, n, cps, fl, class_of, stable, nfc, ls, le, nlit):
    """Last certified cut at or before ``t`` (0 if none)."""
    p = t
    while p > 0:
        if _cut_ok(p, n, cps, fl, class_of, stable, nfc, ls, le, nlit):
            return p
        p -= 1
    return 0


@numba.njit(cache=True, nogil=True)
def _encode_chunk(c0, c1, n0, cps, fl, fold, family, u8, char_start, ls, le, lid, nlit, bt, cache,
                  lcache, ends, sym, rank, nxt, prv, heap, out_ids, out_s, out_e, spans, ring,
                  byte_offsets=False):  # fmt: skip
    """Encode characters ``[c0, c1)`` into the output slots from ``n0``; returns the count.
    ``byte_offsets``: an all-ASCII text (``rules.encode_range``)."""
    lit0 = np.searchsorted(ls[:nlit], c0)
    n = encode_range(c0, c1, cps, fl, fold, family, u8, char_start, ls, le, lid, lit0, nlit, bt,
                     ends, sym, rank, nxt, prv, heap, cache, lcache, out_ids, out_s, out_e,
                     n0, spans, ring, byte_offsets)  # fmt: skip
    return n - n0


@numba.njit(cache=True, nogil=True)
def _range_buffers(nchars, nbytes):
    """``encode_range``'s workspaces for a range of up to ``nchars`` characters / ``nbytes``
    bytes: (ends, sym, rank, nxt, prv, heap, ring)."""
    return (np.empty(nchars + 1, dtype=np.int64), np.empty(nbytes + 1, dtype=np.int64),
            np.empty(nbytes + 1, dtype=np.int64), np.empty(nbytes + 1, dtype=np.int64),
            np.empty(nbytes + 1, dtype=np.int64), np.empty(3 * nbytes + 3, dtype=np.int64),
            np.empty(RING_WORDS, dtype=np.int64))  # fmt: skip


@numba.njit(cache=True, nogil=True)
def _encode_one(k, lo, hi, base, cps, fl, fold, family, u8, char_start, ls, le, lid, nlit, bt,
                cache, lcache, out_ids, out_s, out_e, counts, spans):  # fmt: skip
    """Encode range k into the output slots starting at ``base[k]``; store its count (token
    spans too unless ``spans`` is False)."""
    c0 = lo[k]
    c1 = hi[k]
    ends, sym, rank, nxt, prv, heap, ring = _range_buffers(c1 - c0,
                                                           char_start[c1] - char_start[c0])
    counts[k] = _encode_chunk(c0, c1, base[k], cps, fl, fold, family, u8, char_start, ls, le, lid,
                              nlit, bt, cache, lcache, ends, sym, rank, nxt, prv, heap, out_ids,
                              out_s, out_e, spans, ring)  # fmt: skip


@numba.njit(cache=True, nogil=True)
def _encode_ranges_serial(lo, hi, base, cps, fl, fold, family, u8, char_start, ls, le, lid, nlit,
                          bt, cache, lcache, out_ids, out_s, out_e, counts, spans):  # fmt: skip
    """The ranges one after another through one set of buffers sized for the largest (an
    NFC-changed window has dozens of short ranges between its reference stretches)."""
    mc = 0
    mb = 0
    for k in range(lo.size):
        mc = max(mc, hi[k] - lo[k])
        mb = max(mb, char_start[hi[k]] - char_start[lo[k]])
    ends, sym, rank, nxt, prv, heap, ring = _range_buffers(mc, mb)
    for k in range(lo.size):
        counts[k] = _encode_chunk(lo[k], hi[k], base[k], cps, fl, fold, family, u8, char_start, ls,
                                  le, lid, nlit, bt, cache, lcache, ends, sym, rank, nxt, prv,
                                  heap, out_ids, out_s, out_e, spans, ring)  # fmt: skip


@numba.njit(cache=True, nogil=True, parallel=True)
def _encode_ranges_parallel(lo, hi, base, cps, fl, fold, family, u8, char_start, ls, le, lid,
                            nlit, bt, cache, lcache, out_ids, out_s, out_e, counts, spans):  # fmt: skip
    for k in numba.prange(lo.size):  # every thread reads and writes the one shared cache pair
        _encode_one(k, lo, hi, base, cps, fl, fold, family, u8, char_start, ls, le, lid, nlit, bt,
                    cache, lcache, out_ids, out_s, out_e, counts, spans)  # fmt: skip


@numba.njit(cache=True, nogil=True)
def _interleave(base, counts, gap, r_ids, r_s, r_e, r_counts, out_ids, out_s, out_e, ids, starts,
                ends, spans):  # fmt: skip
    """The segmented path's result in text order: gap k's engine ranges (``gap`` says which
    gap each range fills, nondecreasing), then reference span k, for every k (the IDs
    alone when ``spans`` is False)."""
    w = 0
    c = 0
    r = 0
    for k in range(r_counts.size + 1):
        while c < base.size and gap[c] == k:
            a = base[c]
            for t in range(counts[c]):
                ids[w] = out_ids[a + t]
                if spans:
                    starts[w] = out_s[a + t]
                    ends[w] = out_e[a + t]
                w += 1
            c += 1
        if k < r_counts.size:
            for _ in range(r_counts[k]):
                ids[w] = r_ids[r]
                if spans:
                    starts[w] = r_s[r]
                    ends[w] = r_e[r]
                w += 1
                r += 1
    return w


@numba.njit(cache=True, nogil=True, parallel=True)
def _gather(base, counts, offs, out_ids, out_s, out_e, ids, starts, ends, spans):
    for k in numba.prange(base.size):
        a = base[k]
        b = offs[k]
        for t in range(counts[k]):
            ids[b + t] = out_ids[a + t]
            if spans:
                starts[b + t] = out_s[a + t]
                ends[b + t] = out_e[a + t]


class Workspace(NamedTuple):
    """A thread's reusable buffers for texts of up to ``cps.size`` UTF-8 bytes.

    Why: the single-thread path needs about a dozen text-sized arrays; allocating
    them per call costs page faults, page clearing and unmapping on every call
    (about 40% of a 1M-character encode on this machine).  Pages never touched
    (most of ``sym``..``heap`` and the literal arrays) cost no memory.
    """

    cps: np.ndarray  # uint32[cap]
    char_start: np.ndarray  # int64[cap + 1]
    fl: np.ndarray  # uint16[cap]
    ls: np.ndarray  # int64[cap]: literal starts, ends, ids
    le: np.ndarray
    lid: np.ndarray
    ends: np.ndarray  # int64[cap + 1]: piece ends of one pre-tokenizer input
    sym: np.ndarray  # int64[cap + 1]: BPE scratch (``rules.bpe_merge``)
    rank: np.ndarray
    nxt: np.ndarray
    prv: np.ndarray
    heap: np.ndarray  # int64[3 cap + 3]
    out_ids: np.ndarray  # int64[cap]: tokens before the caller's copy
    out_s: np.ndarray
    out_e: np.ndarray
    ring: np.ndarray  # int64[RING_WORDS]: keys of the pieces ahead (``rules.encode_range``)
    # int64[cap + 1]: 0, 1, 2, ... -- an ASCII text's character offsets (``_ascii_offsets``),
    # written up to ``ident_n[0]`` only, and by nothing else
    ident: np.ndarray
    ident_n: np.ndarray  # int64[1]


def new_workspace(cap: int) -> Workspace:
    e = np.empty
    return Workspace(
        e(cap, np.uint32), e(cap + 1, np.int64), e(cap, np.uint16), e(cap, np.int64),
        e(cap, np.int64), e(cap, np.int64), e(cap + 1, np.int64), e(cap + 1, np.int64),
        e(cap + 1, np.int64), e(cap + 1, np.int64), e(cap + 1, np.int64), e(3 * cap + 3, np.int64),
        e(cap, np.int64), e(cap, np.int64), e(cap, np.int64), e(RING_WORDS, np.int64),
        e(cap + 1, np.int64), np.zeros(1, np.int64),
    )  # fmt: skip


WORKSPACE_MAX_BYTES = 1 << 22  # texts up to 4 MiB reuse a thread's workspace (~25 B RSS per byte)


class PartsPool:
    """The threads that encode a parallel call's parts (the caller's thread encodes the
    first one), shared by the engines: grown on demand, remade in a forked child (which
    inherits the executor but not its threads)."""

    def __init__(self, prefix: str):
        self._prefix = prefix
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pid = os.getpid()

    def get(self, workers: int) -> ThreadPoolExecutor:
        with self._lock:
            ex = self._pool
            if ex is None or ex._max_workers < workers or self._pid != os.getpid():
                if ex is not None and self._pid == os.getpid():
                    ex.shutdown(wait=False)
                ex = self._pool = ThreadPoolExecutor(
                    max_workers=workers, thread_name_prefix=self._prefix
                )
                self._pid = os.getpid()
            return ex


CHUNKS_PER_THREAD = 4  # a parallel call's chunks per thread, each taken by the next free thread
MIN_CHUNK_BYTES = 1 << 15  # ... but no chunk below this (the per-chunk call costs ~20 us)


def chunk_count(nbytes: int, threads: int) -> int:
    """How many chunks a parallel call of ``nbytes`` cuts for ``threads`` threads."""
    return max(threads, min(threads * CHUNKS_PER_THREAD, nbytes // MIN_CHUNK_BYTES))


def run_chunks(parts: PartsPool, jobs: list, threads: int, encode_one) -> list:
    """``[encode_one(job) for job in jobs]``, on up to ``threads`` threads (the caller's one
    of them), each taking the next job as soon as it is free.

    Why not one run of consecutive chunks per thread: equal sizes are not equal work
    (pieces met for the first time cluster).  On a 1M-character code slice the second
    half took 8.0 ms and the first 5.5 ms, so two fixed halves waited for the slower.
    """
    results = [None] * len(jobs)
    ticket = itertools.count()  # next() on it is atomic under the GIL

    def work():
        while (i := next(ticket)) < len(jobs):
            results[i] = encode_one(jobs[i])

    helpers = min(threads, len(jobs)) - 1
    futures = []
    if helpers > 0:
        pool = parts.get(helpers)
        futures = [pool.submit(work) for _ in range(helpers)]
    try:
        work()
    finally:
        wait(futures)
    for f in futures:
        f.result()  # a helper's exception, if any
    return results


def _join_parts(results, spans: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One (ids, starts, ends) from consecutive parts' (ids, starts, ends, ...), each part's
    spans counted from its own first character (``spans`` False: the ids alone, the
    spans empty)."""
    if not spans:
        return np.concatenate([r[0] for r in results]), np.zeros(0, np.int64), np.zeros(0, np.int64)
    total = sum(r[0].size for r in results)
    ids = np.empty(total, dtype=np.uint32)
    starts = np.empty(total, dtype=np.int64)
    ends = np.empty(total, dtype=np.int64)
    pos = chars = 0
    for r in results:
        r_ids, r_s, r_e = r[0], r[1], r[2]
        k = r_ids.size
        ids[pos : pos + k] = r_ids
        np.add(r_s, chars, out=starts[pos : pos + k])
        np.add(r_e, chars, out=ends[pos : pos + k])
        pos += k
        chars += int(r_e[-1]) if k else 0  # a part's tokens cover all its characters
    return ids, starts, ends


def thread_workspace(local, nb: int, budget: int, make=new_workspace) -> Workspace:
    """The calling thread's workspace (``local.workspace``) when ``nb`` bytes fit ``budget``;
    beyond it, a one-call workspace (freed with the call).

    The thread's workspace is made at the full budget on first use, never grown: its
    arrays are uninitialized, so a page costs memory only once a request touches it,
    and a later, larger request touches more pages of the same arrays instead of
    allocating new ones (growing them geometrically made each new size pay for fresh,
    untouched pages again: 48 vs 18 ms for a first 1M-character request in
    ``bench-engine-targets``; a page's first touch costs microseconds on this VM).
    """
    if nb > budget:
        return make(nb)
    wk = getattr(local, "workspace", None)
    if wk is None or wk.cps.size < nb:
        wk = local.workspace = make(budget)
    return wk


@numba.njit(cache=True, nogil=True)
def _all_ascii(u8):
    """Whether every byte is below 0x80 (stops at the first word holding one that is not)."""
    return _first_non_ascii(u8, _words(u8), 0) == u8.size


@numba.njit(cache=True, nogil=True)
def _ascii_offsets(wk, n):
    """``wk.ident[:n + 1]`` = 0..n: an ASCII text's byte offset of every character.  Only
    this writes ``ident``, so what ``ident_n`` says was written stays written."""
    done = wk.ident_n[0]
    if done <= n:
        for i in range(done, n + 1):
            wk.ident[i] = i
        wk.ident_n[0] = n + 1
    return wk.ident


@numba.njit(cache=True, nogil=True)
def _encode_text(u8, bits, fold, family, nfc, f1, k1, c1, t1, f2, k2, c2, t2, has2, bt, cache,
                 lcache, wk, spans, ascii_direct, lit_mode, lit_b1, lit_b2):  # fmt: skip
    """The whole single-thread path in one compiled call (the repair-window fast path).

    ``wk``: a ``Workspace`` of at least ``u8.size`` bytes.  Returns (ids, starts,
    ends, ok), fresh arrays (starts and ends empty when ``spans`` is False); ``ok`` is False when an NFC tokenizer (``nfc``) meets a
    character that is not NFC-safe: ``wk.cps`` and ``wk.fl`` then hold the decoded
    text and its flags, for the caller's NFC check (``CpuEngine._encode_u8``).

    ``ascii_direct`` (``ascii_reads_bytes``): an all-ASCII text is read as it stands --
    its bytes are its code points and its character offsets 0, 1, 2, ... -- instead of
    being decoded into ``wk.cps`` / ``char_start`` / ``fl`` (14 bytes stored per
    character).  ASCII is NFC-stable, so such a text is always ``ok``.  Its literals:
    ``lit_mode`` and the bytes ``lit_b1``, ``lit_b2`` (``ascii_literal_mode``).
    """
    if ascii_direct and _all_ascii(u8):
        n = u8.size
        offsets = _ascii_offsets(wk, n)
        nlit = ascii_literals(u8, f1, k1, c1, t1, f2, k2, c2, t2, has2, lit_mode, lit_b1, lit_b2,
                              wk.ls, wk.le, wk.lid)  # fmt: skip
        m = _encode_chunk(0, n, 0, u8, wk.fl, fold, family, u8, offsets, wk.ls, wk.le, wk.lid,
                          nlit, bt, cache, lcache, wk.ends, wk.sym, wk.rank, wk.nxt, wk.prv,
                          wk.heap, wk.out_ids, wk.out_s, wk.out_e, spans, wk.ring, True)  # fmt: skip
        return _kernel_result(wk, m, spans)
    cps = wk.cps
    char_start = wk.char_start
    fl = wk.fl
    n = _prepare(u8, bits, cps, char_start, fl)
    if nfc and _has_bit(fl, n, NFC_UNSAFE):
        return np.empty(0, dtype=np.uint32), wk.out_s[:0].copy(), wk.out_e[:0].copy(), False
    nlit = _find_literals(cps, n, f1, k1, c1, t1, f2, k2, c2, t2, has2, wk.ls, wk.le, wk.lid)
    m = _encode_chunk(0, n, 0, cps, fl, fold, family, u8, char_start, wk.ls, wk.le, wk.lid, nlit,
                      bt, cache, lcache, wk.ends, wk.sym, wk.rank, wk.nxt, wk.prv, wk.heap,
                      wk.out_ids, wk.out_s, wk.out_e, spans, wk.ring)  # fmt: skip
    return _kernel_result(wk, m, spans)


@numba.njit(cache=True, nogil=True)
def _kernel_result(wk, m, spans):
    """``_encode_text``'s answer: its first ``m`` tokens, copied out of the workspace."""
    if not spans:
        return wk.out_ids[:m].astype(np.uint32), wk.out_s[:0].copy(), wk.out_e[:0].copy(), True
    return wk.out_ids[:m].astype(np.uint32), wk.out_s[:m].copy(), wk.out_e[:m].copy(), True


def ascii_reads_bytes(bt: BpeTables) -> bool:
    """Whether the piece loop may read an all-ASCII text's bytes as its code points,
    with no class bits (``_encode_text``'s ``ascii_direct``).

    The bits (``fl``) are read only by the family's matcher: where the pre-tokenizer is
    an automaton and no state hands an ASCII character to the matcher (``DEFER``), an
    ASCII text never reaches it.  Asked of the tables themselves, not assumed.
    """
    if bt.pre_table.size <= 1:  # the matcher reads class bits, unless deepseek's ASCII
        # pre-tokenizer takes every all-ASCII range (``rules.encode_range``)
        return bt.ascii_pre >> 2 == _ascii_pretok.DEEPSEEK
    rows = bt.pre_table.reshape(-1, pretok_dfa.COLS)
    ascii_cols = np.unique(bt.pre_classes[:128])
    return not bool((rows[:, ascii_cols] & pretok_dfa.DEFER).any())


def build_short_map(bt: BpeTables) -> np.ndarray:
    """The read-only short-piece map: every vocabulary entry of 2..16 bytes whose own
    encoding (``bpe_merge``, this engine's merges) is that single token.

    A memo of the merge function on those inputs, keyed by the exact bytes, so a
    lookup returns exactly what the merges would; most pieces of real text are such
    entries, and one probe replaces the merges and the piece cache.
    """
    ids = np.flatnonzero((bt.nbytes >= 2) & (bt.nbytes <= _rules.CACHE_MAX_BYTES))
    cap = 16
    while cap < 2 * len(ids) + 1:
        cap <<= 1
    smap = _aligned_zeros((cap, _rules.SHORT_COLS))
    _fill_short_map(ids, bt, smap)
    return smap


@numba.njit(cache=True, nogil=True)
def byte_pair_codes(bt):
    """``rules.pair_code`` of every pair of single-byte tokens, at index ``a << 8 | b``."""
    out = np.empty(65536, dtype=np.int64)
    for a in range(256):
        for b in range(256):
            out[(a << 8) | b] = pair_code(bt, bt.byte_ids[a], bt.byte_ids[b])
    return out


_HUGE = 2 << 20  # a transparent huge page (x86-64 Linux)


def _huge_buffer(nbytes: int) -> np.ndarray | None:
    """``nbytes`` of zeroed, 2 MiB-aligned memory advised for transparent huge pages, or None.

    The piece caches and lookup tables are read at random: with 4 KiB pages nearly every
    lookup of a multi-megabyte table also misses the TLB.  Where the OS offers no huge
    pages the advice is ignored (or None is returned) and nothing else changes.
    """
    if nbytes < _HUGE or not hasattr(mmap, "MADV_HUGEPAGE"):
        return None
    size = -(-nbytes // _HUGE) * _HUGE
    try:
        buf = mmap.mmap(-1, size + _HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        raw = np.frombuffer(buf, dtype=np.uint8)
        off = (-raw.ctypes.data) % _HUGE
        buf.madvise(mmap.MADV_HUGEPAGE, off, size)
    except (OSError, ValueError):
        return None
    return raw[off : off + nbytes]


def _aligned_zeros(shape, align: int = 64) -> np.ndarray:
    """Zeroed int64 array whose rows start on cache-line boundaries (rows of 32/64 bytes)."""
    n = int(np.prod(shape))
    huge = _huge_buffer(n * 8)
    if huge is not None:
        out = huge.view(np.int64).reshape(shape)
        out.fill(0)  # written now: the pages are mapped here, not on a request's first touch
        return out
    raw = np.empty(n + align // 8, dtype=np.int64)
    raw.fill(0)
    off = (-raw.ctypes.data % align) // 8
    return raw[off : off + n].reshape(shape)


def _huge_copy(a: np.ndarray) -> np.ndarray:
    """``a`` copied into huge-page memory when it is large enough to gain from it."""
    huge = _huge_buffer(a.nbytes)
    if huge is None:
        return a
    out = huge.view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


@numba.njit(cache=True, nogil=True)
def _fill_short_map(ids, bt, smap):
    sym = np.empty(_rules.CACHE_MAX_BYTES + 1, dtype=np.int64)
    rank = np.empty(_rules.CACHE_MAX_BYTES + 1, dtype=np.int64)
    nxt = np.empty(_rules.CACHE_MAX_BYTES + 1, dtype=np.int64)
    prv = np.empty(_rules.CACHE_MAX_BYTES + 1, dtype=np.int64)
    heap = np.empty(3 * _rules.CACHE_MAX_BYTES + 3, dtype=np.int64)
    out = np.empty(_rules.CACHE_MAX_BYTES + 1, dtype=np.int64)
    mask = smap.shape[0] - 1
    pool = bt.pool
    for t in ids:
        a = bt.pool_off[t]
        b = bt.pool_off[t + 1]
        m = bpe_merge(pool, a, b, bt, sym, rank, nxt, prv, heap, out, 0)
        if m != 1 or out[0] != t:
            continue  # its own bytes do not encode to it alone: leave it to the merges
        lw, w0, w1 = piece_words(pool, a, b)
        s = piece_hash(lw, w0, w1) & mask
        while smap[s, 0] != 0:
            s = (s + 1) & mask
        smap[s, 1] = w0
        smap[s, 2] = w1
        smap[s, 3] = t
        smap[s, 0] = lw


class _Prepared(NamedTuple):
    n: int
    cps: np.ndarray
    char_start: np.ndarray
    fl: np.ndarray
    ls: np.ndarray
    le: np.ndarray
    lid: np.ndarray
    nlit: int
    cut_args: tuple


class CpuEngine:
    """toktier's exact CPU engine for one tokenizer (byte-level BPE families)."""

    name = "numba-cpu"

    def __init__(self, tok, *, threads: int | None = None,
                 workspace_bytes: int = WORKSPACE_MAX_BYTES):  # fmt: skip
        self.tokenizer = tok
        self.workspace_bytes = workspace_bytes
        self.tables = EngineTables.build(tok)
        self._class_of = stability.class_map_for(tok)
        self._stable = np.ascontiguousarray(stability.cut_matrix(tok.family))
        self.threads = threads or numba.config.NUMBA_NUM_THREADS
        t = self.tables
        self._trie_args = (
            t.literals.first, t.literals.keys, t.literals.child, t.literals.term,
            t.normalized_literals.first, t.normalized_literals.keys,
            t.normalized_literals.child, t.normalized_literals.term,
            t.normalized_literals.size > 0,
        )  # fmt: skip
        bt = BpeTables(t.byte_ids, t.merge_table, t.merged, t.pair_filter,
                       np.zeros(65536, np.int64), t.vocab_keys, t.vocab_ids, t.pool, t.pool_off,
                       t.ignore_merges, t.token_nbytes,
                       np.zeros((1, _rules.SHORT_COLS), np.int64),
                       *pretok_dfa.build(t.family_code, t.bits, t.fold), *_rules.premerge_off(),
                       t.direct_merged)  # fmt: skip
        bt = bt._replace(byte_pairs=byte_pair_codes(bt))
        pm_index, pm_rows = build_premerge(t.merge_table, t.byte_ids, bt.byte_pairs, t.merged,
                                           t.direct_merged, t.pool, t.pool_off)  # fmt: skip
        bt = bt._replace(pm_index=pm_index, pm_rows=pm_rows,
                         ascii_pre=_ascii_pretok.ascii_mode(t.family_code, t.bits))  # fmt: skip
        self.short_map = _huge_copy(build_short_map(bt))  # built by the merges themselves
        # The tables read at random on every piece go to huge pages (fewer TLB misses).
        self.bpe = bt._replace(smap=self.short_map, merges=_huge_copy(bt.merges),
                               vkeys=_huge_copy(bt.vkeys), vids=_huge_copy(bt.vids))  # fmt: skip
        self._ascii_literals = ascii_literal_mode(
            t.literals.first, t.normalized_literals.first if t.normalized_literals.size else None
        )
        self.compile_seconds: float | None = None
        self._encode_kernel = _jit.BoundKernel(_encode_text)  # no per-call argument typing
        self._ranges_serial = _jit.BoundKernel(_encode_ranges_serial)
        self._ranges_parallel = _jit.BoundKernel(_encode_ranges_parallel)
        self._reference_stretches = _jit.BoundKernel(_reference_stretches)
        self._local = threading.local()
        # One pair of piece caches for every thread (rows are seqlocks: ``rules``).
        self._caches = (
            _aligned_zeros((CACHE_SLOTS, CACHE_COLS)),
            _aligned_zeros((LONG_SLOTS, LONG_COLS)),
        )
        self._parts = PartsPool("toktier-cpu")
        self._max_literal = max((len(x.content) for x in tok.added_tokens if x.content), default=0)
        # The file's added tokens must match as the engine matches them, or the tokenizer
        # stays on the reference (issue #13): asked of the reference, not of the file.
        self._span_separator = span_separator(tok) if self.tables.nfc else None
        self._reference_memo: dict = {}  # reference_spans' memo of span texts
        self.literal_probes = check_literals(tok, lambda text: self.encode(text)[0])

    @property
    def bpe(self) -> BpeTables:
        return self._bpe

    @bpe.setter
    def bpe(self, bt: BpeTables) -> None:
        """New tables; whether an all-ASCII text is read as its bytes follows them, so the
        two never disagree (deepseek's byte path needs its ASCII pre-tokenizer on)."""
        self._bpe = bt
        self._ascii_direct = ascii_reads_bytes(bt)

    def _workspace(self, nb: int) -> Workspace:
        return thread_workspace(self._local, nb, self.workspace_bytes)

    def _cache(self) -> tuple[np.ndarray, np.ndarray]:
        """The engine's (short, long) piece caches, kept across calls (``rules`` layout).

        Shared by every thread that encodes, the parts of a parallel call included: what
        one thread merged, every thread finds (per-thread caches doubled the footprint
        on two cores, 42 MB against a 32 MB L3, and each thread re-learned the other's
        pieces).  Race-free: every row is a seqlock (``rules.row_take``), so a row is
        used only when no write overlapped its read, and its check word must hold too.
        """
        return self._caches

    def clear_piece_caches(self) -> None:
        """Forget every remembered piece: the next encode merges each piece again (the
        empty-cache measurement; not while another thread encodes)."""
        for table in self._caches:
            table.fill(0)  # zero rows fail their check word: every lookup misses

    @property
    def cache_bytes(self) -> int:
        """Bytes of the piece caches plus the short-piece map: a fixed budget of
        CACHE_SLOTS x 64 B + LONG_SLOTS x 320 B (54.5 MB) per engine, however many
        threads encode."""
        return self.short_map.nbytes + sum(t.nbytes for t in self._caches)

    def __repr__(self) -> str:
        return f"CpuEngine({self.tokenizer.name!r}, family={self.tables.family!r})"

    # --- compile ------------------------------------------------------------------------
    def warmup(self) -> float:
        """Compile (or load from the on-disk cache) every kernel; returns the seconds taken."""
        t0 = time.perf_counter()
        sample = "Hello, world! It's 2026 — 123456789 spaces   \n\n\tx\r\n" * 3
        self.encode(sample)
        self.encode_parallel(sample * 8, threads=2, min_chars=0)
        # The paths only long non-ASCII text takes: the compiled UTF-8 pass (from
        # COMPILED_MIN_CHARS), the ASCII-stretch parts (an ASCII run of ASCII_RUN_MIN bytes
        # beside other characters) and both kinds of ``encode_parallel`` cuts; left cold,
        # a real request's first call compiled them (0.5-2 s on a fresh machine).
        ascii_run = ("def f(x):\n    return x + 1  # ok\n" * 600)[: ASCII_RUN_MIN + 512]
        mixed = ascii_run + "Grüße, мир — 中文 ok\n" * 900
        self.encode(mixed)
        for spans in (True, False):  # str parts (non-ASCII) and byte parts (ASCII)
            self.encode_parallel(mixed, threads=2, min_chars=0, spans=spans)
            self.encode_parallel(ascii_run, threads=2, min_chars=0, spans=spans)
        if self.tables.nfc:  # the segmented path: NFC stretches, some of which NFC changes,
            # apart (two reference spans: one joined reference call, split by ``_split_joined``)
            self.encode(sample + "Cafe\u0301 \u0915\u094d\u0937 " + sample + " \u1100\u1161 "
                        + sample)  # fmt: skip
        self.compile_seconds = time.perf_counter() - t0
        return self.compile_seconds

    # --- split level ----------------------------------------------------------------------
    def split(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Piece (start, end) character offsets of the pre-tokenizer on ``text`` as one input.

        The counterpart of the reference ``pre_tokenizer.pre_tokenize_str`` (no
        normalization, no added-token extraction): the split-level certificate.
        """
        u8 = utf8_array(text)
        t = self.tables
        ends = _split(u8, t.bits, t.fold, t.family_code, self.bpe)
        starts = np.zeros_like(ends)
        starts[1:] = ends[:-1]
        return starts, ends

    def certified_cuts(self, text: str) -> np.ndarray:
        """Every position where ``encode_parallel`` may cut ``text`` (for certification)."""
        p = self.prepare(utf8_array(text))
        return _all_cuts(*p.cut_args)

    def ascii_part_bounds(self, text: str) -> list[int]:
        """Byte offsets where the one-thread path cuts ``text`` (within the workspace budget)
        to read its long ASCII stretches as bytes (``_ascii_part_bounds``); ``[0, len]``
        when it does not (for certification)."""
        u8 = utf8_array(text)
        bounds = self._ascii_bounds(u8)
        return [0, u8.size] if bounds is None else bounds.tolist()

    def _ascii_bounds(self, u8: np.ndarray) -> np.ndarray | None:
        """``_ascii_part_bounds`` of a text within the budget, or None: no long ASCII
        stretch beside other characters (or no ASCII path for this tokenizer)."""
        if not self._ascii_direct or not ASCII_RUN_MIN <= u8.size <= self.workspace_bytes:
            return None
        bounds = _ascii_part_bounds(u8, ASCII_RUN_MIN, *self._cut_args())
        return bounds if bounds.size > 2 else None

    def prepare(self, u8: np.ndarray, wk: Workspace | None = None,
                decoded: int | None = None) -> _Prepared:  # fmt: skip
        """Decode, gather classes and extract added-token literals (host side of every path).

        With ``wk`` the arrays are the workspace's (valid until this thread's next call).
        ``decoded``: ``wk`` holds ``u8``'s decode already (this many characters: the
        single-thread kernel's, stopped at an NFC-unsafe character), so only the literals
        are found here.
        """
        t = self.tables
        if wk is None:
            wk = new_workspace(u8.size)
        cps, char_start, fl, ls, le, lid = wk.cps, wk.char_start, wk.fl, wk.ls, wk.le, wk.lid
        n = _prepare(u8, t.bits, cps, char_start, fl) if decoded is None else decoded
        nlit = _find_literals(cps, n, *self._trie_args, ls, le, lid)
        cut_args = (n, cps, fl, self._class_of, self._stable, t.nfc, ls, le, nlit)
        return _Prepared(n, cps, char_start, fl, ls, le, lid, nlit, cut_args)

    # --- single thread --------------------------------------------------------------------
    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids uint32, starts int64, ends int64): exact IDs and each token's character span."""
        return self._encode_validated(text, utf8_array(text))

    def encode_ids(self, text: str, threads: int | None = None) -> np.ndarray:
        """The exact IDs alone (uint32), on the full path (``encode_parallel``): for callers
        that need no spans -- stateless requests, bulk encodes.  The same kernels with the
        span lifting left out: 6-12% less time on warm 1M-character texts."""
        return self.encode_parallel(text, threads, spans=False)[0]

    def encode_nfc_changed(self, text: str, stretches=None, *, threads: int = 1,
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
        """``encode`` for a text the caller has found NFC changes (an NFC tokenizer's repair
        window, a text the GPU engine hands over): straight to the segmented path, without
        first encoding it all and normalizing it again to find out.  Any text gets exact
        IDs here.  ``stretches``: the caller's ``nfc_stretch_changes`` of exactly this
        text, if it has them; ``threads`` > 1 cuts the engine's gaps into chunks (texts of
        ``MIN_PARALLEL_CHARS`` or more, as ``encode_parallel``)."""
        threads = threads if len(text) >= MIN_PARALLEL_CHARS else 1
        return self._encode_segmented(text, utf8_array(text), threads=max(1, threads),
                                      stretches=stretches)  # fmt: skip

    def _encode_validated(self, text: str, u8: np.ndarray, spans: bool = True):
        return self._encode_bytes(u8, spans, text)[:3]

    def _encode_bytes(self, u8: np.ndarray, spans: bool = True, text: str | None = None):
        """The single-thread path; a text beyond the workspace budget goes in parts cut at
        certified boundaries, one after another through this thread's workspace, instead
        of through a one-call workspace of its whole size (fresh pages on every call; 1.22x
        faster at 8M characters in the README's A/B).  (ids, starts, ends, True);
        ``text``: ``u8``'s str, when the caller has it.

        Within the budget, a text with long ASCII stretches beside other characters goes in
        parts cut at their edges (``_ascii_part_bounds``), so the stretches skip the decode
        (``_encode_text``'s ``ascii_direct``): real code holds a few non-ASCII characters
        (one in a 1M slice of the stdlib corpus), which kept the whole text off that path."""
        if u8.size > self.workspace_bytes:
            bounds = self._part_bounds(u8, -(-u8.size // (self.workspace_bytes // 2)))
            if len(bounds) > 2:  # each part smaller than the text: the recursion ends
                results = [self._encode_bytes(u8[a:b], spans) for a, b in pairwise(bounds)]
                return (*_join_parts(results, spans), True)
        elif (ascii_bounds := self._ascii_bounds(u8)) is not None:
            parts = pairwise(ascii_bounds.tolist())
            return (*_join_parts([self._encode_u8(u8[a:b], spans) for a, b in parts], spans), True)
        return self._encode_u8(u8, spans, text)

    # --- all cores --------------------------------------------------------------------------
    def encode_full(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The full path: one thread for short texts, certified chunks on every core beyond."""
        return self.encode_parallel(text)

    def encode_parallel(
        self, text: str, threads: int | None = None, *, min_chars: int = MIN_PARALLEL_CHARS,
        spans: bool = True,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Like ``encode``, with the text cut at certified boundaries into chunks (about
        ``CHUNKS_PER_THREAD`` per thread) that the threads take in turn (``run_chunks``).

        The cuts are found by decoding small windows only (``_byte_cut_near``); each
        chunk then runs the whole single-thread path (decode, literals, pieces) on
        whichever thread takes it, so nothing but the final concatenation is serial.
        A chunk of NFC text whose NFC stretches the reference's NFC changes takes the
        segmented path (reference stretches) on its own, on the thread that has it.
        ``spans`` False: starts and ends may come back empty (``encode_ids``).
        """
        threads = threads or self.threads
        if (isinstance(text, str) and threads > 1 and len(text) >= min_chars
                and not text.isascii()):  # fmt: skip
            try:
                bounds = char_part_bounds(text, chunk_count(len(text), threads), self._cut_args())
                if len(bounds) > 2:
                    return self._encode_str_parts(text, bounds, threads, spans)
            except InvalidTextError:  # in a cut's window or a part: reported at its own offset
                utf8_array(text)  # the whole text's error, at its first lone surrogate
                raise
        u8 = utf8_array(text)
        if len(text) < min_chars or threads <= 1:
            return self._encode_validated(text, u8, spans)
        bounds = self._part_bounds(u8, chunk_count(u8.size, threads))
        if len(bounds) > 2:
            return self._encode_parts(u8, bounds, threads, spans)
        return self._encode_validated(text, u8, spans)  # no certified cut to split at

    def _encode_str_parts(self, text: str, bounds: list[int], threads: int, spans: bool = True):
        """Encode the parts ``text[bounds[k]:bounds[k+1]]`` (character offsets) on ``threads``
        threads, each making its part's UTF-8 itself, and join them.

        Why: a str that is not all ASCII takes CPython 0.8-2.1 ms per 1M characters to
        encode, holding the GIL, so made up front it ran before any part could start (and
        capped two threads at ~1.8x; ``results/runs/engine-ab/parallel-serial-parts.txt``).
        Made per part, one thread's encode overlaps the other's compiled work.  An ASCII
        str's UTF-8 is a copy of its bytes (~0.05 ms), so it keeps the byte-offset path."""
        def one(job):  # the part's UTF-8 straight from ``text`` (no slice; compiled, no GIL)
            return self._encode_bytes(utf8_array(text, lo=job[0], hi=job[1]), spans)

        return _join_parts(run_chunks(self._parts, list(pairwise(bounds)), threads, one), spans)

    def _encode_u8(self, u8: np.ndarray, spans: bool = True, text: str | None = None):
        """The single-thread path on UTF-8 bytes: (ids, starts, ends, True).

        An NFC tokenizer's text with NFC-unsafe characters (combining marks: most Indic
        and Hangul-jamo text) is checked with one normalizer call over its NFC
        stretches; if the reference's NFC changes none, it is the reference's input
        as it stands and the engine encodes it all the same.  If NFC changes some, this
        text takes the segmented path here, with the stretches just computed (``text``:
        ``u8``'s str if the caller has it, else decoded).  The parts and chunks this
        runs on are cut at certified, hence NFC-safe, points, so each part's check and
        segments are its share of the whole text's: a part that NFC changes no longer
        sends the whole text to the segmented path (which normalized it all again, on
        one thread: qwen3, 1M characters of catalogs, two threads over one 0.92-1.23x ->
        1.38-1.96x; ``tools/engine-experiments/nfc_chunks_ab.py``).
        """
        t = self.tables
        wk = self._workspace(u8.size)
        out = self._encode_kernel(u8, t.bits, t.fold, t.family_code, t.nfc, *self._trie_args,
                                  self.bpe, *self._cache(), wk, spans, self._ascii_direct,
                                  *self._ascii_literals)  # fmt: skip
        if out[3] or not t.nfc:
            return out
        n = _char_count(u8)  # the kernel left the code points and flags in ``wk``
        stretches = nfc_stretch_changes(self.tokenizer.hf.normalizer.normalize_str, wk.cps[:n],
                                        wk.fl[:n])  # fmt: skip
        if stretches[2].any():
            if text is None:
                text = u8.tobytes().decode("utf-8")  # valid: the caller's text, or a part of it
            return (*self._encode_segmented(text, u8, threads=1, stretches=stretches, wk=wk,
                                            decoded=n, spans=spans), True)  # fmt: skip
        return self._encode_kernel(u8, t.bits, t.fold, t.family_code, False, *self._trie_args,
                                   self.bpe, *self._cache(), wk, spans, False,
                                   *self._ascii_literals)  # fmt: skip

    def _cut_args(self) -> tuple:
        """``_byte_cut_near``'s tables after its bytes and target (``part_bounds``)."""
        t = self.tables
        return (t.bits, self._class_of, self._stable, t.nfc, *self._trie_args, self._max_literal)

    def _part_bounds(self, u8: np.ndarray, parts: int) -> list[int]:
        """Byte offsets ``[0, c1, ..., len]`` of certified cuts near equal part sizes."""
        return part_bounds(u8, parts, self._cut_args())

    def _encode_parts(self, u8: np.ndarray, bounds: list[int], threads: int, spans: bool = True):
        """Encode the chunks ``u8[bounds[k]:bounds[k+1]]`` on ``threads`` threads and join
        them (a chunk that NFC changes takes the segmented path on its own thread)."""
        jobs = list(pairwise(bounds))
        results = run_chunks(
            self._parts, jobs, threads, lambda j: self._encode_bytes(u8[j[0] : j[1]], spans)
        )
        return _join_parts(results, spans)

    def _encode_segmented(self, text: str, u8: np.ndarray, threads: int, stretches=None, *,
                          wk: Workspace | None = None, decoded: int | None = None,
                          spans: bool = True):  # fmt: skip
        """``wk``/``decoded``: the workspace holding ``u8``'s decode of ``decoded`` characters
        (``_encode_u8``'s kernel ran it), which is not decoded again.  ``spans`` False:
        starts and ends come back empty (the engine's ranges lift no spans)."""
        t = self.tables
        nb = u8.size
        if wk is None:
            wk, decoded = self._workspace(nb), None
        n, cps, char_start, fl, ls, le, lid, nlit, cut_args = self.prepare(u8, wk, decoded)

        # Stretches the reference must encode (NFC families): the NFC stretches around
        # unsafe characters that the reference's own NFC changes (one call for all of
        # them; an unchanged one is NFC-stable after all and stays with the engine),
        # each widened to the certified cuts around it, coalescing neighbours closer
        # than NFC_COALESCE.
        ra = rb = _EMPTY
        if t.nfc:
            if stretches is None:
                stretches = nfc_stretch_changes(self.tokenizer.hf.normalizer.normalize_str,
                                                cps[:n], fl[:n])  # fmt: skip
            ra, rb = self._reference_stretches(*stretches, NFC_COALESCE, *cut_args)
        # The engine's gaps between them (gap k before reference stretch k), each cut into
        # about ``threads`` chunks; empty gaps are left out.
        g_lo = np.concatenate(([0], rb))
        g_hi = np.concatenate((ra, [n]))
        if threads > 1:
            gaps = zip(g_lo.tolist(), g_hi.tolist(), strict=True)
            chunks = [(x, y, k) for k, (a, b) in enumerate(gaps) if b > a
                      for x, y in self._chunks(a, b, threads, cut_args)]  # fmt: skip
            arr = np.array(chunks, dtype=np.int64).reshape(-1, 3)
            lo, hi, gap = (np.ascontiguousarray(arr[:, j]) for j in range(3))
        else:
            keep = np.flatnonzero(g_hi > g_lo)
            lo, hi, gap = g_lo[keep], g_hi[keep], keep
        base = char_start[lo]
        counts = np.zeros(lo.size, dtype=np.int64)
        out_ids, out_s, out_e = wk.out_ids, wk.out_s, wk.out_e
        kernel = (self._ranges_parallel if threads > 1 and lo.size > 1
                  else self._ranges_serial)  # fmt: skip
        if lo.size and kernel is self._ranges_parallel:
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        if lo.size:
            kernel(lo, hi, base, cps, fl, t.fold, t.family_code, u8, char_start, ls, le, lid,
                   nlit, self.bpe, *self._caches, out_ids, out_s, out_e, counts, spans)  # fmt: skip
        if not ra.size:
            offs = np.zeros(lo.size, dtype=np.int64)
            np.cumsum(counts[:-1], out=offs[1:])
            total = int(counts.sum())
            ids = np.empty(total, dtype=np.uint32)
            starts = np.empty(total if spans else 0, dtype=np.int64)
            ends = np.empty(total if spans else 0, dtype=np.int64)
            _gather(base, counts, offs, out_ids, out_s, out_e, ids, starts, ends, spans)
            return ids, starts, ends
        r_ids, r_s, r_e, r_counts = reference_spans(self.tokenizer.hf, text, ra, rb,
                                                    self._span_separator,
                                                    self._reference_memo)  # fmt: skip
        total = int(counts.sum()) + r_ids.size
        ids = np.empty(total, dtype=np.uint32)
        starts = np.empty(total if spans else 0, dtype=np.int64)
        ends = np.empty(total if spans else 0, dtype=np.int64)
        _interleave(base, counts, gap, r_ids, r_s, r_e, r_counts, out_ids, out_s, out_e, ids,
                    starts, ends, spans)  # fmt: skip
        return ids, starts, ends

    @staticmethod
    def _chunks(
        lo: int, hi: int, threads: int, cut_args, min_chars: int = MIN_PARALLEL_CHARS
    ) -> list[tuple[int, int]]:
        """Cut ``[lo, hi)`` into up to ``threads`` chunks at certified cuts near equal sizes."""
        if threads <= 1 or hi - lo < max(min_chars, 2):
            return [(lo, hi)]
        out, pos = [], lo
        for k in range(1, threads):
            target = lo + (hi - lo) * k // threads
            if target <= pos:
                continue
            p = _cut_after(target, min(hi, target + CUT_SEARCH), *cut_args)
            if p > pos:
                out.append((pos, p))
                pos = p
        out.append((pos, hi))
        return out


def new_engine(tok):
    """A fresh compiled CPU engine for ``tok`` (own piece caches): ``CpuEngine`` for the
    byte-level families, ``sentencepiece.SentencePieceEngine`` for SentencePiece BPE,
    ``wordpiece.WordPieceEngine`` for WordPiece; ``EngineUnsupported`` when none applies."""
    if tok.family == "sentencepiece":
        from .sentencepiece import SentencePieceEngine

        return SentencePieceEngine(tok)
    if tok.family == "wordpiece":
        from .wordpiece import WordPieceEngine

        return WordPieceEngine(tok)
    return CpuEngine(tok)


_ENGINES: dict[tuple[str, str], CpuEngine] = {}
_REFUSALS: dict[tuple[str, str], str] = {}
_ENGINES_LOCK = threading.Lock()


def engine_refusal(tok) -> str | None:
    """Why ``tok`` has no engine (the ``EngineUnsupported`` message), or None when it has one."""
    if engine_for(tok) is not None:
        return None
    if os.environ.get("TOKTIER_ENGINE", "").lower() == "reference":
        return "TOKTIER_ENGINE=reference"
    return _REFUSALS.get((str(tok.path), tok.sha256))


def engine_for(tok) -> CpuEngine | None:
    """The shared CPU engine of a tokenizer, or None when its family stays on the reference.

    ``TOKTIER_ENGINE=reference`` turns the engine off everywhere (for comparisons).
    """
    if os.environ.get("TOKTIER_ENGINE", "").lower() == "reference":
        return None
    key = (str(tok.path), tok.sha256)
    with _ENGINES_LOCK:
        if key in _ENGINES:
            return _ENGINES[key]
    if key in _REFUSALS:
        return None
    try:
        eng = new_engine(tok)
    except EngineUnsupported as exc:
        with _ENGINES_LOCK:
            _REFUSALS[key] = str(exc)
        return None
    with _ENGINES_LOCK:
        return _ENGINES.setdefault(key, eng)
