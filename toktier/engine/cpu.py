"""The numba CPU engine: exact IDs and character spans, one thread or all cores.

``CpuEngine(tok).encode(text) -> (ids, starts, ends)`` (the engine interface of
``Tier`` and repair) runs the rules of ``engine.rules`` compiled with
``numba.njit`` in a single compiled call.  ``encode_parallel`` cuts a long text
at *certified* boundaries -- the repair certificate applied across space: a
stable class pair for the family, no added-token literal straddling the cut,
both characters NFC-safe -- and encodes the chunks under ``numba.prange``.

Normalization: for NFC tokenizers, text whose characters are all NFC-safe (the
quick check) is already normalized and goes to the engine; every stretch that
holds an unsafe character is cut out at certified boundaries and encoded by the
reference, so the output stays exact.

Compiled functions are cached on disk (numba ``cache=True``, under
``NUMBA_CACHE_DIR`` when set); ``warmup()`` compiles or loads them outside
request latency and reports how long that took.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from typing import NamedTuple

import numba
import numpy as np

from ..families import stability
from ..families.classes import NFC_UNSAFE
from ..textcheck import check_text
from . import jit as _jit
from . import rules as _rules
from .literal_probe import check_literals
from .tables import EngineTables, EngineUnsupported

CACHE_DIR = _jit.use_engine_cache()  # before any decorator below
RULES = _rules.make(numba.njit(cache=True, nogil=True, _nrt=False))
# numba resolves callees as module globals, not attributes:
CACHE_SLOTS = _rules.CACHE_SLOTS
CACHE_COLS = _rules.CACHE_COLS
LONG_SLOTS = _rules.LONG_SLOTS
LONG_COLS = _rules.LONG_COLS
utf8_decode = RULES.utf8_decode
pretokenize_segment = RULES.pretokenize_segment
literal_scan = RULES.literal_scan
encode_range = RULES.encode_range
bpe_uncached = RULES.bpe_uncached
piece_words = RULES.piece_words
piece_hash = RULES.piece_hash

MIN_PARALLEL_CHARS = 1 << 16  # below this, one thread is faster than splitting
CUT_SEARCH = 1 << 14  # how far past a target position to look for a certified cut
NFC_COALESCE = 64  # join reference stretches closer than this (fewer reference calls)


@numba.njit(cache=True, nogil=True)
def _prepare(u8, bits, cps, char_start, fl):
    """Decode UTF-8 and gather class bits; returns the number of characters."""
    n = utf8_decode(u8, cps, char_start)
    for i in range(n):
        fl[i] = bits[cps[i]]
    return n


@numba.njit(cache=True, nogil=True)
def _find_literals(cps, n, f1, k1, c1, t1, f2, k2, c2, t2, has2, ls, le, lid):
    """All added-token occurrences, as the reference extracts them.

    Pass 1 finds raw (non-normalized) literals leftmost-longest over the whole
    text; pass 2 finds normalized literals inside the gaps pass 1 leaves.
    """
    if not has2:
        return literal_scan(cps, 0, n, f1, k1, c1, t1, ls, le, lid, 0)
    a_s = np.empty(n, dtype=np.int64)
    a_e = np.empty(n, dtype=np.int64)
    a_id = np.empty(n, dtype=np.int64)
    na = literal_scan(cps, 0, n, f1, k1, c1, t1, a_s, a_e, a_id, 0)
    m = 0
    pos = 0
    for k in range(na + 1):
        stop = a_s[k] if k < na else n
        m = literal_scan(cps, pos, stop, f2, k2, c2, t2, ls, le, lid, m)
        if k < na:
            ls[m] = a_s[k]
            le[m] = a_e[k]
            lid[m] = a_id[k]
            m += 1
            pos = a_e[k]
    return m


@numba.njit(cache=True, nogil=True)
def _split(u8, bits, fold, family):
    """Piece ends of the pre-tokenizer alone over the whole text (no added-token extraction)."""
    nb = u8.size
    cps = np.empty(nb, dtype=np.uint32)
    char_start = np.empty(nb + 1, dtype=np.int64)
    fl = np.empty(nb, dtype=np.uint16)
    n = _prepare(u8, bits, cps, char_start, fl)
    ends = np.empty(n + 1, dtype=np.int64)
    m = pretokenize_segment(cps, fl, fold, 0, n, family, ends, 0)
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
def _unsafe_regions(n, cps, fl, class_of, stable, nfc, ls, le, nlit):
    """Certified-cut stretches around every NFC quick-check failure (overlaps merged)."""
    ra = np.empty(n, dtype=np.int64)
    rb = np.empty(n, dtype=np.int64)
    m = 0
    for q in range(n):
        if not (fl[q] & NFC_UNSAFE) or (m and q < rb[m - 1]):
            continue
        a = _cut_before(q, n, cps, fl, class_of, stable, nfc, ls, le, nlit)
        b = _cut_after(q + 1, n + 1, n, cps, fl, class_of, stable, nfc, ls, le, nlit)
        if b < 0:
            b = n
        if m and a <= rb[m - 1]:
            rb[m - 1] = b
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
def _encode_one(k, lo, hi, base, cps, fl, fold, family, u8, char_start, ls, le, lid, nlit,
                byte_ids, keys, ranks, merged, vkeys, vids, pool, pool_off, ignore_merges,
                nbytes, smap, cache, lcache, out_ids, out_s, out_e, counts):  # fmt: skip
    """Encode range k into the output slots starting at ``base[k]``; store its count."""
    c0 = lo[k]
    c1 = hi[k]
    nb = char_start[c1] - char_start[c0]
    ends = np.empty(c1 - c0 + 1, dtype=np.int64)
    sym = np.empty(nb + 1, dtype=np.int64)
    rank = np.empty(nb + 1, dtype=np.int64)
    nxt = np.empty(nb + 1, dtype=np.int64)
    prv = np.empty(nb + 1, dtype=np.int64)
    heap = np.empty(3 * nb + 3, dtype=np.int64)
    lit0 = np.searchsorted(ls[:nlit], c0)
    n0 = base[k]
    n = encode_range(c0, c1, cps, fl, fold, family, u8, char_start, ls, le, lid, lit0, nlit,
                       byte_ids, keys, ranks, merged, vkeys, vids, pool, pool_off, ignore_merges,
                       nbytes, smap, ends, sym, rank, nxt, prv, heap, cache, lcache, out_ids,
                       out_s, out_e, n0)  # fmt: skip
    counts[k] = n - n0


@numba.njit(cache=True, nogil=True)
def _encode_ranges_serial(lo, hi, base, cps, fl, fold, family, u8, char_start, ls, le, lid, nlit,
                          byte_ids, keys, ranks, merged, vkeys, vids, pool, pool_off,
                          ignore_merges, nbytes, smap, caches, lcaches, out_ids, out_s, out_e,
                          counts):  # fmt: skip
    for k in range(lo.size):
        _encode_one(k, lo, hi, base, cps, fl, fold, family, u8, char_start, ls, le, lid, nlit,
                    byte_ids, keys, ranks, merged, vkeys, vids, pool, pool_off, ignore_merges,
                    nbytes, smap, caches[0], lcaches[0], out_ids, out_s, out_e, counts)  # fmt: skip


@numba.njit(cache=True, nogil=True, parallel=True)
def _encode_ranges_parallel(lo, hi, base, cps, fl, fold, family, u8, char_start, ls, le, lid,
                            nlit, byte_ids, keys, ranks, merged, vkeys, vids, pool, pool_off,
                            ignore_merges, nbytes, smap, caches, lcaches, out_ids, out_s, out_e,
                            counts):  # fmt: skip
    for k in numba.prange(lo.size):  # a thread's chunks run one after another on its caches
        c = numba.get_thread_id()
        _encode_one(k, lo, hi, base, cps, fl, fold, family, u8, char_start, ls, le, lid, nlit,
                    byte_ids, keys, ranks, merged, vkeys, vids, pool, pool_off, ignore_merges,
                    nbytes, smap, caches[c], lcaches[c], out_ids, out_s, out_e, counts)  # fmt: skip


@numba.njit(cache=True, nogil=True, parallel=True)
def _gather(base, counts, offs, out_ids, out_s, out_e, ids, starts, ends):
    for k in numba.prange(base.size):
        a = base[k]
        b = offs[k]
        for t in range(counts[k]):
            ids[b + t] = out_ids[a + t]
            starts[b + t] = out_s[a + t]
            ends[b + t] = out_e[a + t]


@numba.njit(cache=True, nogil=True)
def _encode_text(u8, bits, fold, family, nfc, f1, k1, c1, t1, f2, k2, c2, t2, has2, byte_ids,
                 keys, ranks, merged, vkeys, vids, pool, pool_off, ignore_merges, nbytes, smap,
                 cache, lcache):  # fmt: skip
    """The whole single-thread path in one compiled call (the repair-window fast path).

    Returns (ids, starts, ends, ok); ``ok`` is False when an NFC tokenizer meets a
    character that is not NFC-safe (the caller then takes the segmented path).
    """
    nb = u8.size
    cps = np.empty(nb, dtype=np.uint32)
    char_start = np.empty(nb + 1, dtype=np.int64)
    fl = np.empty(nb, dtype=np.uint16)
    n = _prepare(u8, bits, cps, char_start, fl)
    out_ids = np.empty(nb, dtype=np.int64)
    out_s = np.empty(nb, dtype=np.int64)
    out_e = np.empty(nb, dtype=np.int64)
    if nfc and _has_bit(fl, n, NFC_UNSAFE):
        return out_ids[:0].astype(np.uint32), out_s[:0], out_e[:0], False
    ls = np.empty(n, dtype=np.int64)
    le = np.empty(n, dtype=np.int64)
    lid = np.empty(n, dtype=np.int64)
    nlit = _find_literals(cps, n, f1, k1, c1, t1, f2, k2, c2, t2, has2, ls, le, lid)
    lo = np.zeros(1, dtype=np.int64)
    hi = np.full(1, n, dtype=np.int64)
    counts = np.zeros(1, dtype=np.int64)
    _encode_one(0, lo, hi, lo, cps, fl, fold, family, u8, char_start, ls, le, lid, nlit,
                byte_ids, keys, ranks, merged, vkeys, vids, pool, pool_off, ignore_merges,
                nbytes, smap, cache, lcache, out_ids, out_s, out_e, counts)  # fmt: skip
    m = counts[0]
    return out_ids[:m].astype(np.uint32), out_s[:m].copy(), out_e[:m].copy(), True


def build_short_map(
    byte_ids, keys, ranks, merged, vkeys, vids, pool, pool_off, ignore_merges, nbytes
) -> np.ndarray:
    """The read-only short-piece map: every vocabulary entry of 2..16 bytes whose own
    encoding (``bpe_uncached``, this engine's merges) is that single token.

    A memo of the merge function on those inputs, keyed by the exact bytes, so a
    lookup returns exactly what the merges would; most pieces of real text are such
    entries, and one probe replaces the merges and the piece cache.
    """
    ids = np.flatnonzero((nbytes >= 2) & (nbytes <= _rules.CACHE_MAX_BYTES))
    cap = 16
    while cap < 2 * len(ids) + 1:
        cap <<= 1
    smap = _aligned_zeros((cap, _rules.SHORT_COLS))
    _fill_short_map(ids, byte_ids, keys, ranks, merged, vkeys, vids, pool, pool_off,
                    ignore_merges, smap)  # fmt: skip
    return smap


def _aligned_zeros(shape, align: int = 64) -> np.ndarray:
    """Zeroed int64 array whose rows start on cache-line boundaries (rows of 32/64 bytes)."""
    n = int(np.prod(shape))
    raw = np.zeros(n + align // 8, dtype=np.int64)
    off = (-raw.ctypes.data % align) // 8
    return raw[off : off + n].reshape(shape)


@numba.njit(cache=True, nogil=True)
def _fill_short_map(ids, byte_ids, keys, ranks, merged, vkeys, vids, pool, pool_off,
                    ignore_merges, smap):  # fmt: skip
    sym = np.empty(_rules.CACHE_MAX_BYTES + 1, dtype=np.int64)
    rank = np.empty(_rules.CACHE_MAX_BYTES + 1, dtype=np.int64)
    nxt = np.empty(_rules.CACHE_MAX_BYTES + 1, dtype=np.int64)
    prv = np.empty(_rules.CACHE_MAX_BYTES + 1, dtype=np.int64)
    heap = np.empty(3 * _rules.CACHE_MAX_BYTES + 3, dtype=np.int64)
    out = np.empty(_rules.CACHE_MAX_BYTES + 1, dtype=np.int64)
    mask = smap.shape[0] - 1
    for t in ids:
        a = pool_off[t]
        b = pool_off[t + 1]
        m = bpe_uncached(pool, a, b, byte_ids, keys, ranks, merged, vkeys, vids, pool, pool_off,
                         ignore_merges, sym, rank, nxt, prv, heap, out, 0)  # fmt: skip
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

    def __init__(self, tok, *, threads: int | None = None):
        self.tokenizer = tok
        self.tables = EngineTables.build(tok)
        self._class_of = stability.class_map(tok.family, tok.class_table, tok.hf.normalizer)
        self._stable = np.ascontiguousarray(stability.cut_matrix(tok.family))
        self.threads = threads or numba.config.NUMBA_NUM_THREADS
        t = self.tables
        self._trie_args = (
            t.literals.first, t.literals.keys, t.literals.child, t.literals.term,
            t.normalized_literals.first, t.normalized_literals.keys,
            t.normalized_literals.child, t.normalized_literals.term,
            t.normalized_literals.size > 0,
        )  # fmt: skip
        self._bpe_args = (
            t.byte_ids, t.pair_keys, t.pair_ranks, t.pair_merged, t.vocab_keys, t.vocab_ids,
            t.pool, t.pool_off, t.ignore_merges, t.token_nbytes,
        )  # fmt: skip
        self.short_map = build_short_map(*self._bpe_args)
        self._bpe_args = (*self._bpe_args, self.short_map)
        self.compile_seconds: float | None = None
        self._local = threading.local()
        self._pool: list[tuple[np.ndarray, np.ndarray]] = []
        self._pool_lock = threading.Lock()
        self._threads_seen = 0
        # The file's added tokens must match as the engine matches them, or the tokenizer
        # stays on the reference (issue #13): asked of the reference, not of the file.
        self.literal_probes = check_literals(tok, lambda text: self.encode(text)[0])

    def _cache(self) -> tuple[np.ndarray, np.ndarray]:
        """This thread's (short, long) piece caches, kept across calls (``rules`` layout).

        Owned by one thread, so no write ever races a read; every row also carries a
        check word, so a row that is not exactly as written is a miss (``rules.row_check``).
        """
        caches = getattr(self._local, "caches", None)
        if caches is None:
            self._threads_seen += 1
            caches = self._local.caches = (
                _aligned_zeros((CACHE_SLOTS, CACHE_COLS)),
                _aligned_zeros((LONG_SLOTS, LONG_COLS)),
            )
        return caches

    @contextmanager
    def _thread_caches(self):
        """Caches for one parallel call: one pair per numba thread, lent to no other call."""
        with self._pool_lock:
            pair = self._pool.pop() if self._pool else None
        if pair is None:
            k = numba.config.NUMBA_NUM_THREADS
            pair = (
                _aligned_zeros((k, CACHE_SLOTS, CACHE_COLS)),
                _aligned_zeros((k, LONG_SLOTS, LONG_COLS)),
            )
        try:
            yield pair
        finally:
            with self._pool_lock:
                self._pool.append(pair)

    @property
    def cache_bytes(self) -> int:
        """Bytes held by piece caches now (per-thread and pooled), plus the short-piece map."""
        pooled = sum(a.nbytes + b.nbytes for a, b in self._pool)
        per_thread = CACHE_SLOTS * CACHE_COLS * 8 + LONG_SLOTS * LONG_COLS * 8
        return self.short_map.nbytes + pooled + per_thread * self._threads_seen

    def __repr__(self) -> str:
        return f"CpuEngine({self.tokenizer.name!r}, family={self.tables.family!r})"

    # --- compile ------------------------------------------------------------------------
    def warmup(self) -> float:
        """Compile (or load from the on-disk cache) every kernel; returns the seconds taken."""
        t0 = time.perf_counter()
        sample = "Hello, world! It's 2026 — 123456789 spaces   \n\n\tx\r\n" * 3
        self.encode(sample)
        self.encode_parallel(sample * 8, threads=2, min_chars=0)
        self.compile_seconds = time.perf_counter() - t0
        return self.compile_seconds

    # --- split level ----------------------------------------------------------------------
    def split(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Piece (start, end) character offsets of the pre-tokenizer on ``text`` as one input.

        The counterpart of the reference ``pre_tokenizer.pre_tokenize_str`` (no
        normalization, no added-token extraction): the split-level certificate.
        """
        check_text(text)
        u8 = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        t = self.tables
        ends = _split(u8, t.bits, t.fold, t.family_code)
        starts = np.zeros_like(ends)
        starts[1:] = ends[:-1]
        return starts, ends

    def certified_cuts(self, text: str) -> np.ndarray:
        """Every position where ``encode_parallel`` may cut ``text`` (for certification)."""
        check_text(text)
        p = self.prepare(np.frombuffer(text.encode("utf-8"), dtype=np.uint8))
        return _all_cuts(*p.cut_args)

    def prepare(self, u8: np.ndarray) -> _Prepared:
        """Decode, gather classes and extract added-token literals (host side of every path)."""
        t = self.tables
        nb = u8.size
        cps = np.empty(nb, dtype=np.uint32)
        char_start = np.empty(nb + 1, dtype=np.int64)
        fl = np.empty(nb, dtype=np.uint16)
        n = _prepare(u8, t.bits, cps, char_start, fl)
        ls = np.empty(n, dtype=np.int64)
        le = np.empty(n, dtype=np.int64)
        lid = np.empty(n, dtype=np.int64)
        nlit = _find_literals(cps, n, *self._trie_args, ls, le, lid)
        cut_args = (n, cps, fl, self._class_of, self._stable, t.nfc, ls, le, nlit)
        return _Prepared(n, cps, char_start, fl, ls, le, lid, nlit, cut_args)

    # --- single thread --------------------------------------------------------------------
    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids uint32, starts int64, ends int64): exact IDs and each token's character span."""
        check_text(text)
        u8 = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        t = self.tables
        ids, starts, ends, ok = _encode_text(
            u8,
            t.bits,
            t.fold,
            t.family_code,
            t.nfc,
            *self._trie_args,
            *self._bpe_args,
            *self._cache(),
        )
        if ok:
            return ids, starts, ends
        return self._encode_segmented(text, u8, threads=1)

    # --- all cores --------------------------------------------------------------------------
    def encode_full(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The full path: one thread for short texts, certified chunks on every core beyond."""
        return self.encode_parallel(text)

    def encode_parallel(
        self, text: str, threads: int | None = None, *, min_chars: int = MIN_PARALLEL_CHARS
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Like ``encode``, with the text cut at certified boundaries into one chunk per thread."""
        check_text(text)
        if len(text) < min_chars:
            return self.encode(text)
        u8 = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        return self._encode_segmented(text, u8, threads=threads or self.threads)

    def _encode_segmented(self, text: str, u8: np.ndarray, threads: int):
        t = self.tables
        nb = u8.size
        n, cps, char_start, fl, ls, le, lid, nlit, cut_args = self.prepare(u8)

        # Stretches the reference must encode (NFC families): around each character that
        # fails the quick check, between certified cuts, coalescing neighbours closer than
        # NFC_COALESCE; a stretch that the reference's own NFC leaves unchanged is
        # NFC-stable after all and goes back to the engine.
        ref: list[tuple[int, int]] = []
        if t.nfc:
            ra, rb = _unsafe_regions(*cut_args)
            normalize = self.tokenizer.hf.normalizer.normalize_str
            for a, b in zip(ra.tolist(), rb.tolist(), strict=True):
                piece = text[a:b]
                if normalize(piece) == piece:
                    continue  # NFC-stable after all: the engine takes it
                if ref and a <= ref[-1][1] + NFC_COALESCE:
                    ref[-1] = (ref[-1][0], b)  # fewer, larger reference calls
                else:
                    ref.append((a, b))
        # Engine stretches between them, each cut into about ``threads`` chunks.
        plan: list[tuple[int, int, bool]] = []
        pos = 0
        for a, b in [*ref, (n, n)]:
            if a > pos:
                plan.extend((x, y, True) for x, y in self._chunks(pos, a, threads, cut_args))
            if b > a:
                plan.append((a, b, False))
            pos = b
        eng = [(x, y) for x, y, e in plan if e]
        lo = np.array([x for x, _ in eng], dtype=np.int64)
        hi = np.array([y for _, y in eng], dtype=np.int64)
        base = char_start[lo] if len(lo) else lo
        counts = np.zeros(len(eng), dtype=np.int64)
        out_ids = np.empty(max(nb, 1), dtype=np.int64)
        out_s = np.empty(max(nb, 1), dtype=np.int64)
        out_e = np.empty(max(nb, 1), dtype=np.int64)
        kernel = _encode_ranges_parallel if threads > 1 and len(eng) > 1 else _encode_ranges_serial
        if len(eng) and kernel is _encode_ranges_parallel:
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            with self._thread_caches() as (caches, lcaches):
                kernel(lo, hi, base, cps, fl, t.fold, t.family_code, u8, char_start, ls, le, lid,
                       nlit, *self._bpe_args, caches, lcaches, out_ids, out_s, out_e, counts)  # fmt: skip
        elif len(eng):
            cache, lcache = self._cache()
            kernel(lo, hi, base, cps, fl, t.fold, t.family_code, u8, char_start, ls, le, lid,
                   nlit, *self._bpe_args, cache[None], lcache[None], out_ids, out_s, out_e,
                   counts)  # fmt: skip
        if not ref:
            offs = np.zeros(len(eng), dtype=np.int64)
            np.cumsum(counts[:-1], out=offs[1:])
            total = int(counts.sum())
            ids = np.empty(total, dtype=np.int64)
            starts = np.empty(total, dtype=np.int64)
            ends = np.empty(total, dtype=np.int64)
            _gather(base, counts, offs, out_ids, out_s, out_e, ids, starts, ends)
            return ids.astype(np.uint32), starts, ends
        parts_ids, parts_s, parts_e = [], [], []
        k = 0
        for a, b, is_engine in plan:
            if is_engine:
                s, c = int(base[k]), int(counts[k])
                parts_ids.append(out_ids[s : s + c])
                parts_s.append(out_s[s : s + c])
                parts_e.append(out_e[s : s + c])
                k += 1
            else:
                enc = self.tokenizer.hf.encode(text[a:b], add_special_tokens=False)
                off = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
                parts_ids.append(np.asarray(enc.ids, dtype=np.int64))
                parts_s.append(off[:, 0] + a)
                parts_e.append(off[:, 1] + a)
        return (
            np.concatenate(parts_ids).astype(np.uint32),
            np.concatenate(parts_s),
            np.concatenate(parts_e),
        )

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
        eng = CpuEngine(tok)
    except EngineUnsupported as exc:
        with _ENGINES_LOCK:
            _REFUSALS[key] = str(exc)
        return None
    with _ENGINES_LOCK:
        return _ENGINES.setdefault(key, eng)
