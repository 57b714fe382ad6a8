"""The WordPiece engine (the ``wordpiece`` family, BERT): exact IDs and spans, compiled.

What the reference does with a BERT tokenizer.json: added-token literals are cut out of
the original text first; each remaining segment is normalized (``BertNormalizer``:
control characters removed, whitespace to " ", spaces around CJK ideographs, NFD with
nonspacing marks removed, lowercase), pre-tokenized (``BertPreTokenizer``: split at
whitespace, which is dropped, and around each punctuation character), and each word
is split by greedy longest-match-first against the vocabulary ("##" in front of every
piece but a word's first); a word longer than ``max_input_chars_per_word`` characters
or with a position where nothing matches is one ``[UNK]``.  A token's span is the
original characters its normalized characters came from.

Why per-character tables are exact: every step of that normalizer maps one character
to characters of its own (removal, replacement, padding, decomposition, lowercase),
except canonical reordering inside NFD, which can swap two adjacent combining marks
(nonzero combining class).  Nonspacing marks are removed afterwards, so only a kept
mark with a nonzero class can be reordered: a character whose normalized form holds
one is *unsafe*, and the stretch around it (between certified cuts) goes to the
reference.  So the tables are read off the reference itself, one character at a time
(``normalize_str``; the pre-tokenizer's class from ``pre_tokenize_str("a" + c + "a")``),
never from a Unicode database of another version; the engine campaign
(``toktier certify-engine bert-uncased``) checks the result on every code point and
on real text.

Cuts (parallel parts, the budget's parts, reference stretches): after a character
whose normalized form is whitespace only, where no added-token literal crosses.  A
word never spans it and the normalizer's per-character mapping does not look across
it (a space is a starter: reordering never crosses one), so both sides encode alone
exactly as inside the whole text.  Where no literal holds such a character (bert-uncased's
``[CLS]``-style tokens hold none), every position after one is a cut, so a parallel call
finds its cuts in the str itself and each thread makes and decodes its own part's UTF-8.
"""

from __future__ import annotations

import re
import threading
import time
import unicodedata
from itertools import pairwise
from typing import NamedTuple

import numba
import numpy as np

from ..errors import InvalidTextError
from ..textcheck import check_text, utf8_array
from . import cpu as _cpu
from . import jit as _jit
from .jit import prefetch_row
from .literal_probe import check_literals
from .rules import M63  # keys and hashes stay non-negative int64, as the BPE caches'
from .tables import EngineUnsupported, build_trie

K_WORD, K_SPACE, K_PUNCT = 0, 1, 2  # the pre-tokenizer's class of a character
utf8_decode = _cpu.RULES.utf8_decode
pair_slot = _cpu.RULES.pair_slot
FIRST, CONT = "\x01", "\x02"  # the trie's two roots


class WordPieceTables(NamedTuple):
    norm_off: np.ndarray  # int64[0x110001]: code point -> its normalized form in norm_pool
    norm_pool: np.ndarray  # int32: normalized code points, back to back
    kind: np.ndarray  # uint8[0x110000]: K_WORD / K_SPACE / K_PUNCT (the pre-tokenizer's)
    cut_after: np.ndarray  # uint8[0x110000]: normalized form is whitespace only (non-empty)
    unsafe: np.ndarray  # uint8[0x110000]: normalized form holds a kept combining mark
    tkeys: np.ndarray  # the vocabulary as a trie over code points (``tables.build_trie``):
    tchild: np.ndarray  # a word's first piece hangs under FIRST, every other piece under
    term: np.ndarray  # CONT (the "##" left off); ``term[node]``: the id ending there
    root_first: int
    root_cont: int
    unk: int
    max_word_chars: int  # max_input_chars_per_word
    # The same trie as one int64 per edge (``build_walk_table``): what a step of the walk
    # reads is one slot, not a key, a child and a terminal id in three arrays.
    walk: np.ndarray
    # The token of each one-character word, first in its word (a vocabulary entry of that
    # character, else [UNK]), for the characters below SINGLE_MAX (``single_tokens``).
    single: np.ndarray
    # The roots' edges of the characters below SINGLE_MAX as ``walk`` slots (-1: none),
    # FIRST's then CONT's (``root_steps``): a token's first step is a read of a small
    # array, not a probe of the hashed table.
    roots: np.ndarray


# --- compiled rules ----------------------------------------------------------------------
# The word cache (per thread, ``WordPieceEngine._word_cache``): a word's tokens are a function
# of its normalized characters alone, so a word met again is answered from a row keyed by
# exactly those characters (never a hash alone) -- real text repeats its words (1M characters
# of stdlib code: 238K words, 6.5K distinct; of pycountry's catalogs: 157K, 54K).
WC_MAX_CHARS = 15  # words of at most this many normalized characters are cached
WC_COLS = 16  # header (length | count << 8), 5 key words, token ends, 8 id words, pad
WC_KEY = 1  # key words: 3 code points of 21 bits each, zero past the word's length
WC_ENDS = 6  # each token's end (normalized characters from the word's start), 4 bits each
WC_IDS = 7  # token ids, two per word (ids < 2**31); a row's first 64 bytes hold two
WC_ROWS = 65536  # rows per thread (8 MB); direct-mapped
WORD_AHEAD = 8  # words between a word's row request and its read (``_segment``); a power of two


# ``walk`` slots: node (20 bits) | code point << 20 (21 bits) | child << 41 (20 bits) |
# child is terminal << 61 | a terminal lies below the child << 62; -1 empty.  Keyed by the
# low 41 bits, hashed by ``_walk_hash``.
WALK_NODE_BITS = 20
WALK_KEY = (1 << 41) - 1
WALK_NODE = (1 << WALK_NODE_BITS) - 1
WALK_TERMINAL = 1 << 61
WALK_DEEPER = 1 << 62  # some node below the child is terminal: a longer match may follow
WALK_LOAD = 0.6  # at most this full: probes mostly stay in the slot's cache line


@numba.njit(cache=True, nogil=True, _nrt=False, inline="always")
def _walk_hash(key, mask):
    return (((key * 0x9E3779B97F4A7C15) & M63) >> 23) & mask


@numba.njit(cache=True, nogil=True)
def build_walk_table(tkeys, tchild, term, cap):
    """The trie's edges (``tables.build_trie``'s pair table, keys ``node << 32 | cp``) as
    ``walk`` slots in a table of ``cap`` (a power of two) slots, linear probing.

    ``WALK_DEEPER`` is read off the trie: ``build_trie`` numbers every child after its
    parent, so one pass from the highest node down settles each node before its parent."""
    parent = np.full(term.size, -1, dtype=np.int64)
    for s in range(tkeys.size):
        if tkeys[s] != -1:
            parent[tchild[s]] = tkeys[s] >> 32
    below = np.zeros(term.size, dtype=np.bool_)  # a terminal strictly below the node
    for c in range(term.size - 1, 0, -1):
        p = parent[c]
        if p >= 0 and (term[c] >= 0 or below[c]):
            below[p] = True
    walk = np.full(cap, -1, dtype=np.int64)
    mask = cap - 1
    for s in range(tkeys.size):
        k = tkeys[s]
        if k == -1:
            continue
        node = k >> 32
        cp = k & 0xFFFFFFFF
        child = int(tchild[s])
        key = node | (cp << WALK_NODE_BITS)
        v = key | (child << 41)
        if term[child] >= 0:
            v |= WALK_TERMINAL
        if below[child]:
            v |= WALK_DEEPER
        h = _walk_hash(key, mask)
        while walk[h] != -1:
            h = (h + 1) & mask
        walk[h] = v
    return walk


def walk_table(trie) -> np.ndarray:
    """``build_walk_table`` of a vocabulary trie, sized for ``WALK_LOAD``."""
    edges = int((trie.keys != -1).sum())
    if trie.term.size > WALK_NODE:
        raise EngineUnsupported(f"{trie.term.size:,} trie nodes (the walk table holds 2**20)")
    cap = 16
    while cap * WALK_LOAD < edges + 1:
        cap <<= 1
    return build_walk_table(trie.keys, trie.child, trie.term, cap)


SINGLE_MAX = 0x3000  # one-character words below this code point skip the cache and the walk


@numba.njit(cache=True, nogil=True, _nrt=False, inline="always")
def _walk_slot(walk, key):
    """The ``walk`` slot of the edge ``key`` (node | code point << WALK_NODE_BITS), or -1."""
    mask = walk.size - 1
    h = _walk_hash(key, mask)
    v = walk[h]
    while v != -1 and (v & WALK_KEY) != key:
        h = (h + 1) & mask
        v = walk[h]
    return v


@numba.njit(cache=True, nogil=True)
def root_steps(walk, root_first, root_cont):
    """``WordPieceTables.roots``: the ``walk`` slot of each root's edge for every character
    below SINGLE_MAX (-1 where the root has none), FIRST's in ``[0, SINGLE_MAX)`` and
    CONT's in ``[SINGLE_MAX, 2 * SINGLE_MAX)``."""
    out = np.empty(2 * SINGLE_MAX, dtype=np.int64)
    for r in range(2):
        root = root_first if r == 0 else root_cont
        for x in range(SINGLE_MAX):
            out[r * SINGLE_MAX + x] = _walk_slot(walk, root | (x << WALK_NODE_BITS))
    return out


@numba.njit(cache=True, nogil=True)
def single_tokens(roots, term, unk, max_word_chars):
    """``WordPieceTables.single``: what ``_word`` gives a word of one character ``x``, for
    every ``x < SINGLE_MAX`` -- the token of the vocabulary entry ``x`` (a terminal child of
    the first-piece root, read off ``root_steps``), else [UNK]."""
    out = np.full(SINGLE_MAX, unk, dtype=np.int64)
    if max_word_chars < 1:
        return out
    for x in range(SINGLE_MAX):
        v = roots[x]
        if v != -1 and v & WALK_TERMINAL:
            out[x] = term[(v >> 41) & WALK_NODE]
    return out


@numba.njit(cache=True, nogil=True, _nrt=False)  # no allocation: no refcounts
def _word(walk, roots, term, root_first, root_cont, unk, max_word_chars, wcp, worig, s, length,
          first, last, out_ids, out_s, out_e, n, spans, tend):  # fmt: skip
    """Greedy longest-match-first over one word's ``length`` normalized characters (the
    first ``min(length, max_word_chars + 1)`` held in row ``s`` of ``wcp``/``worig``);
    appends tokens (their spans unless ``spans`` is False) and writes each token's end,
    in normalized characters from the word's start, to ``tend``.

    The longest vocabulary entry at ``start`` is the deepest terminal node on the trie
    walk from there (the reference tries every end from the word's end down: the first
    hit is that same entry); the walk stops where no terminal lies deeper.  A token's
    first step below SINGLE_MAX reads ``roots``.
    """
    if length > max_word_chars:
        out_ids[n] = unk
        if spans:
            out_s[n] = first
            out_e[n] = last + 1
        tend[0] = length
        return n + 1
    n0 = n
    start = 0
    while start < length:
        node = root_cont if start > 0 else root_first
        found = -1
        end = start
        j = start
        while j < length:
            c = int(wcp[s, j])
            if j == start and c < SINGLE_MAX:
                v = roots[c + SINGLE_MAX if start > 0 else c]
            else:
                v = _walk_slot(walk, node | (c << WALK_NODE_BITS))
            if v == -1:
                break
            node = (v >> 41) & WALK_NODE
            j += 1
            if v & WALK_TERMINAL:
                found = node
                end = j
            if not v & WALK_DEEPER:
                break
        if found < 0:  # nothing matches here: the whole word is one [UNK]
            out_ids[n0] = unk
            if spans:
                out_s[n0] = first
                out_e[n0] = last + 1
            tend[0] = length
            return n0 + 1
        out_ids[n] = term[found]
        if spans:
            out_s[n] = worig[s, start]
            out_e[n] = worig[s, end - 1] + 1
        tend[n - n0] = end
        n += 1
        start = end
    return n


@numba.njit(cache=True, nogil=True, _nrt=False, inline="always")
def _word_key(wcp, s, length, kw):
    """The cache key of the word in row ``s`` (at most ``WC_MAX_CHARS`` characters): its
    code points packed three to a word into ``kw[s, :5]`` (zero past the word); returns
    its hash.  ``wcp[s]`` holds zeros past the word up to ``WC_MAX_CHARS`` (``_finish``
    clears what a word wrote), so the packing needs no branch on the length."""
    k0 = wcp[s, 0] | (wcp[s, 1] << 21) | (wcp[s, 2] << 42)
    k1 = wcp[s, 3] | (wcp[s, 4] << 21) | (wcp[s, 5] << 42)
    h = (length * 0x1E3779B97F4A7C15) ^ (k0 * 0x27D4EB2F165667C5) ^ (k1 * 0x165667B19E3779F9)
    k2 = 0
    k3 = 0
    k4 = 0
    if length > 6:
        k2 = wcp[s, 6] | (wcp[s, 7] << 21) | (wcp[s, 8] << 42)
        k3 = wcp[s, 9] | (wcp[s, 10] << 21) | (wcp[s, 11] << 42)
        k4 = wcp[s, 12] | (wcp[s, 13] << 21) | (wcp[s, 14] << 42)
        h ^= (k2 * 0x2545F4914F6CDD1D) ^ (k3 * 0x1B873593CC9E2D51) ^ (k4 * 0x0CF1BBCDCB7A5635)
    kw[s, 0] = k0
    kw[s, 1] = k1
    kw[s, 2] = k2
    kw[s, 3] = k3
    kw[s, 4] = k4
    h &= M63
    h ^= h >> 31
    return ((h * 0x7FB5D329728EA185) & M63) >> 17


@numba.njit(cache=True, nogil=True, _nrt=False)  # no allocation: no refcounts
def _remember(wcache, r, length, kw, s, out_ids, n, m, tend):
    """Row ``r`` of the word cache now holds the word keyed ``kw[s]`` and its tokens
    ``out_ids[n:m]`` (ends in ``tend``)."""
    wcache[r, 0] = 0  # rewritten whole below
    for q in range(5):
        wcache[r, WC_KEY + q] = kw[s, q]
    ends = 0
    for k in range(8):
        wcache[r, WC_IDS + k] = 0
    for k in range(m - n):
        wcache[r, WC_IDS + (k >> 1)] |= int(out_ids[n + k]) << (32 * (k & 1))
        ends |= int(tend[k]) << (4 * k)
    wcache[r, WC_ENDS] = ends
    wcache[r, 0] = length | ((m - n) << 8)


@numba.njit(cache=True, nogil=True, _nrt=False, inline="always")
def _finish(t, wcache, wcp, worig, info, kw, s, out_ids, out_s, out_e, n, spans, tend):
    """Emit the tokens of the word waiting in slot ``s``: from its word-cache row (read
    ``WORD_AHEAD`` words after it was requested) when the row holds exactly this word,
    else by ``_word`` (remembered in the row when the word may be cached).  Then its
    slot is cleared for the next word."""
    length = info[s, 0]
    r = info[s, 3]
    if r <= -2:  # a word of one character: its token, from ``single``
        out_ids[n] = -2 - r
        if spans:
            out_s[n] = worig[s, 0]
            out_e[n] = worig[s, 0] + 1
        n += 1
    elif (
        r >= 0
        and (wcache[r, 0] & 0xFF) == length
        and wcache[r, WC_KEY] == kw[s, 0]
        and wcache[r, WC_KEY + 1] == kw[s, 1]
        and wcache[r, WC_KEY + 2] == kw[s, 2]
        and wcache[r, WC_KEY + 3] == kw[s, 3]
        and wcache[r, WC_KEY + 4] == kw[s, 4]
    ):
        ends = wcache[r, WC_ENDS]
        a = 0
        for q in range(wcache[r, 0] >> 8):
            out_ids[n] = (wcache[r, WC_IDS + (q >> 1)] >> (32 * (q & 1))) & 0xFFFFFFFF
            if spans:
                e = (ends >> (4 * q)) & 0xF
                out_s[n] = worig[s, a]
                out_e[n] = worig[s, e - 1] + 1
                a = e
            n += 1
    else:  # one call site: ``_finish`` is inlined twice
        m = _word(t.walk, t.roots, t.term, t.root_first, t.root_cont, t.unk, t.max_word_chars,
                  wcp, worig, s, length, info[s, 1], info[s, 2], out_ids, out_s, out_e, n, spans,
                  tend)  # fmt: skip
        if r >= 0:
            _remember(wcache, r, length, kw, s, out_ids, n, m, tend)
        n = m
    for q in range(min(length, WC_MAX_CHARS)):
        wcp[s, q] = 0
    return n


@numba.njit(cache=True, nogil=True, _nrt=False)  # no allocation: no refcounts
def _segment(t, cps, lo, hi, wcp, worig, info, kw, out_ids, out_s, out_e, n, spans, wcache,
             tend):  # fmt: skip
    """Normalize, pre-tokenize and WordPiece the original characters ``[lo, hi)``.

    Each word (a punctuation character is a word of its own) is collected in a slot of
    a ring of ``WORD_AHEAD``; a cacheable one asks for its word-cache row as it ends and
    is emitted ``WORD_AHEAD`` words later (``_finish``), so the row's random read
    overlaps the words between instead of stalling each word.  Every word goes through
    the ring, so tokens come out in order.  ``_finish`` is inlined: a call with this many
    array arguments (each passed as its seven fields) costs more than a cached word.
    """
    cap = t.max_word_chars + 1
    norm_off, norm_pool, kind, single = t.norm_off, t.norm_pool, t.kind, t.single
    use_cache = wcache.shape[0] > 0
    mask = wcache.shape[0] - 1
    length = 0
    first = 0
    last = 0
    head = 0  # words collected
    tail = 0  # words emitted
    s = 0  # the slot the current word is collected in
    for i in range(lo, hi + 1):
        if i < hi:
            c = cps[i]
            j0 = norm_off[c]
            j1 = norm_off[c + 1]
        else:  # one step past the end: a space ends the last word
            j0 = 0
            j1 = 1
        for j in range(j0, j1):
            if i < hi:
                x = norm_pool[j]
                k = kind[x]
                if k == K_WORD:
                    if length == 0:
                        first = i
                    if length < cap:
                        wcp[s, length] = x
                        worig[s, length] = i
                    length += 1
                    last = i
                    continue
            else:
                x = 32
                k = K_SPACE
            # A word ends: the pending one, then (rep 1) a punctuation character alone.
            for rep in range(2):
                if rep == 1:
                    if k != K_PUNCT:
                        break
                    wcp[s, 0] = x
                    worig[s, 0] = i
                    length = 1
                    first = i
                    last = i
                elif length == 0:
                    continue
                info[s, 0] = length
                info[s, 1] = first
                info[s, 2] = last
                info[s, 3] = -1
                if length == 1 and wcp[s, 0] < single.size:  # its token from ``single``
                    info[s, 3] = -2 - single[wcp[s, 0]]
                elif use_cache and length <= WC_MAX_CHARS:
                    r = _word_key(wcp, s, length, kw) & mask
                    info[s, 3] = r
                    prefetch_row(wcache, r)
                head += 1
                length = 0
                if head - tail == WORD_AHEAD:
                    n = _finish(t, wcache, wcp, worig, info, kw, tail & (WORD_AHEAD - 1), out_ids,
                                out_s, out_e, n, spans, tend)  # fmt: skip
                    tail += 1
                s = head & (WORD_AHEAD - 1)
    while tail < head:
        n = _finish(t, wcache, wcp, worig, info, kw, tail & (WORD_AHEAD - 1), out_ids, out_s,
                    out_e, n, spans, tend)  # fmt: skip
        tail += 1
    return n


@numba.njit(cache=True, nogil=True)
def _encode_range(t, cps, c0, c1, ls, le, lid, nlit, out_ids, out_s, out_e, spans, wcache):
    """(ids, starts, ends) of original characters ``[c0, c1)`` (a certified range: the
    text's ends or cuts), literals of the whole text in ``ls[:nlit]``; fresh arrays
    (starts and ends empty when ``spans`` is False).

    ``out_*``: the thread's token buffers, used when they can hold the range's bound
    (otherwise buffers of that size are made for the call); ``wcache``: the thread's
    word cache (``WC_COLS`` columns, a power-of-two number of rows; zero rows: none).
    """
    k = np.searchsorted(ls[:nlit], c0)
    total = 0
    for i in range(c0, c1):
        total += t.norm_off[cps[i] + 1] - t.norm_off[cps[i]]
    # every token holds >= 1 normalized character, or is a literal
    size = total + (np.searchsorted(ls[:nlit], c1) - k) + 1
    if size > out_ids.size:
        out_ids = np.empty(size, dtype=np.uint32)
        out_s = np.empty(size, dtype=np.int64)
        out_e = np.empty(size, dtype=np.int64)
    cap = t.max_word_chars + 1
    wcp = np.zeros((WORD_AHEAD, cap), dtype=np.int64)  # zeros past every word (``_word_key``)
    worig = np.empty((WORD_AHEAD, cap), dtype=np.int64)
    info = np.empty((WORD_AHEAD, 4), dtype=np.int64)  # length, first, last, cache row or -1
    kw = np.empty((WORD_AHEAD, 5), dtype=np.int64)
    tend = np.empty(cap, dtype=np.int64)
    n = 0
    pos = c0
    while pos < c1:
        seg_end = c1
        if k < nlit and ls[k] < c1:
            seg_end = ls[k]
        if seg_end > pos:
            n = _segment(t, cps, pos, seg_end, wcp, worig, info, kw, out_ids, out_s, out_e, n,
                         spans, wcache, tend)  # fmt: skip
        if seg_end < c1:
            out_ids[n] = lid[k]
            if spans:
                out_s[n] = ls[k]
                out_e[n] = le[k]
            n += 1
            pos = le[k]
            k += 1
        else:
            pos = c1
    if not spans:
        return out_ids[:n].copy(), out_s[:0].copy(), out_e[:0].copy()
    return out_ids[:n].copy(), out_s[:n].copy(), out_e[:n].copy()


@numba.njit(cache=True, nogil=True)
def _decode(u8, f1, k1, c1, t1, f2, k2, c2, t2, has2, wk):
    """Code points of valid UTF-8 and the literals the reference cuts out first, in the
    workspace ``wk`` (at least ``u8.size`` entries): (cps, ls, le, lid, nlit), views."""
    n = utf8_decode(u8, wk.cps, wk.char_start)
    cps = wk.cps[:n]
    nlit = _cpu._find_literals(cps, n, f1, k1, c1, t1, f2, k2, c2, t2, has2, wk.ls, wk.le, wk.lid)
    return cps, wk.ls, wk.le, wk.lid, nlit


@numba.njit(cache=True, nogil=True)
def _cuts(t, cps, ls, le, nlit):
    """Every certified cut ``p`` (0 < p < n): after a whitespace-only character, with no
    literal crossing it."""
    n = cps.size
    out = np.empty(n, dtype=np.int64)
    m = 0
    k = 0
    for p in range(1, n):
        while k < nlit and le[k] <= p:
            k += 1
        if t.cut_after[cps[p - 1]] and not (k < nlit and ls[k] < p < le[k]):
            out[m] = p
            m += 1
    return out[:m]


@numba.njit(cache=True, nogil=True)
def _unsafe_positions(t, cps):
    out = np.empty(cps.size, dtype=np.int64)
    m = 0
    for i in range(cps.size):
        if t.unsafe[cps[i]]:
            out[m] = i
            m += 1
    return out[:m]


@numba.njit(cache=True, nogil=True)
def _split(t, cps):
    """Pieces (starts, ends) of the pre-tokenizer alone on original characters (split level):
    runs of word characters, each punctuation character alone, whitespace dropped."""
    n = cps.size
    starts = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    m = 0
    w0 = -1
    for i in range(n):
        k = t.kind[cps[i]]
        if k == K_WORD:
            if w0 < 0:
                w0 = i
            continue
        if w0 >= 0:
            starts[m] = w0
            ends[m] = i
            m += 1
            w0 = -1
        if k == K_PUNCT:
            starts[m] = i
            ends[m] = i + 1
            m += 1
    if w0 >= 0:
        starts[m] = w0
        ends[m] = n
        m += 1
    return starts[:m], ends[:m]


class Workspace(NamedTuple):
    """A thread's reusable buffers (``cpu.thread_workspace``: made once at the budget, pages
    touched only as used): a request allocates nothing text-sized but its result."""

    cps: np.ndarray  # uint32[cap]
    char_start: np.ndarray  # int64[cap + 1] (written by the decode, not read)
    ls: np.ndarray  # int64[cap]: literal starts, ends, ids
    le: np.ndarray
    lid: np.ndarray
    out_ids: np.ndarray  # uint32[2 cap + 2]: tokens before the copy out
    out_s: np.ndarray  # int64[2 cap + 2]
    out_e: np.ndarray


def _new_workspace(cap: int) -> Workspace:
    e = np.empty
    return Workspace(e(cap, np.uint32), e(cap + 1, np.int64), e(cap, np.int64),
                     e(cap, np.int64), e(cap, np.int64), e(2 * cap + 2, np.uint32),
                     e(2 * cap + 2, np.int64), e(2 * cap + 2, np.int64))  # fmt: skip


# --- tables ------------------------------------------------------------------------------
def _vocab_trie(vocab: dict[str, int], prefix: str):
    """The vocabulary as one trie: each entry under FIRST, and each "##" entry also under
    CONT with the "##" left off (what the reference's ``"##" + piece`` lookup finds)."""
    entries = []
    for tok_str, i in vocab.items():
        if FIRST in tok_str or CONT in tok_str:
            raise EngineUnsupported(f"vocabulary entry {tok_str!r} holds a trie root marker")
        entries.append((FIRST + tok_str, i))
        if tok_str.startswith(prefix) and len(tok_str) > len(prefix):
            entries.append((CONT + tok_str[len(prefix) :], i))
    trie = build_trie(entries)
    roots = [int(trie.child[pair_slot(trie.keys, 0, ord(r))]) for r in (FIRST, CONT)]
    return trie, roots


_TABLES: dict[tuple[str, str], tuple[WordPieceTables, list]] = {}
_TABLES_LOCK = threading.Lock()


def _tables_for(tok) -> tuple[WordPieceTables, list]:
    """The tables of ``tok`` (built once per process: ~4 s of reference calls)."""
    key = (str(tok.path), tok.sha256)
    with _TABLES_LOCK:
        if key not in _TABLES:
            _TABLES[key] = _build_tables(tok)
        return _TABLES[key]


def _build_tables(tok) -> tuple[WordPieceTables, list]:
    import json

    doc = json.loads(tok.hf.to_str())
    model = doc["model"]
    if model.get("type") != "WordPiece":
        raise EngineUnsupported("not a WordPiece model")
    norm, pre = doc.get("normalizer") or {}, doc.get("pre_tokenizer") or {}
    if norm.get("type") != "BertNormalizer" or pre.get("type") != "BertPreTokenizer":
        raise EngineUnsupported(
            f"WordPiece with {norm.get('type')!r} / {pre.get('type')!r} (implemented: "
            "BertNormalizer / BertPreTokenizer)"
        )
    for t in tok.added_tokens:
        if t.lstrip or t.rstrip or t.single_word:
            raise EngineUnsupported(f"added token {t.content!r} uses lstrip/rstrip/single_word")
        if t.normalized and t.content:
            raise EngineUnsupported(f"normalized added token {t.content!r}")
    vocab = model["vocab"]
    if model["unk_token"] not in vocab:
        raise EngineUnsupported("the unknown token is not in the vocabulary")
    normalize = tok.hf.normalizer.normalize_str
    pretok = tok.hf.pre_tokenizer.pre_tokenize_str
    forms: list[str] = []
    kind = np.zeros(0x110000, dtype=np.uint8)
    for c in range(0x110000):
        if 0xD800 <= c < 0xE000:
            forms.append(chr(0xFFFD))  # never in a valid text; any form will do
            continue
        ch = chr(c)
        forms.append(normalize(ch))
        pieces = [p for p, _ in pretok("a" + ch + "a")]
        kind[c] = (K_SPACE if pieces == ["a", "a"] else K_PUNCT if len(pieces) == 3
                   else K_WORD)  # fmt: skip
    lengths = np.fromiter((len(f) for f in forms), dtype=np.int64, count=0x110000)
    norm_off = np.zeros(0x110001, dtype=np.int64)
    np.cumsum(lengths, out=norm_off[1:])
    norm_pool = np.frombuffer("".join(forms).encode("utf-32-le"), dtype=np.uint32).astype(np.int32)
    cut_after = np.zeros(0x110000, dtype=np.uint8)
    unsafe = np.zeros(0x110000, dtype=np.uint8)
    for c, f in enumerate(forms):
        if f and all(kind[ord(x)] == K_SPACE for x in f):
            cut_after[c] = 1
        if any(unicodedata.combining(x) for x in f):
            unsafe[c] = 1
    trie, (root_first, root_cont) = _vocab_trie(vocab, model["continuing_subword_prefix"])
    walk = walk_table(trie)
    unk, max_chars = int(vocab[model["unk_token"]]), int(model["max_input_chars_per_word"])
    roots = root_steps(walk, root_first, root_cont)
    single = single_tokens(roots, trie.term, unk, max_chars)
    tables = WordPieceTables(norm_off, norm_pool, kind, cut_after, unsafe, trie.keys, trie.child,
                             trie.term, root_first, root_cont, unk, max_chars, walk,
                             single, roots)  # fmt: skip
    raw = [(t.content, t.id) for t in tok.added_tokens if t.content]
    return tables, raw


# --- the engine --------------------------------------------------------------------------
class WordPieceEngine:
    """toktier's exact CPU engine for WordPiece with the BERT normalizer (``Engine`` protocol)."""

    name = "numba-cpu-wordpiece"

    def __init__(self, tok, *, threads: int | None = None,
                 workspace_bytes: int = _cpu.WORKSPACE_MAX_BYTES,
                 word_cache_rows: int = WC_ROWS):  # fmt: skip
        if tok.family != "wordpiece":
            raise EngineUnsupported(f"family {tok.family!r} is not WordPiece")
        if word_cache_rows < 0 or word_cache_rows & (word_cache_rows - 1):
            raise ValueError(f"word_cache_rows must be 0 or a power of two, got {word_cache_rows}")
        self.tokenizer = tok
        self.workspace_bytes = workspace_bytes  # texts beyond it go in parts (bounded memory)
        self.word_cache_rows = word_cache_rows  # per thread; 0: every word walks the trie
        self.tables, raw = _tables_for(tok)
        lit, nlit = build_trie(raw), build_trie([])
        self._trie_args = (lit.first, lit.keys, lit.child, lit.term,
                           nlit.first, nlit.keys, nlit.child, nlit.term, False)  # fmt: skip
        self.threads = threads or numba.config.NUMBA_NUM_THREADS
        self.compile_seconds: float | None = None
        self._parts = _cpu.PartsPool("toktier-wp")
        self._local = threading.local()
        # Called through their one specialization's entry point: the tables and the
        # workspace are named tuples of arrays, which numba's dispatcher would type one
        # array at a time on every call (~0.5 ms a call where its type cache misses).
        self._decode = _jit.BoundKernel(_decode)
        self._unsafe_positions = _jit.BoundKernel(_unsafe_positions)
        self._encode_range = _jit.BoundKernel(_encode_range)
        self._cut_chars = _cut_char_pattern(self.tables.cut_after, [c for c, _ in raw])
        self.literal_probes = check_literals(tok, lambda text: self.encode(text)[0])

    def __repr__(self) -> str:
        return f"WordPieceEngine({self.tokenizer.name!r})"

    def warmup(self) -> float:
        t0 = time.perf_counter()
        sample = "Hello, World! Ünïcödé 中文 [CLS] x\U0001d165\U0001d16d it's 2026\n\t" * 3
        self.encode(sample)
        self.encode_parallel(sample * 8, threads=2, min_chars=0)
        # a long non-ASCII text takes the compiled UTF-8 pass (``textcheck.COMPILED_MIN_CHARS``):
        # left cold, a real request's first call loaded it (7.5 ms)
        mixed = "Grüße, мир — 中文 ok\n" * 1800
        self.encode(mixed)
        self.encode_parallel(mixed, threads=2, min_chars=0)
        self.split(sample)
        self.compile_seconds = time.perf_counter() - t0
        return self.compile_seconds

    # --- split level ------------------------------------------------------------------
    def split(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Piece (start, end) character offsets of the pre-tokenizer alone on ``text``
        (no normalization, no added tokens): the split-level certificate's counterpart of
        the reference ``pre_tokenizer.pre_tokenize_str``."""
        check_text(text)
        cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        return _split(self.tables, cps)

    # --- encode -------------------------------------------------------------------------
    def _workspace(self, nb: int) -> Workspace:
        return _cpu.thread_workspace(self._local, nb, self.workspace_bytes, _new_workspace)

    def _word_cache(self) -> np.ndarray:
        """The calling thread's word cache (``_finish``), kept across calls: int64
        [rows, WC_COLS].  One per thread, so no row is ever read while another thread
        writes it."""
        wc = getattr(self._local, "word_cache", None)
        if wc is None:
            # zeroed in 2 MiB huge pages where the OS gives them (rows are read at random)
            wc = self._local.word_cache = _cpu._aligned_zeros((self.word_cache_rows, WC_COLS))
        return wc

    def _prepare(self, text: str):
        """(cps, ls, le, lid, nlit) in this thread's workspace (valid until its next call).

        The text is checked here, by the one UTF-8 encode the engine needs anyway
        (``utf8_array``: a lone surrogate raises ``InvalidTextError``); the public methods
        check only that it is a str (a non-ASCII text used to be encoded twice, or three
        times through ``encode_parallel``).
        """
        u8 = utf8_array(text)
        return self._decode(u8, *self._trie_args, self._workspace(u8.size))

    def certified_cuts(self, text: str) -> np.ndarray:
        """Every position where the engine may cut ``text`` (for certification)."""
        _check_str(text)
        cps, ls, le, _lid, nlit = self._prepare(text)
        return _cuts(self.tables, cps, ls, le, nlit)

    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids uint32, starts int64, ends int64): exact IDs and each token's character span."""
        _check_str(text)
        return self._encode(text, threads=1)

    def encode_ids(self, text: str, threads: int | None = None) -> np.ndarray:
        """The exact IDs alone, on the full path (as ``CpuEngine.encode_ids``): no spans
        are made."""
        _check_str(text)
        threads = threads or self.threads
        if len(text) < _cpu.MIN_PARALLEL_CHARS or threads <= 1:
            threads = 1
        return self._encode(text, threads=threads, spans=False)[0]

    def encode_full(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.encode_parallel(text)

    def encode_parallel(
        self, text: str, threads: int | None = None, *,
        min_chars: int = _cpu.MIN_PARALLEL_CHARS,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
        """Like ``encode``, cut at certified cuts into one part per thread."""
        _check_str(text)
        threads = threads or self.threads
        if len(text) < min_chars or threads <= 1:
            return self._encode(text, threads=1)
        return self._encode(text, threads=threads)

    def _encode(self, text: str, threads: int, spans: bool = True):
        if threads > 1 and self._cut_chars is not None:
            bounds = self._str_part_bounds(text, _cpu.chunk_count(len(text), threads))
            if len(bounds) > 2:
                return self._encode_str_parts(text, bounds, threads, spans)
        return self._encode_text(text, utf8_array(text), 0, threads, spans)

    def _str_part_bounds(self, text: str, parts: int) -> list[int]:
        """Character offsets ``[0, c1, ..., len]`` of cuts near ``parts`` equal sizes, found
        in the str itself: the first character at or after each target whose normalized
        form is whitespace only (``cut_after``), the cut just after it.

        Every such position is a certified cut here: ``_cut_chars`` exists only when no
        added-token literal holds such a character, so none can cross it.  A target with no
        such character within CUT_SEARCH_CHARS after it gets no cut (its parts merge).
        """
        n = len(text)
        out = [0]
        for k in range(1, parts):
            target = max(n * k // parts, out[-1] + 1)
            m = self._cut_chars.search(text, target - 1, min(n, target + CUT_SEARCH_CHARS))
            if m is not None and out[-1] < m.end() < n:
                out.append(m.end())
        out.append(n)
        return out

    def _encode_str_parts(self, text: str, bounds: list[int], threads: int, spans: bool):
        """Encode ``text[bounds[k]:bounds[k+1]]`` on ``threads`` threads, each part from its
        own UTF-8 made on the thread that encodes it, and join them.

        Why: through ``_encode_text`` the whole text's UTF-8, decode and cut search ran on
        one thread before any part could start (~12 of 35 ms on 1M characters of code),
        which held two threads to 1.1-1.4x.  A part's tokens are the whole text's over its
        characters (its ends are certified cuts), its spans counted from its first
        character.
        """
        jobs = list(pairwise(bounds))

        def one(job):
            lo, hi = job  # the part's UTF-8 straight from ``text`` (no slice of it)
            return self._encode_text(text, utf8_array(text, lo=lo, hi=hi), lo, 1, spans)

        try:
            results = _cpu.run_chunks(self._parts, jobs, threads, one)
        except InvalidTextError:  # in some part: reported at the whole text's first
            utf8_array(text)
            raise
        ids = np.concatenate([r[0] for r in results])
        if not spans:
            return ids, np.zeros(0, np.int64), np.zeros(0, np.int64)
        starts = np.concatenate([r[1] + lo for r, (lo, _) in zip(results, jobs, strict=True)])
        ends = np.concatenate([r[2] + lo for r, (lo, _) in zip(results, jobs, strict=True)])
        return ids, starts, ends

    def _encode_text(self, text: str, u8: np.ndarray, base: int, threads: int,
                     spans: bool = True):  # fmt: skip
        """(ids, starts, ends) of ``u8``, the UTF-8 of ``text[base:base + its length]``
        (spans counted from ``base``): decoded whole here, cut at certified cuts into parts
        for ``threads`` threads or the workspace budget, unsafe stretches to the reference."""
        t = self.tables
        cps, ls, le, lid, nlit = self._decode(u8, *self._trie_args, self._workspace(u8.size))
        n = cps.size
        # Parts: one per thread, and none beyond the workspace budget's size in characters
        # (the campaign's small-budget engine goes in many parts through here).
        parts = max(threads, -(-n // max(1, self.workspace_bytes // 2)))
        unsafe = self._unsafe_positions(t, cps)
        cuts = _cuts(t, cps, ls, le, nlit) if parts > 1 or unsafe.size else None
        plan: list[tuple[int, int, bool]] = []  # (lo, hi, by the engine)
        ref: list[tuple[int, int]] = []  # stretches around unsafe characters: the reference
        if unsafe.size:
            for u in unsafe.tolist():
                k = int(np.searchsorted(cuts, u, side="right"))
                a = int(cuts[k - 1]) if k > 0 else 0
                b = int(cuts[k]) if k < cuts.size else n
                if ref and a <= ref[-1][1]:
                    ref[-1] = (ref[-1][0], max(b, ref[-1][1]))
                else:
                    ref.append((a, b))
        pos = 0
        for a, b in [*ref, (n, n)]:
            if a > pos:
                plan.extend((x, y, True) for x, y in _chunks(pos, a, parts, cuts))
            if b > a:
                plan.append((a, b, False))
            pos = b
        if not plan:
            return (np.zeros(0, np.uint32), np.zeros(0, np.int64), np.zeros(0, np.int64))

        def run(lo, hi, engine):
            if engine:  # token buffers of the thread that runs the part
                wk = self._workspace(hi - lo)
                return self._encode_range(t, cps, lo, hi, ls, le, lid, nlit, wk.out_ids,
                                          wk.out_s, wk.out_e, spans,
                                          self._word_cache())  # fmt: skip
            enc = self.tokenizer.hf.encode(text[base + lo : base + hi], add_special_tokens=False)
            ids = np.asarray(enc.ids, dtype=np.uint32)
            if not spans:
                return ids, np.zeros(0, np.int64), np.zeros(0, np.int64)
            off = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
            return ids, off[:, 0] + lo, off[:, 1] + lo

        if threads > 1 and len(plan) > 1:
            pool = self._parts.get(threads - 1)
            groups = [plan[len(plan) * r // threads : len(plan) * (r + 1) // threads]
                      for r in range(threads)]  # fmt: skip
            futures = [pool.submit(lambda g: [run(*p) for p in g], g) for g in groups[1:]]
            results = [run(*p) for p in groups[0]]
            for f in futures:
                results += f.result()
        else:
            results = [run(*p) for p in plan]
        if len(results) == 1:
            return results[0]
        return tuple(np.concatenate([r[k] for r in results]) for k in range(3))


# how far past a part's target the str path looks for a cut (a text with no whitespace
# there, such as unspaced CJK, gets fewer parts rather than a scan to its end)
CUT_SEARCH_CHARS = 1 << 16


def _cut_char_pattern(cut_after: np.ndarray, literals: list[str]) -> re.Pattern | None:
    """A regex of the characters after which the engine may cut (``cut_after``), for
    finding cuts in a str without decoding it; None when some added-token literal holds
    such a character (a literal could then cross the position: the decoded path checks)."""
    chars = [chr(c) for c in np.flatnonzero(cut_after).tolist()]
    if any(cut_after[ord(ch)] for lit in literals for ch in lit):
        return None
    return re.compile("[" + "".join(re.escape(ch) for ch in chars) + "]")


def _check_str(text) -> None:
    """The public methods' type check; the content is checked by the UTF-8 encode every
    path makes (``utf8_array``)."""
    if not isinstance(text, str):
        check_text(text)  # its TypeError


def _chunks(lo: int, hi: int, parts: int, cuts) -> list[tuple[int, int]]:
    """``[lo, hi)`` cut at certified cuts near ``parts`` equal sizes."""
    if parts <= 1 or cuts is None or hi - lo < 2:
        return [(lo, hi)]
    out, pos = [], lo
    for k in range(1, parts):
        target = lo + (hi - lo) * k // parts
        j = int(np.searchsorted(cuts, max(target, pos + 1)))
        if j < cuts.size and pos < cuts[j] < hi:
            out.append((pos, int(cuts[j])))
            pos = int(cuts[j])
    out.append((pos, hi))
    return [(a, b) for a, b in out if b > a] or [(lo, hi)]


__all__ = ["WordPieceEngine", "WordPieceTables"]
