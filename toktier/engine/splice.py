"""The compiled repair request path: window encode, match, certificate and splice in numba.

``toktier.repair.plan`` is the readable reference implementation of the repair
protocol (paper §3.2, App. A).  This module runs the *same* protocol -- same
cut (``find_cut``: the window is encoded from the old text's last usable stable
pair, the common case), same search regions, same longest run (ties to the right),
same certificate, same splice points -- as a few compiled calls over the session's own arrays, so a
continuation costs the window encode plus a few microseconds instead of a
hundred numpy calls.  ``tests/test_splice.py`` checks it against ``repair.plan``
(identical splices) and against the reference (identical IDs and spans).

One request is usually one call:

- ``plan_engine`` encodes the window with the engine's rules into a per-thread
  workspace (no allocation larger than the window) and finds the splice;
  ``plan_records`` does the same for fresh records that the caller encoded
  (the reference for WordPiece, the engine's segmented path for a window whose
  text the reference's NFC changes; a window that merely holds NFC-unsafe
  characters is checked with one normalizer call over its NFC stretches and then
  encoded by ``plan_engine`` all the same).  With ``apply_now`` (no result snapshot reads
  the session's arrays, and they have room) the same call also writes the
  splice; the caller then only publishes the new count and text, which cannot
  fail, so a session is never left half-updated.
- Otherwise ``apply`` writes it in a second call, after the caller has made
  room and detached the snapshots that still read the records about to be
  overwritten (``store.Snapshot``).
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numba
import numpy as np
from numba.core import types as _types
from numba.experimental import structref

from ..families.classes import NFC_UNSAFE
from ..repair import widen_left, widen_right
from . import cpu
from .cpu import _all_ascii, _find_literals, _prepare, ascii_literals, encode_range
from .jit import BoundKernel as _Bound
from .jit import unliteral
from .rules import BpeTables
from .sentencepiece import SentencePieceEngine, _sp_range
from .slots import (
    FAILED,
    NEED_RECORDS,
    OK,
    R_APPLIED,
    R_B_LEFT,
    R_B_RIGHT,
    R_CUT,
    R_FRESH_FROM,
    R_FRESH_TO,
    R_KEEP,
    R_KEEP_LEFT,
    R_KEEP_RIGHT,
    R_LEFT_OK,
    R_N_FRESH,
    R_NEW_N,
    R_RCUT,
    R_RIGHT_OK,
    R_RUN_LEN,
    R_STATUS,
    R_WHY_KIND,
    R_WHY_SIDE,
    REASON_FIRST_WINDOW,
    REASON_WHOLE_TEXT,
    RES_SIZE,
    WHY_NO_BOUNDARY,
    WHY_NO_RUN,
)

utf8_decode = cpu.RULES.utf8_decode

literal_at = cpu.RULES.literal_at

ORD_BITS = 6  # ordinal among records sharing one start (repair._ORD_BITS)



class EngineArgs(NamedTuple):
    """The engine tables a window encode reads (``engine.tables.EngineTables``, flattened)."""

    bits: np.ndarray
    fold: np.ndarray
    family: int
    nfc: bool
    f1: np.ndarray
    k1: np.ndarray
    c1: np.ndarray
    t1: np.ndarray
    f2: np.ndarray
    k2: np.ndarray
    c2: np.ndarray
    t2: np.ndarray
    has2: bool
    bpe: BpeTables  # merges, vocabulary, short-piece map (``rules.BpeTables``)
    ascii_direct: bool  # an all-ASCII window is read as its bytes (``cpu.ascii_reads_bytes``)
    lit_mode: int  # ... its literals found as ``cpu.ascii_literal_mode`` says
    lit_b1: int
    lit_b2: int


class RepairArgs(NamedTuple):
    """What the certificate reads (``repair.RepairRules``, as arrays)."""

    class_of: np.ndarray  # uint8[0x110000]: class index of the family's stable-pair table
    stable: np.ndarray  # bool[k, k]
    nfc: bool  # boundaries must be NFC-safe; coverage counted in NFC-safe characters
    unsafe: np.ndarray  # bool[0x110000] NFC-unsafe (size 1 when not nfc)
    margin: int  # longest added-token literal, in characters
    longest_token: int  # longest token the vocabulary can emit, in characters
    wordpiece: bool  # continuation tokens ("##") are never boundaries
    continuation: np.ndarray  # bool per id (size 1 when not wordpiece)
    lit_first: np.ndarray  # every added-token literal, raw and normalized, as one trie
    lit_keys: np.ndarray
    lit_child: np.ndarray
    lit_term: np.ndarray
    cut_splice: bool  # byte-level BPE: a stable pair in the old text is a cut (``find_cut``)
    cut_stable: np.ndarray  # bool[k, k]: the engine's cut pairs, an edit's right cut (1x1 if none)


class Workspace(NamedTuple):
    """Per-thread scratch for one window (capacity in bytes of the window, plus one)."""

    cps: np.ndarray  # uint32: window code points
    char_start: np.ndarray  # int64
    fl: np.ndarray  # uint16 class bits
    ls: np.ndarray  # literal starts, ends, ids
    le: np.ndarray
    lid: np.ndarray
    ends: np.ndarray  # piece ends
    sym: np.ndarray  # BPE scratch
    rank: np.ndarray
    nxt: np.ndarray
    prv: np.ndarray
    heap: np.ndarray
    f_ids: np.ndarray  # fresh records (window coordinates)
    f_s: np.ndarray
    f_e: np.ndarray
    c_ord: np.ndarray  # ordinals of cached records in a search region
    f_key: np.ndarray  # keys of fresh records in a search region
    res: np.ndarray  # int64[RES_SIZE]
    ring: np.ndarray  # int64[rules.RING_WORDS]: keys of the pieces ahead (``encode_range``)


def new_workspace(capacity: int) -> Workspace:
    c = max(int(capacity), 64) + 1
    i64 = lambda k=c: np.empty(k, dtype=np.int64)  # noqa: E731
    return Workspace(
        cps=np.empty(c, dtype=np.uint32),
        char_start=i64(),
        fl=np.empty(c, dtype=np.uint16),
        ls=i64(),
        le=i64(),
        lid=i64(),
        ends=i64(),
        sym=i64(),
        rank=i64(),
        nxt=i64(),
        prv=i64(),
        heap=i64(3 * c + 3),
        f_ids=i64(),
        f_s=i64(),
        f_e=i64(),
        c_ord=i64(),
        f_key=i64(),
        res=np.zeros(RES_SIZE, dtype=np.int64),
        ring=np.empty(cpu.RING_WORDS, dtype=np.int64),
    )


@structref.register
class _WindowContextType(_types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, _types.unliteral(t)) for name, t in fields)


class WindowContext(structref.StructRefProxy):
    """What one thread's ``plan_engine`` calls read besides the session: the engine's
    tables, the certificate's, the piece caches and the thread's workspace, as one object.

    Passed as named tuples, their ~50 arrays are unboxed one by one on every call
    (several microseconds, a tenth of a small append); a structref is one pointer.
    """

    def __new__(cls, ea, ra, cache, lcache, wk):
        return structref.StructRefProxy.__new__(cls, ea, ra, cache, lcache, wk)


structref.define_proxy(WindowContext, _WindowContextType, ["ea", "ra", "cache", "lcache", "wk"])


# Compiled for their callers' plain argument types (``jit.unliteral``): a constant passed
# between these functions (``lower_bound(keys, 0, ...)``, a side flag of ``certify``) would
# otherwise compile the callee once per value -- 12 of the 20 literal specializations left
# in a cold Tier (llama3, mistral-sp-v3, bert-uncased) were these.
_jit = unliteral(numba.njit(cache=True, nogil=True, _nrt=False))
_jit_nrt = unliteral(numba.njit(cache=True, nogil=True))


# --- search primitives -------------------------------------------------------------------
@_jit
def lower_bound(a, lo, hi, x):
    """First index in [lo, hi) with a[i] >= x (a sorted), else hi."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def lower_bound_back(a, lo, hi, x):
    """``lower_bound`` found by galloping back from ``hi``: it reads only entries near the
    answer (O(log distance) reads), so an append at the end of a session of millions of
    records does not walk a binary search through its cold arrays from the middle."""
    b = hi  # every entry in [b, hi) is >= x
    step = 1
    while True:
        p = b - step
        if p < lo:
            return lower_bound(a, lo, b, x)
        if a[p] < x:
            return lower_bound(a, p + 1, b, x)
        b = p
        step <<= 1


@_jit
def in_region(starts, ends, n, lo, hi):
    """Index range of records with lo <= start and end <= hi (``repair._in_region``)."""
    i0 = lower_bound_back(starts, 0, n, lo)
    i1 = lower_bound_back(starts, i0, n, hi)
    while i1 > i0 and ends[i1 - 1] > hi:
        i1 -= 1
    return i0, i1


@_jit
def ordinals(s, e, i0, i1, shift, out):
    """Ordinal of each record among consecutive ones with the same start; returns the max."""
    top = 0
    for i in range(i0, i1):
        k = i - i0
        if i > i0 and s[i] == s[i - 1]:
            out[k] = out[k - 1] + 1
            top = max(top, out[k])
        else:
            out[k] = 0
    return top


@_jit
def longest_run(c_ids, c_s, c_e, ci0, ci1, cshift, f_ids, f_s, f_e, fj0, fj1, fshift, wk):
    """Longest run of consecutive equal (start, end, ordinal, id) records (``repair.longest_equal_run``).

    Cached records ``[ci0, ci1)`` (spans + ``cshift``) against fresh ones ``[fj0, fj1)``
    (spans + ``fshift``).  Leaves cached ordinals in ``wk.c_ord``; returns
    (first, fresh_first, length) relative to the region starts, or length 0.
    """
    nc = ci1 - ci0
    nf = fj1 - fj0
    if nc <= 0 or nf <= 0:
        return 0, 0, 0
    c_ord = wk.c_ord
    fk = wk.f_key
    if nc > c_ord.size or nf > fk.size:  # cannot happen (records <= window bytes); never write past
        return 0, 0, 0
    if ordinals(c_s, c_e, ci0, ci1, 0, c_ord) >= (1 << ORD_BITS):
        return 0, 0, 0
    if ordinals(f_s, f_e, fj0, fj1, 0, fk) >= (1 << ORD_BITS):
        return 0, 0, 0
    for k in range(nf):
        fk[k] = ((f_s[fj0 + k] + fshift) << ORD_BITS) + fk[k]
        if k > 0 and fk[k] <= fk[k - 1]:
            return 0, 0, 0  # spans not in order: do not guess
    best_first = 0
    best_j = 0
    best_len = 0
    run_first = -1
    run_j = 0
    run_len = 0
    prev_j = -2
    for i in range(nc):
        key = ((c_s[ci0 + i] + cshift) << ORD_BITS) + c_ord[i]
        j = lower_bound(fk, 0, nf, key)
        ok = (
            j < nf
            and fk[j] == key
            and f_e[fj0 + j] + fshift == c_e[ci0 + i] + cshift
            and f_ids[fj0 + j] == c_ids[ci0 + i]
        )
        if ok and run_len > 0 and j == prev_j + 1:
            run_len += 1
        else:
            if run_len > 0 and run_len >= best_len:
                best_first, best_j, best_len = run_first, run_j, run_len
            if ok:
                run_first, run_j, run_len = i, j, 1
            else:
                run_len = 0
        prev_j = j if ok else -2
    if run_len > 0 and run_len >= best_len:
        best_first, best_j, best_len = run_first, run_j, run_len
    return best_first, best_j, best_len


@_jit
def straddles_literal(cps, nw, pos, ra):
    """Does an added-token literal occurrence in the window cover both ``pos-1`` and ``pos``?"""
    lo = max(0, pos - ra.margin + 1)
    for s in range(lo, pos):
        if ra.lit_first[cps[s]] != 0:
            e, _ = literal_at(cps, s, nw, ra.lit_first, ra.lit_keys, ra.lit_child, ra.lit_term)
            if e > pos:
                return True
    return False


@_jit
def certify(ra, cps, nw, ws, c_ids, c_s, c_e, ci0, cshift, c_ord, first, length, min_boundary,
            prefer_last):  # fmt: skip
    """Index (relative to ``ci0``) of a certified boundary record in the run, or -1 (``repair._certify_run``)."""
    if length < 2:
        return -1
    a = c_s[ci0 + first] + cshift
    b = c_e[ci0 + first + length - 1] + cshift
    covered = b - a
    if ra.nfc:
        # NFC never merges a safe character into another one: they bound the normalized length
        covered = 0
        for q in range(a - ws, b - ws):
            if not ra.unsafe[cps[q]]:
                covered += 1
    if covered <= ra.longest_token:
        return -1
    for t in range(length):
        k = first + length - 1 - t if prefer_last else first + t
        if c_ord[k] != 0:
            continue
        p = c_s[ci0 + k] + cshift
        if p < min_boundary or p - 1 < ws:
            continue
        if ra.wordpiece and ra.continuation[c_ids[ci0 + k]]:
            continue
        x = cps[p - 1 - ws]
        y = cps[p - ws]
        if not ra.stable[ra.class_of[x], ra.class_of[y]]:
            continue
        if ra.nfc and (ra.unsafe[x] or ra.unsafe[y]):
            continue
        if not straddles_literal(cps, nw, p - ws, ra):
            return k
    return -1


@_jit
def find_cut(ra, cps, nw, ws, prefix, c_s, c_e, n):
    """The cut splice's point (``repair.find_cut``): the last cached record ``k`` whose start
    ``q`` lies in ``[ws + margin + 1, prefix - 1]``, begins its character (ordinal 0) with
    nothing cached across it, and is a stable, NFC-safe pair that no literal straddles in
    the new text; -1: none.  Records ``[0, k)`` then stay and the new text is encoded from
    ``q`` alone."""
    if not ra.cut_splice or ws <= 0:
        return -1
    lo = ws + ra.margin + 1
    k = lower_bound_back(c_s, 0, n, prefix) - 1  # last record starting before the prefix's end
    while k >= 1 and c_s[k] >= lo:
        q = c_s[k]
        if c_s[k - 1] < q and c_e[k - 1] <= q and q <= prefix - 1 and q - ws < nw:
            x = cps[q - 1 - ws]
            y = cps[q - ws]
            stable = ra.stable[ra.class_of[x], ra.class_of[y]]
            safe = not (ra.nfc and (ra.unsafe[x] or ra.unsafe[y]))
            if stable and safe and not straddles_literal(cps, nw, q - ws, ra):
                return k
        k -= 1
    return -1


@_jit
def find_right_cut(ra, cps, nw, ws, we, new_len, right_start, c_s, c_e, n, shift):
    """An edit's right cut (``repair.find_right_cut``): the first cached record ``k`` whose
    start ``q`` (new text: ``c_s[k] + shift``) lies in ``[right_start + 1, last]``, begins its
    character with nothing cached across it, and is a pair of the engine's cut rule,
    NFC-safe, that no literal straddles in the new text; -1: none.  ``last`` keeps the
    literal check inside the window.  The new text is then encoded up to ``q`` only and
    the cached records from ``k`` on follow, shifted."""
    if not ra.cut_splice or right_start >= new_len:
        return -1
    last = we - 1 if we >= new_len else we - ra.margin - 1
    k = max(lower_bound(c_s, 0, n, right_start + 1 - shift), 1)
    while k < n:
        q0 = c_s[k]
        q = q0 + shift
        if q > last:
            break
        if c_s[k - 1] < q0 and c_e[k - 1] <= q0:
            x = cps[q - 1 - ws]
            y = cps[q - ws]
            cut = ra.cut_stable[ra.class_of[x], ra.class_of[y]]
            safe = not (ra.nfc and (ra.unsafe[x] or ra.unsafe[y]))
            if cut and safe and not straddles_literal(cps, nw, q - ws, ra):
                return k
        k += 1
    return -1


@_jit
def plan_core(ra, cps, nw, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s, c_e, n,
              f_ids, f_s, f_e, nf, wk, cut_k, rcut_k):  # fmt: skip
    """Match and certify one window; fresh records in window coordinates.  Fills ``wk.res``.

    ``cut_k`` >= 0 (``find_cut``): the fresh records were encoded from that cached record's
    start, and the left side is the cut there (no run to match).  ``rcut_k`` >= 0
    (``find_right_cut``): they were encoded up to that cached record's start (shifted),
    and the right side is the cut there."""
    res = wk.res
    shift = new_len - old_len
    right_start = new_len - suffix
    res[R_STATUS] = FAILED
    res[R_N_FRESH] = nf
    res[R_LEFT_OK] = 1
    res[R_RIGHT_OK] = 1
    res[R_WHY_SIDE] = 0
    res[R_WHY_KIND] = 0
    res[R_RUN_LEN] = 0
    keep_left = 0
    fresh_from = 0
    b_left = -1
    res[R_CUT] = cut_k
    res[R_RCUT] = rcut_k
    if ws > 0 and cut_k >= 0:
        keep_left = cut_k
        b_left = c_s[cut_k]
    elif ws > 0:
        res[R_LEFT_OK] = 0
        lo = ws + ra.margin
        hi = prefix
        ci0, ci1 = in_region(c_s, c_e, n, lo, hi)
        fj0, fj1 = in_region(f_s, f_e, nf, lo - ws, hi - ws)
        first, ffirst, length = longest_run(
            c_ids, c_s, c_e, ci0, ci1, 0, f_ids, f_s, f_e, fj0, fj1, ws, wk
        )
        res[R_WHY_SIDE] = 1
        if length == 0:
            res[R_WHY_KIND] = WHY_NO_RUN
            return
        k = certify(ra, cps, nw, ws, c_ids, c_s, c_e, ci0, 0, wk.c_ord, first, length, ws + 1,
                    True)  # fmt: skip
        if k < 0:
            res[R_WHY_KIND] = WHY_NO_BOUNDARY
            res[R_RUN_LEN] = length
            return
        res[R_LEFT_OK] = 1
        keep_left = ci0 + k
        fresh_from = fj0 + ffirst + (k - first)
        b_left = c_s[ci0 + k]
    fresh_to = nf
    keep_right = -1
    b_right = -1
    if rcut_k >= 0:
        keep_right = rcut_k
        b_right = c_s[rcut_k] + shift
        if nf > 0 and f_e[nf - 1] + ws > b_right:  # cannot happen: encoded up to the cut
            res[R_RIGHT_OK] = 0
            return
    elif we < new_len:
        res[R_RIGHT_OK] = 0
        lo = right_start
        hi = we - ra.margin
        # cached records live in A's coordinates: find them there, shift only the compares
        ci0, ci1 = in_region(c_s, c_e, n, lo - shift, hi - shift)
        fj0, fj1 = in_region(f_s, f_e, nf, lo - ws, hi - ws)
        first, ffirst, length = longest_run(
            c_ids, c_s, c_e, ci0, ci1, shift, f_ids, f_s, f_e, fj0, fj1, ws, wk
        )
        res[R_WHY_SIDE] = 2
        if length == 0:
            res[R_WHY_KIND] = WHY_NO_RUN
            return
        k = certify(ra, cps, nw, ws, c_ids, c_s, c_e, ci0, shift, wk.c_ord, first, length,
                    right_start + 1, False)  # fmt: skip
        if k < 0:
            res[R_WHY_KIND] = WHY_NO_BOUNDARY
            res[R_RUN_LEN] = length
            return
        res[R_RIGHT_OK] = 1
        keep_right = ci0 + k
        fresh_to = fj0 + ffirst + (k - first)
        b_right = c_s[ci0 + k] + shift
    if fresh_from > fresh_to:
        return
    res[R_STATUS] = OK
    res[R_KEEP_LEFT] = keep_left
    res[R_FRESH_FROM] = fresh_from
    res[R_FRESH_TO] = fresh_to
    res[R_KEEP_RIGHT] = keep_right
    res[R_B_LEFT] = b_left
    res[R_B_RIGHT] = b_right
    right_n = 0 if keep_right < 0 else n - keep_right
    new_n = keep_left + (fresh_to - fresh_from) + right_n
    res[R_NEW_N] = new_n
    # Leading IDs the new sequence shares with the old one: at least keep_left, often more
    # (fresh tokens right of the splice point that did not change).
    keep = keep_left
    m = fresh_to - fresh_from
    while keep < n and keep < new_n:
        t = keep - keep_left
        v = f_ids[fresh_from + t] if t < m else c_ids[keep_right + (t - m)]
        if v != c_ids[keep]:
            break
        keep += 1
    res[R_KEEP] = keep


@_jit_nrt
def apply_if_free(apply_now, c_ids, c_s, c_e, n, f_ids, f_s, f_e, ws, shift, res):
    """Write an OK plan into the session arrays now, when the caller allows it (no reader
    holds them) and they have room; the caller then only publishes the new count."""
    res[R_APPLIED] = 0
    if not apply_now or res[R_STATUS] != OK or res[R_NEW_N] > c_ids.size:
        return
    apply(c_ids, c_s, c_e, n, res[R_KEEP], res[R_KEEP_LEFT], f_ids, f_s, f_e, res[R_FRESH_FROM],
          res[R_FRESH_TO], res[R_KEEP_RIGHT], shift, ws)  # fmt: skip
    res[R_APPLIED] = 1


# --- entry points ------------------------------------------------------------------------
@_jit_nrt
def plan_engine(u8, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s, c_e, n, ctx, apply_now,
                nfc_stable):  # fmt: skip
    """Encode the window ``u8`` (UTF-8 of the new text's ``[ws, we)``) and plan the splice;
    with ``apply_now``, also write it (``apply_if_free``).  Returns the status
    (``res[R_STATUS]`` of ``ctx.wk``, where the rest of the plan is).

    Status NEED_RECORDS when an NFC tokenizer meets an NFC-unsafe character in the text
    to encode (from the cut) and the caller has not vouched, with ``nfc_stable``, that
    the reference's NFC leaves that text unchanged: the caller then asks the reference
    (``Planner``: one normalizer call over the text's NFC stretches) and either calls
    again with ``nfc_stable`` or encodes the window itself and calls ``plan_records``.
    """
    ea, wk = ctx.ea, ctx.wk
    if ea.ascii_direct and _all_ascii(u8):
        # An all-ASCII window is its own code points (no decode); its characters are its
        # bytes, so the records' spans need only the identity offsets.
        nw = u8.size
        for i in range(nw + 1):
            wk.char_start[i] = i
        nlit = ascii_literals(u8, ea.f1, ea.k1, ea.c1, ea.t1, ea.f2, ea.k2, ea.c2, ea.t2, ea.has2,
                              ea.lit_mode, ea.lit_b1, ea.lit_b2, wk.ls, wk.le, wk.lid)  # fmt: skip
        return plan_window(u8, u8, nw, nlit, True, ws, we, old_len, new_len, prefix, suffix,
                           c_ids, c_s, c_e, n, ctx, apply_now, nfc_stable)  # fmt: skip
    nw = _prepare(u8, ea.bits, wk.cps, wk.char_start, wk.fl)
    nlit = _find_literals(wk.cps, nw, ea.f1, ea.k1, ea.c1, ea.t1, ea.f2, ea.k2, ea.c2, ea.t2,
                          ea.has2, wk.ls, wk.le, wk.lid)  # fmt: skip
    return plan_window(u8, wk.cps, nw, nlit, False, ws, we, old_len, new_len, prefix, suffix,
                       c_ids, c_s, c_e, n, ctx, apply_now, nfc_stable)  # fmt: skip


@_jit_nrt
def plan_window(u8, cps, nw, nlit, ascii, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s,
                c_e, n, ctx, apply_now, nfc_stable):  # fmt: skip
    """``plan_engine`` after the window's characters (``cps``, ``nw`` of them: the decode, or
    the bytes themselves when ``ascii``) and literals (``nlit``, in ``wk.ls``...) are known."""
    ea, ra, wk = ctx.ea, ctx.ra, ctx.wk
    cut_k = find_cut(ra, cps, nw, ws, prefix, c_s, c_e, n)
    c0 = c_s[cut_k] - ws if cut_k >= 0 else 0  # encode from the cut: the old text before it stays
    shift = new_len - old_len
    rcut_k = find_right_cut(ra, cps, nw, ws, we, new_len, new_len - suffix, c_s, c_e, n, shift)
    c1 = c_s[rcut_k] + shift - ws if rcut_k >= 0 else nw  # ... and up to an edit's right cut
    wk.res[R_CUT] = cut_k
    wk.res[R_RCUT] = rcut_k
    if ea.nfc and not nfc_stable and not ascii:  # ASCII is NFC-safe
        for i in range(c0, c1):
            if wk.fl[i] & NFC_UNSAFE:
                wk.res[R_STATUS] = NEED_RECORDS
                return NEED_RECORDS
    lit0 = lower_bound(wk.ls, 0, nlit, c0)
    nf = encode_range(c0, c1, cps, wk.fl, ea.fold, ea.family, u8, wk.char_start, wk.ls, wk.le,
                      wk.lid, lit0, nlit, ea.bpe, wk.ends, wk.sym, wk.rank, wk.nxt, wk.prv,
                      wk.heap, ctx.cache, ctx.lcache, wk.f_ids, wk.f_s, wk.f_e, 0, True,
                      wk.ring, ascii)  # fmt: skip
    plan_core(ra, cps, nw, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s, c_e, n,
              wk.f_ids, wk.f_s, wk.f_e, nf, wk, cut_k, rcut_k)  # fmt: skip
    apply_if_free(apply_now, c_ids, c_s, c_e, n, wk.f_ids, wk.f_s, wk.f_e, ws, new_len - old_len,
                  wk.res)  # fmt: skip
    return wk.res[R_STATUS]


@_jit_nrt
def plan_sentencepiece(u8, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s, c_e, n, sa, ra,
                       cache, wk, apply_now):  # fmt: skip
    """``plan_engine`` for SentencePiece BPE: the window encoded by ``engine.sentencepiece``'s
    rules (the window is a whole text: it starts a segment), then the same plan.

    ``wk`` must hold ``2 * u8.size + 2`` fresh records (a "▁" per segment on top of a
    token per byte)."""
    nw = utf8_decode(u8, wk.cps, wk.char_start)
    nlit = _find_literals(wk.cps, nw, sa.f1, sa.k1, sa.c1, sa.t1, sa.f2, sa.k2, sa.c2, sa.t2,
                          sa.has2, wk.ls, wk.le, wk.lid)  # fmt: skip
    nf = _sp_range(0, nw, True, wk.cps, u8, wk.char_start, wk.ls, wk.le, wk.lid, 0, nlit, sa.sp,
                   sa.bpe, wk.sym, wk.rank, wk.nxt, wk.prv, wk.heap, cache, True, wk.f_ids, wk.f_s,
                   wk.f_e, 0)  # fmt: skip
    plan_core(ra, wk.cps, nw, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s, c_e, n,
              wk.f_ids, wk.f_s, wk.f_e, nf, wk, -1, -1)  # fmt: skip
    apply_if_free(apply_now, c_ids, c_s, c_e, n, wk.f_ids, wk.f_s, wk.f_e, ws, new_len - old_len,
                  wk.res)  # fmt: skip


@_jit_nrt
def plan_records(cps, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s, c_e, n, f_ids, f_s,
                 f_e, ra, wk, apply_now, cut_k, rcut_k):  # fmt: skip
    """Plan the splice for fresh records the caller encoded (window coordinates; from the
    start of cached record ``cut_k`` when it is >= 0, ``find_cut``, and up to the shifted
    start of ``rcut_k`` when it is >= 0, ``find_right_cut``)."""
    plan_core(ra, cps, cps.size, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s, c_e, n,
              f_ids, f_s, f_e, f_ids.size, wk, cut_k, rcut_k)  # fmt: skip
    apply_if_free(apply_now, c_ids, c_s, c_e, n, f_ids, f_s, f_e, ws, new_len - old_len, wk.res)


@_jit_nrt
def apply(ids, starts, ends, n, keep, keep_left, f_ids, f_s, f_e, fresh_from, fresh_to,
          keep_right, shift, ws):  # fmt: skip
    """Write a planned splice into the session arrays (capacity >= the new count).

    Records ``[0, keep)`` already hold the right values.  The kept right part of an
    edit moves to its new index (in the safe direction for the overlap) and its
    spans shift by ``shift`` characters; fresh spans shift by ``ws``.
    """
    m = fresh_to - fresh_from
    right_n = 0 if keep_right < 0 else n - keep_right
    mid_end = keep_left + m
    new_n = mid_end + right_n
    if right_n > 0 and mid_end != keep_right:
        if mid_end > keep_right:
            for t in range(right_n - 1, -1, -1):
                ids[mid_end + t] = ids[keep_right + t]
                starts[mid_end + t] = starts[keep_right + t] + shift
                ends[mid_end + t] = ends[keep_right + t] + shift
        else:
            for t in range(right_n):
                ids[mid_end + t] = ids[keep_right + t]
                starts[mid_end + t] = starts[keep_right + t] + shift
                ends[mid_end + t] = ends[keep_right + t] + shift
    elif right_n > 0 and shift != 0:
        for t in range(right_n):
            starts[mid_end + t] += shift
            ends[mid_end + t] += shift
    for t in range(m):
        q = keep_left + t
        if q >= keep:
            ids[q] = f_ids[fresh_from + t]
        starts[q] = f_s[fresh_from + t] + ws
        ends[q] = f_e[fresh_from + t] + ws
    return new_n


# --- the Python side: tables, workspaces, the widening loop -------------------------------
def engine_args(engine) -> EngineArgs:
    """The tables of a ``CpuEngine`` as one named tuple."""
    t = engine.tables
    return EngineArgs(t.bits, t.fold, t.family_code, t.nfc, *engine._trie_args, engine.bpe,
                      engine._ascii_direct, *engine._ascii_literals)  # fmt: skip


def repair_args(tok, rules) -> RepairArgs:
    """The certificate's tables for one tokenizer (``repair.RepairRules``, as arrays)."""
    from .tables import build_trie

    literals = sorted({t.content for t in tok.added_tokens if t.content})
    trie = build_trie([(lit, k) for k, lit in enumerate(literals)])
    unsafe = rules.nfc_unsafe if rules.nfc_unsafe is not None else np.zeros(1, dtype=bool)
    cont = rules.continuation if rules.continuation is not None else np.zeros(1, dtype=bool)
    return RepairArgs(
        class_of=rules.class_of,
        stable=np.ascontiguousarray(rules.stable),
        nfc=rules.nfc_unsafe is not None,
        unsafe=np.ascontiguousarray(unsafe),
        margin=int(rules.margin),
        longest_token=int(rules.longest_token),
        wordpiece=rules.continuation is not None,
        continuation=cont,
        lit_first=trie.first,
        lit_keys=trie.keys,
        lit_child=trie.child,
        lit_term=trie.term,
        cut_splice=bool(rules.cut_splice),
        cut_stable=np.ascontiguousarray(
            rules.cut_stable if rules.cut_stable is not None else np.zeros((1, 1), dtype=bool)
        ),
    )


class Planned:
    """One compiled repair call's outcome: a certified splice (``ok``) or why there is none.

    ``res`` is the plan's result slots as Python ints, and ``keep`` (leading IDs the new
    sequence shares with the old one), ``new_n`` (records after the splice), ``applied``
    (already written into the session arrays: ``apply_now``) and ``boundaries`` (the
    certified splice points, characters) are read off it once, as plain attributes;
    ``fresh`` the fresh records (window coordinates, in this thread's workspace until its
    next plan).
    """

    __slots__ = ("_apply", "applied", "boundaries", "fresh", "keep", "new_n", "ok", "reason",
                 "res", "widenings", "window_chars", "ws")  # fmt: skip

    def __init__(self, ok, res, widenings, reason, window_chars, ws, fresh, apply_fn):
        self.ok, self.res, self.widenings, self.reason = ok, res, widenings, reason
        self.window_chars, self.ws, self.fresh, self._apply = window_chars, ws, fresh, apply_fn
        self.keep, self.new_n, self.applied = res[R_KEEP], res[R_NEW_N], res[R_APPLIED] == 1
        b_left, b_right = res[R_B_LEFT], res[R_B_RIGHT]
        self.boundaries = (b_left if b_left >= 0 else None, b_right if b_right >= 0 else None)

    def apply(self, ids, starts, ends, n: int, shift: int) -> int:
        """Write the splice into arrays of capacity >= ``new_n``; returns the new count."""
        r = self.res
        f_ids, f_s, f_e = self.fresh
        return self._apply(ids, starts, ends, n, r[R_KEEP], r[R_KEEP_LEFT], f_ids, f_s, f_e,
                           r[R_FRESH_FROM], r[R_FRESH_TO], r[R_KEEP_RIGHT], shift, self.ws)  # fmt: skip


def _why(res) -> str:
    side = "left" if res[R_WHY_SIDE] == 1 else "right"
    if res[R_WHY_KIND] == WHY_NO_RUN:
        return f"{side}: no equal run"
    return f"{side}: run of {int(res[R_RUN_LEN])} tokens has no stable boundary"


class Planner:
    """The repair protocol's widening loop around the compiled calls, for one tokenizer.

    ``engine``: a ``CpuEngine`` or a ``SentencePieceEngine`` (the window is encoded inside
    the compiled call) or any
    engine with ``encode(text) -> (ids, starts, ends)`` (the reference for WordPiece):
    then only the window encode runs outside, and matching and certificate stay compiled.
    """

    def __init__(self, tok, rules, engine, *, cut: bool = True):
        ra = repair_args(tok, rules)
        self.ra = ra if cut else ra._replace(cut_splice=False)  # ``cut``: ``repair.plan``'s
        self.engine = engine
        self.ea = engine_args(engine) if isinstance(engine, cpu.CpuEngine) else None
        self.sa = engine.sp_args() if isinstance(engine, SentencePieceEngine) else None
        self._plan_sp = _Bound(plan_sentencepiece)
        self._local = threading.local()
        self._plan_engine = _Bound(plan_engine)
        self._plan_records = _Bound(plan_records)
        self._find_cut = _Bound(find_cut)
        self._find_right_cut = _Bound(find_right_cut)
        self._apply = _Bound(apply)
        self._apply_if_free = _Bound(apply_if_free)

    def _workspace(self, need: int) -> Workspace:
        wk = getattr(self._local, "wk", None)
        if wk is None or wk.cps.size < need + 1:
            grow = 2 * (wk.cps.size if wk is not None else 0)
            wk = self._local.wk = new_workspace(max(need, grow, 4096))
        return wk

    def window_context(self, need: int) -> tuple[WindowContext, Workspace]:
        """This thread's ``plan_engine`` context, its workspace holding ``need`` bytes."""
        local = self._local
        wk = getattr(local, "ctx_wk", None)
        if wk is None or wk.cps.size <= need or local.wk is not wk:
            wk = local.ctx_wk = self._workspace(need)
            local.ctx = WindowContext(self.ea, self.ra, *self.engine._cache(), wk)
        return local.ctx, wk

    def _nfc_stable_from_cut(self, wk: Workspace, nw: int, c_s, ws: int, shift: int = 0) -> bool:
        """Does the reference's NFC leave the window's text from the cut (to an edit's right
        cut) unchanged?

        ``plan_engine`` left the window's code points and flags in ``wk``.  One
        normalizer call over the NFC stretches around its unsafe characters
        (``cpu.nfc_changes``; the rest is NFC-stable by construction) instead of the
        engine's segmented path; if nothing changes, the engine's own encode of that
        text is the reference's (its input is what the reference sees).
        """
        cut_k = int(wk.res[R_CUT])
        c0 = int(c_s[cut_k]) - ws if cut_k >= 0 else 0
        rcut_k = int(wk.res[R_RCUT])  # (planned, not written: the arrays are as they were)
        c1 = int(c_s[rcut_k]) + shift - ws if rcut_k >= 0 else nw
        normalize = self.engine.tokenizer.hf.normalizer.normalize_str
        found = cpu.nfc_stretch_changes(normalize, wk.cps[c0:c1], wk.fl[c0:c1])
        if not found[2].any():
            return True
        # the same stretches of the same text, for the segmented path (``_records_status``)
        self._local.nfc_found = (c0, c1 - c0, found)
        return False

    def _engine_status(self, u8, nchars, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s,
                       c_e, n, apply_now):  # fmt: skip
        """``plan_engine`` over the window's UTF-8 ``u8`` (``nchars`` characters): its status,
        the workspace holding the result slots and fresh records.

        A window the engine may not encode alone (NFC-unsafe characters) is checked with
        one normalizer call (``_nfc_stable_from_cut``) and encoded all the same if NFC
        leaves it unchanged; NEED_RECORDS means the caller encodes it outside.
        """
        ctx, wk = self.window_context(u8.size)
        args = (u8, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s, c_e, n, ctx, apply_now)
        status = self._plan_engine(*args, False)
        if status == NEED_RECORDS and self._nfc_stable_from_cut(wk, nchars, c_s, ws,
                                                                new_len - old_len):  # fmt: skip
            status = self._plan_engine(*args, True)
        return status, wk

    def _records_status(self, text, u8, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s,
                        c_e, n, apply_now, cut_k, rcut_k, nfc_changed):  # fmt: skip
        """The window's records encoded outside the compiled call (by the engine's
        segmented path where NFC changes the text from the cut, ``nfc_changed``; by the
        reference-side engine for WordPiece), then matched by ``plan_records``:
        (workspace with the result slots, fresh records)."""
        cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        shift = new_len - old_len
        if self.ea is None and self.ra.cut_splice:  # a byte-level family on another engine
            cut_k = int(self._find_cut(self.ra, cps, cps.size, ws, prefix, c_s, c_e, n))
            rcut_k = int(self._find_right_cut(self.ra, cps, cps.size, ws, we, new_len,
                                              new_len - suffix, c_s, c_e, n, shift))  # fmt: skip
        c0 = int(c_s[cut_k]) - ws if cut_k >= 0 else 0
        c1 = int(c_s[rcut_k]) + shift - ws if rcut_k >= 0 else cps.size
        found, self._local.nfc_found = getattr(self._local, "nfc_found", None), None
        if nfc_changed:
            # the planner's NFC check of this very text from this cut, if it made one
            same = found is not None and found[:2] == (c0, c1 - c0)
            f_ids, f_s, f_e = self.engine.encode_nfc_changed(text[c0:c1],
                                                             found[2] if same else None)  # fmt: skip
        else:
            f_ids, f_s, f_e = self.engine.encode(text[c0:c1])
        # one dtype for fresh records on every path (one compiled specialization)
        f_ids = f_ids.astype(np.int64)
        f_s = f_s.astype(np.int64) + c0
        f_e = f_e.astype(np.int64) + c0
        wk = self._workspace(max(u8.size, len(f_ids)))
        self._plan_records(cps, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s, c_e, n,
                           f_ids, f_s, f_e, self.ra, wk, apply_now, cut_k, rcut_k)  # fmt: skip
        return wk, (f_ids, f_s, f_e)

    def _sentencepiece_status(self, u8, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s,
                              c_e, n, apply_now):  # fmt: skip
        """``plan_sentencepiece`` over the window's UTF-8 ``u8``: (status, workspace)."""
        wk = self._workspace(2 * u8.size + 2)
        self._plan_sp(u8, ws, we, old_len, new_len, prefix, suffix, c_ids, c_s, c_e, n, self.sa,
                      self.ra, self.engine._cache(), wk, apply_now)  # fmt: skip
        return int(wk.res[R_STATUS]), wk

    def first_window(self, state, window_text: str, ws: int, new_len: int, *,
                     apply_now: bool, u8: bytes | None = None) -> tuple[list, tuple | None] | None:  # fmt: skip
        """An append's first window in one compiled call: ``plan`` without its loop.

        ``window_text`` is the new text from ``ws`` to its end (``ws`` = the old length
        minus the window, or 0); ``u8`` its UTF-8 bytes if the caller has them.  Returns
        (result slots as a list, fresh records) of the certified splice -- the records in
        this thread's workspace, valid until its next plan; ``res[R_APPLIED]`` says whether
        it is written already (``first_window_plan`` makes the ``Planned`` that writes it
        otherwise) -- or (result slots, None) when the window was encoded and gives no
        certified splice (the caller passes the slots to ``plan`` as ``failed_first``, which
        then starts from the widening instead of encoding this window again), or None when
        this tokenizer has no compiled window encode (WordPiece: the reference encodes
        windows); nothing was written in either case, and the caller runs ``plan``.  No
        ``Planned`` is made on the common path: an append's answer reads the few slots it
        needs.  ``Tier._append`` makes this call itself (``first_window_call``, then
        ``first_window_finish`` only when the call did not write the splice): each Python
        call on this path costs 1-5 us after the engine's call has evicted the
        interpreter's caches (``tools/append-profile/fast_path_ab.py``).
        """
        u8 = np.frombuffer(window_text.encode("utf-8") if u8 is None else u8, dtype=np.uint8)
        if self.ea is not None:
            ctx, wk = self.window_context(u8.size)
            status = self.first_window_call(state, u8, ws, new_len, ctx, apply_now)
            return self.first_window_finish(state, window_text, u8, ws, new_len, apply_now,
                                            status, wk)  # fmt: skip
        if self.sa is None:
            return None
        old_len = state.text_length
        status, wk = self._sentencepiece_status(u8, ws, new_len, old_len, new_len, old_len, 0,
                                                state.ids, state.starts, state.ends, state.n,
                                                apply_now)  # fmt: skip
        return self._first_window_end(state, window_text, u8, ws, new_len, apply_now, status, wk)

    def first_window_call(self, state, u8: np.ndarray, ws: int, new_len: int,
                          ctx: WindowContext, apply_now: bool) -> int:  # fmt: skip
        """``first_window``'s one compiled call (a compiled engine; ``ctx`` from
        ``window_context``): its status, the rest in ``ctx``'s workspace.  ``Tier`` makes it
        itself and finishes with ``first_window_finish`` only when the splice was not written
        in that call."""
        old_len = state.text_length
        return self._plan_engine(u8, ws, new_len, old_len, new_len, old_len, 0, state.ids,
                                 state.starts, state.ends, state.n, ctx, apply_now, False)  # fmt: skip

    def first_window_finish(self, state, window_text: str, u8: np.ndarray, ws: int,
                            new_len: int, apply_now: bool, status: int,
                            wk: Workspace) -> tuple[list, tuple | None]:  # fmt: skip
        """``first_window``'s answer after ``first_window_call`` gave ``status``."""
        if status == OK:
            res = wk.res.tolist()
            if res[R_APPLIED] == 1 or not apply_now:
                return res, (wk.f_ids, wk.f_s, wk.f_e)
            return self._grow_and_apply(state, wk, (wk.f_ids, wk.f_s, wk.f_e), ws, new_len)
        old_len = state.text_length
        c_s = state.starts
        if status == NEED_RECORDS and self._nfc_stable_from_cut(wk, len(window_text), c_s,
                                                                ws):  # fmt: skip
            status = self._plan_engine(u8, ws, new_len, old_len, new_len, old_len, 0,
                                       state.ids, c_s, state.ends, state.n, self._local.ctx,
                                       apply_now, True)  # fmt: skip
        return self._first_window_end(state, window_text, u8, ws, new_len, apply_now, status, wk)

    def _first_window_end(self, state, window_text, u8, ws, new_len, apply_now, status, wk):
        """The shared end of ``first_window``: records from the segmented path where NFC
        changes the window (a compiled engine), then the answer for ``status``."""
        old_len = state.text_length
        fresh = (wk.f_ids, wk.f_s, wk.f_e)
        if status == NEED_RECORDS and self.ea is not None:
            # NFC changes the window's text from the cut: its records come from the engine's
            # segmented path, here, instead of ``plan`` encoding the window once more first
            wk, fresh = self._records_status(window_text, u8, ws, new_len, old_len, new_len,
                                             old_len, 0, state.ids, state.starts, state.ends,
                                             state.n, apply_now, int(wk.res[R_CUT]), -1,
                                             True)  # fmt: skip
            status = int(wk.res[R_STATUS])
        if status != OK:
            return wk.res.tolist(), None
        if apply_now and wk.res[R_APPLIED] != 1:
            return self._grow_and_apply(state, wk, fresh, ws, new_len)
        return wk.res.tolist(), fresh

    def _grow_and_apply(self, state, wk: Workspace, fresh: tuple, ws: int, new_len: int):
        """``first_window``'s answer for a splice its call could not write only because the
        session's arrays had no room: grow them (``reserve``: allocated before anything
        changes; no reader holds them, ``apply_now``) and write it in one more compiled call.

        Why: the writing otherwise took the general commit (``Planned``, ``commit_splice``,
        ``Tier._answer_splice``), and ~10% of the recorded continuation calls grow the arrays
        (``tools/append-profile/growth_real.py``); written here, such an append's P50 is
        6-20 us lower (``growth_ab.py``; ``reserve`` itself 9-22 us of what remains)."""
        res = wk.res
        if res[R_NEW_N] > state.ids.size:
            state.reserve(int(res[R_NEW_N]))
        f_ids, f_s, f_e = fresh
        self._apply_if_free(True, state.ids, state.starts, state.ends, state.n, f_ids, f_s, f_e,
                            ws, new_len - state.text_length, res)  # fmt: skip
        return res.tolist(), fresh

    def warm_grow_and_apply(self, state) -> None:
        """Type and load the compiled calls that requests make from Python besides
        ``plan_engine`` (``Tier`` construction): ``_grow_and_apply``'s write (the first request
        that grows a session's arrays paid ~10 ms of cache load inside it) and the widening's
        probe for a cut (a compile of seconds).  Nothing is written (the write is told it may
        not; the probe's window starts at the text's start, where it looks no further)."""
        wk = self._workspace(64)
        self._apply_if_free(False, state.ids, state.starts, state.ends, state.n, wk.f_ids,
                            wk.f_s, wk.f_e, 0, 0, wk.res)  # fmt: skip
        if self.ra.cut_splice:  # and the widening's probe for a cut (``plan``, ``widen_left``)
            cps = np.frombuffer("ab".encode("utf-32-le"), dtype=np.uint32)
            self._find_cut(self.ra, cps, cps.size, 0, 0, state.starts, state.ends, state.n)
            self._find_right_cut(self.ra, cps, cps.size, 0, 2, 2, 2, state.starts, state.ends,
                                 state.n, 0)  # fmt: skip

    def first_window_plan(self, res: list, fresh: tuple, ws: int, new_len: int) -> Planned:
        """``first_window``'s splice as a ``Planned`` (to write it, when the call did not)."""
        return Planned(True, res, 0, _ok_reason(ws, new_len, new_len, 0),
                       new_len - _encoded_from(res, ws), ws, fresh, self._apply)  # fmt: skip

    @staticmethod
    def written_splice(res: list, ws: int, new_len: int) -> tuple | None:
        """(records after it, leading IDs kept, reason, window characters, boundaries) of a
        ``first_window`` splice its compiled call wrote already; None if it did not."""
        if res[R_APPLIED] != 1:
            return None
        b_left = res[R_B_LEFT]
        return (res[R_NEW_N], res[R_KEEP], _ok_reason(ws, new_len, new_len, 0),
                new_len - _encoded_from(res, ws), (b_left if b_left >= 0 else None, None))  # fmt: skip

    def plan(self, state, old_len, new_len, prefix, suffix, window_text, *, window,
             max_widenings, apply_now=False, failed_first: list | None = None) -> Planned:  # fmt: skip
        """Find a certified splice for the new text (``repair.plan``'s loop).

        Mutates nothing, unless ``apply_now``: then an OK splice that fits the session's
        arrays is also written into them (``Planned.applied``), and the caller publishes
        the new count and text.  Pass it only when no snapshot reads the arrays.
        ``window_text(ws, we)`` returns the new text's ``[ws, we)``.  The fresh records of
        the returned plan live in this thread's workspace until its next call.
        ``failed_first``: the result slots of ``first_window`` for this very append and
        window, which found no splice; the loop goes on from there without encoding it again.
        """
        c_s, c_e, n = state.starts, state.ends, state.n
        right_start = new_len - suffix
        wl = wr = window
        widenings = steps = 0  # doublings (reported); widening steps (the budget)
        why = ""
        res = failed_first
        while True:
            ws = max(0, prefix - wl)
            we = min(new_len, right_start + wr)
            if res is None:
                res, fresh = self._window_slots(state, window_text, ws, we, old_len, new_len,
                                                prefix, suffix, apply_now)  # fmt: skip
                if res[R_STATUS] == OK:
                    reason = _ok_reason(ws, we, new_len, widenings)
                    chars = _encoded_to(res, we) - _encoded_from(res, ws)
                    return Planned(True, res, widenings, reason, chars, ws, fresh,
                                   self._apply)  # fmt: skip
            if res[R_WHY_KIND]:
                why = _why(res)
            if steps >= max_widenings:
                reason = f"no certified splice after {widenings} widenings ({why})"
                return Planned(False, res, widenings, reason, we - ws, ws, None, self._apply)
            if not res[R_LEFT_OK] and self.ra.cut_splice:

                def has_cut(ws, we=we):
                    cps = np.frombuffer(window_text(ws, we).encode("utf-32-le"), dtype=np.uint32)
                    return self._find_cut(self.ra, cps, cps.size, ws, prefix, c_s, c_e, n) >= 0

                wl, k = widen_left(wl, prefix, has_cut)
            elif not res[R_LEFT_OK]:
                wl, k = wl * 2, 1
            elif self.ra.cut_splice:

                def has_right_cut(we, ws=ws):
                    cps = np.frombuffer(window_text(ws, we).encode("utf-32-le"), dtype=np.uint32)
                    return self._find_right_cut(self.ra, cps, cps.size, ws, we, new_len,
                                                right_start, c_s, c_e, n,
                                                new_len - old_len) >= 0  # fmt: skip

                wr, k = widen_right(wr, right_start, new_len, has_right_cut)
            else:
                wr, k = wr * 2, 1
            widenings += k
            steps += 1
            res = None

    def _window_slots(self, state, window_text, ws, we, old_len, new_len, prefix, suffix,
                      apply_now) -> tuple[list, tuple]:  # fmt: skip
        """One window of ``plan``, encoded and matched: (result slots, fresh records)."""
        c_ids, c_s, c_e, n = state.ids, state.starts, state.ends, state.n
        text = window_text(ws, we)
        u8 = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        status = NEED_RECORDS
        if self.sa is not None:
            status, wk = self._sentencepiece_status(u8, ws, we, old_len, new_len, prefix, suffix,
                                                    c_ids, c_s, c_e, n, apply_now)  # fmt: skip
            fresh = (wk.f_ids, wk.f_s, wk.f_e)
        elif self.ea is not None:
            status, wk = self._engine_status(u8, len(text), ws, we, old_len, new_len, prefix,
                                             suffix, c_ids, c_s, c_e, n, apply_now)  # fmt: skip
            fresh = (wk.f_ids, wk.f_s, wk.f_e)
        if status == NEED_RECORDS:
            # plan_engine found the cut (if any) already, and that NFC changes the text
            # from there (else it would have encoded the window itself)
            cut_k = int(wk.res[R_CUT]) if self.ea is not None else -1
            rcut_k = int(wk.res[R_RCUT]) if self.ea is not None else -1
            wk, fresh = self._records_status(text, u8, ws, we, old_len, new_len, prefix, suffix,
                                             c_ids, c_s, c_e, n, apply_now, cut_k, rcut_k,
                                             self.ea is not None)  # fmt: skip
        return wk.res.tolist(), fresh


def _encoded_from(res, ws: int) -> int:
    """Where a plan's window encode started: the cut splice's point, else the window's start."""
    return int(res[R_B_LEFT]) if res[R_CUT] >= 0 else ws


def _encoded_to(res, we: int) -> int:
    """Where a plan's window encode ended: an edit's right cut, else the window's end."""
    return int(res[R_B_RIGHT]) if res[R_RCUT] >= 0 else we


def _ok_reason(ws: int, we: int, new_len: int, widenings: int) -> str:
    if ws == 0 and we == new_len:
        return REASON_WHOLE_TEXT
    if widenings == 0:
        return REASON_FIRST_WINDOW
    return f"splice after {widenings} widening{'s' if widenings > 1 else ''}"
