"""Incremental repair with a certified splice (paper §3.2–3.4, App. A).

A session stored text ``A`` with its token records.  A new text ``T`` shares a
prefix of ``P`` characters and a suffix of ``Q`` characters with ``A`` (an
append is ``P = len(A)``, ``Q = 0``).  Repair encodes only a window around the
changed region, ``T[ws:we]``, and joins it to the cached records:

0. **Cut** (byte-level BPE families, ``find_cut``).  If the old text holds a stable
   pair close to the change -- the last cached record start ``q`` at least ``margin``
   characters into the window and before the change, with no literal straddling it --
   the session is cut there: cached records left of ``q`` stay and only ``T[q:we]`` is
   encoded.  No old text is re-encoded and no run is needed: at a stable pair the
   pre-tokenizer restarts whatever the left context and its pieces right of ``q`` are
   those of ``T[q:]`` alone (the certificate-level oracle checks both for every pair;
   the engine's parallel cuts rest on the same fact), and BPE never joins two pieces.
   Otherwise (no such pair, WordPiece, SentencePiece) the run protocol below.  An
   edit's right side is cut the same way (``find_right_cut``): at the first cached
   record in the common suffix that is a cut of the engine's rule, the new text's
   encode ends and the cached records from there follow, shifted.
1. **Match.**  Fresh and cached records that lie wholly inside a search region
   (outside the added-literal margin of the window edge) are keyed by
   ``(start, end, ordinal among records with that start, id)``; the longest run of
   consecutive equal records is taken.
2. **Accept** it only if the run has >= 2 tokens, covers more (normalized)
   characters than the longest token the vocabulary can emit (for NFC families
   counted as the run's NFC-safe characters, a lower bound of its normalized
   length), and contains a
   **stable boundary** ``p``: a record start where the character pair
   ``(T[p-1], T[p])`` is in the family's synchronizing set
   (``families.stability``), no added-token literal occurrence straddles ``p``,
   and, for NFC families, both characters are NFC-safe.
3. **Splice** exactly at ``p``: cached records left of it, fresh records right
   of it (and, for an edit, fresh records up to a second certified boundary
   ``p2`` in the common suffix, then the cached records from there, shifted).
4. Otherwise widen the failing side ×2 and retry, at most ``max_widenings``
   times; then give up (the caller encodes the full text).  A miss costs time,
   never IDs.  With cut splices a failing side grows straight to the first
   doubling that holds a cut (``widen_left``, ``widen_right``), one step of the
   budget however many doublings it passes.

Work per append is O(Δ + w): the window encode (from the cut: O(Δ) plus a few characters), a few numpy passes over the
window's records, and an in-place write of the new tail.  An edit between two cuts encodes
its changed characters and a few around them.

This module is the readable reference implementation.  ``Tier`` serves requests
with ``engine.splice``, the same protocol compiled (identical splices, checked by
``tests/test_splice.py``); ``Tier(repair="python")`` runs this one.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import numpy as np

from .families import stability

DEFAULT_WINDOW = 512  # repair.plan's default; Tier sizes its window per tokenizer
WINDOW_SLACK = 160  # characters beyond the certificate's minimum (default_window)
DEFAULT_MAX_WIDENINGS = 5
_ORD_BITS = 6  # ordinal among records sharing one start (a character has <= 4 bytes)


def default_window(tok) -> int:
    """The smallest window of old text that usually certifies on the first try.

    The left run must start ``margin`` (the longest added literal) past the window's
    edge and cover more than the longest token, so no window below
    ``longest_token + margin`` can ever certify; ``WINDOW_SLACK`` more characters hold
    the old text's last token (which an append may change) and a token or two of
    play.  Measured on transcripts and multilingual prose for every repairable
    tokenizer (30K contexts, 40- and 1,100-character appends): a slack of 96 gave 0
    widenings in 960 appends each, but in the 500-session replay 5 of 19,663
    continuations widened once on llama3 and qwen3 (a tool output ending in a long
    run); 160 certifies those on the first window too, for ~1-2 us more.  Smaller windows are cheaper (the window is encoded on every
    request) and never less exact: the certificate does not depend on the window,
    and a window that does not certify is widened.
    """
    return int(tok.longest_token_chars + tok.longest_added_chars + WINDOW_SLACK)


class RepairRules:
    """Everything repair needs to know about one tokenizer, computed once."""

    def __init__(self, tok):
        self.family = tok.family
        self.rules = stability.rules(tok.family)
        if self.rules is None:
            raise ValueError(f"family {tok.family!r} is not repairable")
        table = tok.class_table
        self.class_of = stability.class_map_for(tok)
        self.nfc_unsafe = stability.nfc_unsafe_mask(table) if self.rules.nfc else None
        self.stable = self.rules.stable
        self.margin = tok.longest_added_chars
        self.longest_token = tok.longest_token_chars
        literals = sorted({t.content for t in tok.added_tokens if t.content}, key=len, reverse=True)
        self.literal_re = re.compile("|".join(map(re.escape, literals))) if literals else None
        self.literal_first = frozenset(lit[0] for lit in literals)
        # Byte-level BPE: pieces never cross a stable pair, so one in the old text is a cut
        # (``find_cut``).  Not WordPiece (continuation tokens) nor SentencePiece ("▁" segments).
        self.cut_splice = tok.family not in ("wordpiece", "sentencepiece")
        # An edit's right cut ends the encoded text there (end of input): the engine's cut
        # rule, whose matrix leaves out whitespace on the left (``stability.cut_matrix``).
        self.cut_stable = stability.cut_matrix(tok.family) if self.cut_splice else None
        self.continuation = None
        if tok.family == "wordpiece":
            vocab = tok.hf.get_vocab(with_added_tokens=True)
            cont = np.zeros(max(vocab.values()) + 1, dtype=bool)
            for t, i in vocab.items():
                cont[i] = t.startswith("##")
            self.continuation = cont

    def straddles_literal(self, text: str, pos: int) -> bool:
        """Does an added-token literal occurrence in ``text`` cover both ``pos-1`` and ``pos``?"""
        if self.literal_re is None:
            return False
        lo = max(0, pos - self.margin + 1)
        for s in range(lo, pos):
            if text[s] in self.literal_first:
                m = self.literal_re.match(text, s)  # longest first: the longest literal at s
                if m is not None and m.end() > pos:
                    return True
        return False


_RULES: dict[str, RepairRules] = {}
_RULES_LOCK = threading.Lock()


def rules_for(tok) -> RepairRules | None:
    """The (cached) repair rules of a tokenizer, or None if its family is never repaired."""
    if stability.rules(tok.family) is None:
        return None
    with _RULES_LOCK:
        r = _RULES.get(tok.sha256)
        if r is None:
            r = _RULES[tok.sha256] = RepairRules(tok)
        return r


@dataclass
class Splice:
    """A certified plan: records to keep and to take fresh.  Applied by the caller."""

    keep_left: int  # cached records [0, keep_left) stay
    fresh_from: int  # fresh records [fresh_from, fresh_to) go in the middle
    fresh_to: int
    keep_right_from: int | None  # cached records [keep_right_from, n) follow, shifted (edits)
    widenings: int
    boundary_left: int | None  # certified boundaries (characters in the new text)
    boundary_right: int | None


@dataclass
class Attempt:
    """What one repair call did, for stats and ``Result.reason``."""

    splice: Splice | None
    widenings: int
    reason: str
    window_chars: int
    fresh: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # global coordinates


def span_ordinals(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of each record among consecutive records with the same start.

    Several records share a start when a character is split into byte tokens, and
    where a SentencePiece segment starts with a space: the prepended "▁" and the
    space's own "▁..." token both begin at that character (spans (p, p+1), (p, q)).
    ``ends`` stays in the signature: the match compares ends separately.
    """
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    same = np.zeros(n, dtype=bool)
    same[1:] = starts[1:] == starts[:-1]
    idx = np.arange(n)
    group_start = np.where(same, 0, idx)
    np.maximum.accumulate(group_start, out=group_start)
    return idx - group_start


def _in_region(starts: np.ndarray, ends: np.ndarray, lo: int, hi: int) -> tuple[int, int]:
    """Index range of records with lo <= start and end <= hi (records sorted by start)."""
    # Search with a scalar of the array's own dtype: a Python int would make numpy
    # cast the whole (session-sized) array first, an O(N) copy per request.
    kind = starts.dtype.type
    lo_c = kind(min(max(lo, np.iinfo(starts.dtype).min), np.iinfo(starts.dtype).max))
    hi_c = kind(min(max(hi, np.iinfo(starts.dtype).min), np.iinfo(starts.dtype).max))
    i0 = int(np.searchsorted(starts, lo_c, side="left"))
    i1 = int(np.searchsorted(starts, hi_c, side="left"))
    while i1 > i0 and ends[i1 - 1] > hi:
        i1 -= 1
    return i0, i1


def longest_equal_run(c_ids, c_s, c_e, f_ids, f_s, f_e):
    """Longest run of consecutive equal (start, end, ordinal, id) records.

    Returns (cached_offset, fresh_offset, length, cached_ordinals) with offsets into the
    given arrays, or None.
    """
    if len(c_ids) == 0 or len(f_ids) == 0:
        return None
    c_ord = span_ordinals(c_s, c_e)
    f_ord = span_ordinals(f_s, f_e)
    if c_ord.max() >= 1 << _ORD_BITS or f_ord.max() >= 1 << _ORD_BITS:
        return None
    ck = (c_s.astype(np.int64) << _ORD_BITS) + c_ord
    fk = (f_s.astype(np.int64) << _ORD_BITS) + f_ord
    if len(fk) > 1 and not (fk[1:] > fk[:-1]).all():
        return None  # spans not in order: do not guess
    j = np.searchsorted(fk, ck)
    jc = np.minimum(j, len(fk) - 1)
    ok = (j < len(fk)) & (fk[jc] == ck) & (f_e[jc] == c_e) & (f_ids[jc] == c_ids)
    if not ok.any():
        return None
    linked = np.zeros(len(ok), dtype=bool)
    linked[1:] = ok[1:] & ok[:-1] & (j[1:] == j[:-1] + 1)
    run_start = ok & ~linked
    run_id = np.cumsum(run_start) - 1
    lengths = np.bincount(run_id[ok], minlength=int(run_start.sum()))
    best = len(lengths) - 1 - int(np.argmax(lengths[::-1]))  # longest; ties -> rightmost
    first = int(np.flatnonzero(run_start)[best])
    return first, int(j[first]), int(lengths[best]), c_ord


def _certify_run(
    rules: RepairRules,
    window: str,
    window_cps: np.ndarray,
    ws: int,
    c_ids: np.ndarray,
    c_s: np.ndarray,
    c_e: np.ndarray,
    c_ord: np.ndarray,
    first: int,
    length: int,
    min_boundary: int,
    prefer_last: bool,
) -> int | None:
    """Offset (into the given cached arrays) of a certified boundary record in the run, or None."""
    if length < 2:
        return None
    a, b = int(c_s[first]), int(c_e[first + length - 1])
    covered = b - a
    if rules.nfc_unsafe is not None:
        # Normalized coverage, bounded from below without normalizing: NFC never merges an
        # NFC-safe character into another one (only unsafe ones compose backward), so each
        # safe character of the run is at least one normalized character.
        covered = int((~rules.nfc_unsafe[window_cps[a - ws : b - ws]]).sum())
    if covered <= rules.longest_token:
        return None
    idx = np.arange(first, first + length)
    p = c_s[idx].astype(np.int64)
    cand = (c_ord[idx] == 0) & (p >= min_boundary) & (p - 1 >= ws)
    if rules.continuation is not None:
        cand &= ~rules.continuation[c_ids[idx]]
    if not cand.any():
        return None
    idx, p = idx[cand], p[cand]
    prev_cp = window_cps[p - 1 - ws]
    next_cp = window_cps[p - ws]
    ok = rules.stable[rules.class_of[prev_cp], rules.class_of[next_cp]]
    if rules.nfc_unsafe is not None:
        ok &= ~rules.nfc_unsafe[prev_cp] & ~rules.nfc_unsafe[next_cp]
    order = np.flatnonzero(ok)
    if prefer_last:
        order = order[::-1]
    for k in order:
        if not rules.straddles_literal(window, int(p[k]) - ws):
            return int(idx[k])
    return None


def find_cut(rules: RepairRules, window: str, window_cps: np.ndarray, ws: int, prefix: int,
             c_s: np.ndarray, c_e: np.ndarray) -> int | None:  # fmt: skip
    """The cut splice (step 0): index of the last cached record where the session may be cut.

    A cached record ``k`` starting at ``q`` in ``[ws + margin + 1, prefix - 1]`` qualifies
    when it is the first record of its character, no cached record crosses ``q``, the
    pair ``(T[q-1], T[q])`` is stable (and NFC-safe), and no added-token literal of the
    new text straddles ``q``.  Both characters lie in the common prefix, so the old and
    the new text split there alike: the pre-tokenizer restarts at a stable pair whatever
    the left context, and its pieces right of ``q`` are those of ``T[q:]`` alone (the
    certificate-level oracle checks both for every pair), and a BPE token never spans
    two pieces.  Records ``[0, k)`` then stay and only ``T[q:]`` is encoded: no window of
    old text, no run to match.  None: no such record; the run protocol follows.
    """
    if not rules.cut_splice or ws <= 0:
        return None
    lo = ws + rules.margin + 1
    k0 = int(np.searchsorted(c_s, c_s.dtype.type(max(lo, 1)), side="left"))
    k1 = int(np.searchsorted(c_s, c_s.dtype.type(prefix), side="left"))  # starts < prefix
    k0 = max(k0, 1)
    if k1 <= k0:
        return None
    k = np.arange(k0, k1)
    q = c_s[k].astype(np.int64)
    ok = (c_s[k - 1] < q) & (c_e[k - 1] <= q)
    x = window_cps[q - 1 - ws]
    y = window_cps[np.minimum(q - ws, len(window_cps) - 1)]
    ok &= rules.stable[rules.class_of[x], rules.class_of[y]]
    if rules.nfc_unsafe is not None:
        ok &= ~rules.nfc_unsafe[x] & ~rules.nfc_unsafe[y]
    for i in np.flatnonzero(ok)[::-1]:
        if not rules.straddles_literal(window, int(q[i]) - ws):
            return int(k[i])
    return None


def find_right_cut(rules: RepairRules, window: str, window_cps: np.ndarray, ws: int, we: int,
                   new_len: int, right_start: int, c_s: np.ndarray, c_e: np.ndarray,
                   shift: int) -> int | None:  # fmt: skip
    """An edit's right cut: index of the first cached record where the new text may end.

    A cached record ``k`` whose start ``q`` (new text: ``c_s[k] + shift``) has both
    characters of its pair in the common suffix (``q - 1 >= right_start``) qualifies when
    it is the first record of its character with nothing cached across it, the pair
    ``(T[q-1], T[q])`` is a cut of the engine's rule (``cut_stable``: the stable pairs
    without whitespace on the left), both characters are NFC-safe (NFC families), and no
    added-token literal of the new text straddles ``q`` -- checked inside the window, so
    ``q`` stays ``margin`` characters short of a window end that is not the text's.  The
    old and the new text then split at ``q`` alike: the cached records from ``k`` on are
    those of the shared ``T[q:]`` alone (the left cut's argument), and the new text's
    records left of ``q`` are those of ``T[:q]`` encoded with ``q`` as its end -- the fact
    the engine's parallel encode cuts on.  The new text is encoded from the left cut (or
    the window's start) to ``q`` only: no run to match on the right, no margin.  A stable
    pair with whitespace on the left is not enough: ``\\s+(?!\\S)`` looks one character
    past it (``results/runs/append-path/right-cut-prototype-2026-11-29.md``).  None: no
    such record in the window; the run protocol follows.
    """
    if not rules.cut_splice or right_start >= new_len:
        return None
    last = we - 1 if we >= new_len else we - rules.margin - 1  # the last usable q
    kind = c_s.dtype.type
    k0 = max(int(np.searchsorted(c_s, kind(right_start + 1 - shift), side="left")), 1)
    k1 = int(np.searchsorted(c_s, kind(last - shift), side="right"))  # q <= last
    if k1 <= k0:
        return None
    k = np.arange(k0, k1)
    q_old = c_s[k].astype(np.int64)
    ok = (c_s[k - 1] < q_old) & (c_e[k - 1] <= q_old)
    q = q_old + shift
    x = window_cps[q - 1 - ws]
    y = window_cps[q - ws]
    ok &= rules.cut_stable[rules.class_of[x], rules.class_of[y]]
    if rules.nfc_unsafe is not None:
        ok &= ~rules.nfc_unsafe[x] & ~rules.nfc_unsafe[y]
    for i in np.flatnonzero(ok):
        if not rules.straddles_literal(window, int(q[i]) - ws):
            return int(k[i])
    return None


def widen_right(wr: int, right_start: int, new_len: int, has_cut) -> tuple[int, int]:
    """``widen_left`` for an edit's right side: the first doubling whose window holds a
    right cut (``has_cut(we)``, ``find_right_cut``) or reaches the text's end, and how many
    doublings it counts.  A window with a right cut always splices on the right."""
    k = 1
    while (we := right_start + (wr << k)) < new_len and not has_cut(we):
        k += 1
    return wr << k, k


def widen_left(wl: int, prefix: int, has_cut) -> tuple[int, int]:
    """The left side's next window width after a failed window, for a tokenizer with cut
    splices, and how many doublings it counts: the first doubling whose old text holds a
    cut (``has_cut(ws)``) or that reaches the text's start, however many that takes; the
    windows before it are passed over without being encoded.

    Why: behind a long stretch without stable pairs (a letter run of thousands of
    characters) every doubling was encoded and failed, each encode longer than the last,
    before one reached past it (an append after a 5,000-letter run: 4 widenings, ~2.5 ms on
    llama3), and a stretch longer than the widening budget's window (~10K characters)
    ended in a full encode of the whole context.  A window with a cut always splices on
    the left and is encoded from the cut only, which costs less than a full encode at any
    distance, so the budget (``max_widenings``) no longer stops the left side: the request
    costs the text from the last cut plus the change.  Exactness does not depend on which
    window certifies (the certificate does not depend on the window); the windows passed
    over could only have certified by the run protocol.
    """
    k = 1
    while (ws := prefix - (wl << k)) > 0 and not has_cut(ws):
        k += 1
    return wl << k, k


def _codepoints(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)


def plan(
    rules: RepairRules,
    engine,
    cached: tuple[np.ndarray, np.ndarray, np.ndarray],
    old_len: int,
    new_len: int,
    prefix: int,
    suffix: int,
    window_text,
    *,
    window: int = DEFAULT_WINDOW,
    max_widenings: int = DEFAULT_MAX_WIDENINGS,
    cut: bool = True,
) -> Attempt:
    """Find a certified splice for ``T`` given ``A``'s records; does not mutate anything.

    ``window_text(ws, we)`` returns ``T[ws:we]``; ``prefix``/``suffix`` are the common
    prefix and suffix lengths of ``A`` and ``T`` (with prefix + suffix <= both lengths).
    ``cut``: try the cut splice first (step 0); False: the window-and-run protocol alone.
    """
    c_ids, c_s, c_e = cached
    shift = new_len - old_len
    right_start = new_len - suffix  # first character of the common suffix in T
    wl = wr = window
    widenings = steps = 0  # doublings (reported); widening steps (the budget)
    why = ""
    while True:
        ws = max(0, prefix - wl)
        we = min(new_len, right_start + wr)
        text = window_text(ws, we)
        cps = _codepoints(text)
        cut_k = find_cut(rules, text, cps, ws, prefix, c_s, c_e) if cut else None
        start = ws if cut_k is None else int(c_s[cut_k])  # the cut: encode the new text from it
        rcut_k = (find_right_cut(rules, text, cps, ws, we, new_len, right_start, c_s, c_e, shift)
                  if cut else None)  # fmt: skip
        end = we if rcut_k is None else int(c_s[rcut_k]) + shift  # ... and to the right cut
        f_ids, f_s, f_e = engine.encode(text[start - ws : end - ws])
        f_s = f_s + start
        f_e = f_e + start
        left_ok = right_ok = True
        keep_left, fresh_from, b_left = 0, 0, None
        if cut_k is not None:
            keep_left, b_left = cut_k, start
        elif ws > 0:
            left_ok = False
            lo, hi = ws + rules.margin, prefix
            ci0, ci1 = _in_region(c_s, c_e, lo, hi)
            fj0, fj1 = _in_region(f_s, f_e, lo, hi)
            run = longest_equal_run(
                c_ids[ci0:ci1],
                c_s[ci0:ci1],
                c_e[ci0:ci1],
                f_ids[fj0:fj1],
                f_s[fj0:fj1],
                f_e[fj0:fj1],
            )
            if run is None:
                why = "left: no equal run"
            else:
                first, ffirst, length, c_ord = run
                k = _certify_run(
                    rules, text, cps, ws, c_ids[ci0:ci1], c_s[ci0:ci1], c_e[ci0:ci1], c_ord,
                    first, length, min_boundary=ws + 1, prefer_last=True,
                )  # fmt: skip
                if k is None:
                    why = f"left: run of {length} tokens has no stable boundary"
                else:
                    left_ok = True
                    keep_left = ci0 + k
                    fresh_from = fj0 + ffirst + (k - first)
                    b_left = int(c_s[ci0 + k])
        fresh_to, keep_right_from, b_right = len(f_ids), None, None
        if rcut_k is not None:  # every fresh record ends at or before the cut
            keep_right_from, b_right = rcut_k, end
        elif left_ok and we < new_len:
            right_ok = False
            lo, hi = right_start, we - rules.margin
            # cached records live in A's coordinates: find them there, shift only the slice
            ci0, ci1 = _in_region(c_s, c_e, lo - shift, hi - shift)
            r_ids = c_ids[ci0:ci1]
            r_s = c_s[ci0:ci1].astype(np.int64) + shift
            r_e = c_e[ci0:ci1].astype(np.int64) + shift
            fj0, fj1 = _in_region(f_s, f_e, lo, hi)
            run = longest_equal_run(r_ids, r_s, r_e, f_ids[fj0:fj1], f_s[fj0:fj1], f_e[fj0:fj1])
            if run is None:
                why = "right: no equal run"
            else:
                first, ffirst, length, c_ord = run
                k = _certify_run(
                    rules, text, cps, ws, r_ids, r_s, r_e, c_ord,
                    first, length, min_boundary=right_start + 1, prefer_last=False,
                )  # fmt: skip
                if k is None:
                    why = f"right: run of {length} tokens has no stable boundary"
                else:
                    right_ok = True
                    keep_right_from = ci0 + k
                    fresh_to = fj0 + ffirst + (k - first)
                    b_right = int(r_s[k])
        if left_ok and right_ok and fresh_from <= fresh_to:
            splice = Splice(
                keep_left, fresh_from, fresh_to, keep_right_from, widenings, b_left, b_right
            )
            if widenings == 0:
                reason = "first-window splice"
            else:
                reason = f"splice after {widenings} widening{'s' if widenings > 1 else ''}"
            if ws == 0 and we == new_len:
                reason = "window covers the whole text"
            return Attempt(splice, widenings, reason, end - start, (f_ids, f_s, f_e))
        if steps >= max_widenings:
            return Attempt(
                None, widenings, f"no certified splice after {widenings} widenings ({why})", we - ws
            )
        if not left_ok and cut and rules.cut_splice:

            def has_cut(ws, we=we):
                t = window_text(ws, we)
                return find_cut(rules, t, _codepoints(t), ws, prefix, c_s, c_e) is not None

            wl, k = widen_left(wl, prefix, has_cut)
        elif not left_ok:
            wl, k = wl * 2, 1
        elif cut and rules.cut_splice:

            def has_right_cut(we, ws=ws):
                t = window_text(ws, we)
                found = find_right_cut(rules, t, _codepoints(t), ws, we, new_len, right_start,
                                       c_s, c_e, shift)  # fmt: skip
                return found is not None

            wr, k = widen_right(wr, right_start, new_len, has_right_cut)
        else:
            wr, k = wr * 2, 1
        widenings += k
        steps += 1
