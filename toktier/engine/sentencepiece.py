"""The SentencePiece BPE engine (the ``sentencepiece`` family): exact IDs and spans.

What the reference does with such a tokenizer.json (``families.detect``): added-token
literals are cut out first; each remaining segment is normalized by Prepend("▁") and
Replace(" " -> "▁") and becomes *one* BPE word whose symbols are its characters (a
character that is no vocabulary entry becomes its UTF-8 byte tokens ``<0xXX>``).
One BPE word per segment is why the reference is slow on long texts.

The rules (``rules.sp_*``, compiled here for the CPU and by ``engine.gpu`` for the
GPU) merge a segment piece by piece instead, cutting it where no merge can cross:

- where the repair certificate cuts (``families.stability``, checked by the oracle):
  before a space (" " or "▁") that follows a non-space, and on both sides of a
  byte-fallback character (its byte tokens never merge: no merge names one);
- and between two characters that no vocabulary entry holds adjacent (spaces as
  "▁").  Why that is exact: a merge turns two adjacent symbols into the entry that is
  their concatenation, so a merge across such a pair would make an entry holding it;
  none exists, so no merge ever crosses, and merges by (rank, position) on each side
  run exactly as they would alone.  On code this halves the bytes per piece (6.7 ->
  3.8 on the certification corpus) and the merge work with it.

Symbols are vocabulary ids from the start (a code point -> id table); the merge loop
is the byte-level engine's (``rules.merge_small`` / ``merge_large`` over
``rules.pair_code``).

Spans: the reference gives a token the span of the original characters it covers;
the prepended "▁" counts as part of the segment's first character (alone, it gets
that character's span).  A token's length in normalized characters is a function of
its id (``SpTables.nchars``), so spans follow from the ids alone -- which is also why
the piece cache stores ids only.

Piece cache (CPU): one per engine, shared by its threads, kept across calls, the byte-level
engine's short-piece rows (``rules.cache_store`` / ``cache_find``: exact key, seqlock rows and
a check word per row, so a torn or corrupted row is a miss) keyed by the piece's bytes, with "▁" in front when
the piece carries the segment's prepended "▁" (same ids either way, so keys may
coincide).  Hot path: the piece loop and cache hits run inline in ``rules.sp_segment``
(a call passing the table tuples costs more than a cached piece).
"""

from __future__ import annotations

import re
import threading
import time
from itertools import pairwise
from types import SimpleNamespace
from typing import NamedTuple

import numba
import numpy as np

from ..families import stability
from ..textcheck import utf8_array
from . import cpu as _cpu
from . import jit as _jit
from . import rules as _rules
from .literal_probe import check_literals
from .tables import EngineUnsupported, build_pair_filter, build_trie, merge_arrays

RULES = _cpu.RULES  # the shared rules (rules.sp_*), compiled for the CPU
utf8_decode = RULES.utf8_decode
_find_literals = _cpu._find_literals
_sp_range = RULES.sp_range
_joinable = RULES.sp_joinable
CACHE_SLOTS = 262144  # piece-cache rows (2-way sets of rules' short rows; not re-measured when
# the byte-level engines' cache doubled, 2026-11-26)
CACHE_COLS = _rules.CACHE_COLS
MIN_PARALLEL_CHARS = _cpu.MIN_PARALLEL_CHARS
SpTables = _rules.SpTables


class SpArgs(NamedTuple):
    """What a compiled window encode reads (``splice.plan_sentencepiece``)."""

    f1: np.ndarray  # raw added-token literals (``tables.Trie``)
    k1: np.ndarray
    c1: np.ndarray
    t1: np.ndarray
    f2: np.ndarray  # normalized ones (none: refused in ``build_sp_tables``)
    k2: np.ndarray
    c2: np.ndarray
    t2: np.ndarray
    has2: bool
    sp: SpTables
    bpe: _rules.BpeTables


# --- compiled entry points (the rules themselves: rules.sp_*) ---------------------------
@numba.njit(cache=True, nogil=True)
def _sp_encode_text(u8, prepend0, f1, k1, c1, t1, f2, k2, c2, t2, has2, sp, bt, cache, wk):
    """The whole single-thread path in one compiled call: (ids, starts, ends), fresh arrays.

    ``prepend0``: the text starts a segment (False for a part cut out of a segment).

    ``wk``: a workspace of at least ``u8.size`` bytes whose token arrays hold
    ``2 * u8.size + 2`` entries (a byte-fallback character after a literal yields two
    tokens for one byte).
    """
    cps = wk.cps
    char_start = wk.char_start
    n = utf8_decode(u8, cps, char_start)
    nlit = _find_literals(cps, n, f1, k1, c1, t1, f2, k2, c2, t2, has2, wk.ls, wk.le, wk.lid)
    m = _sp_range(0, n, prepend0, cps, u8, char_start, wk.ls, wk.le, wk.lid, 0, nlit, sp, bt,
                  wk.sym, wk.rank, wk.nxt, wk.prv, wk.heap, cache, True, wk.out_ids, wk.out_s,
                  wk.out_e, 0)
    return wk.out_ids[:m].astype(np.uint32), wk.out_s[:m].copy(), wk.out_e[:m].copy()


@numba.njit(cache=True, nogil=True)
def _decode_and_find(u8, f1, k1, c1, t1, f2, k2, c2, t2, has2, cps, char_start, ls, le, lid):
    n = utf8_decode(u8, cps, char_start)
    nlit = _find_literals(cps, n, f1, k1, c1, t1, f2, k2, c2, t2, has2, ls, le, lid)
    return n, nlit


# --- tables ------------------------------------------------------------------------------
def build_sp_tables(tok) -> tuple[SpTables, _rules.BpeTables, list, list]:
    """SentencePiece tables, the merges as ``rules.BpeTables``, and the (raw, normalized)
    added-token literals; ``EngineUnsupported`` for what this engine does not implement."""
    if tok.family != "sentencepiece":
        raise EngineUnsupported(f"family {tok.family!r} is not SentencePiece BPE")
    doc = tok.document()
    model = doc.get("model") or {}
    for key in ("dropout", "continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise EngineUnsupported(f"BPE option {key}={model[key]!r} is not implemented")
    fallback = stability.byte_fallback_chars(doc)
    if not fallback.any():
        raise EngineUnsupported(
            "SentencePiece without usable byte fallback (a missing <0xXX> token or a merge "
            "naming one): unknown characters would fuse into <unk>"
        )
    for t in tok.added_tokens:
        if t.lstrip or t.rstrip or t.single_word:
            raise EngineUnsupported(f"added token {t.content!r} uses lstrip/rstrip/single_word")
        if t.normalized and t.content:
            raise EngineUnsupported(
                f"normalized added token {t.content!r} (matched on the normalized text)"
            )
    vocab: dict[str, int] = model["vocab"]
    n_ids = max(tok.hf.get_vocab_size(with_added_tokens=True), max(vocab.values()) + 1)
    singles = {ord(t): i for t, i in vocab.items() if len(t) == 1}
    if "\u2581" not in vocab:
        raise EngineUnsupported('the vocabulary lacks "▁"')
    char_ids = np.full(max(singles) + 1, -1, dtype=np.int64)
    for cp, i in singles.items():
        if cp != 0x20 and not 0xD800 <= cp < 0xE000:
            char_ids[cp] = i
    # The engine's classes must be the certificate's: BYTES exactly where stability says.
    engine_bytes = np.ones(0x110000, dtype=bool)
    engine_bytes[: char_ids.size] = char_ids < 0
    engine_bytes[[0x20, 0x2581]] = False
    engine_bytes[0xD800:0xE000] = False
    if not np.array_equal(engine_bytes, fallback):
        raise EngineUnsupported("byte-fallback characters differ from the certificate's class")
    byte_tok = np.array([vocab[f"<0x{b:02X}>"] for b in range(256)], dtype=np.int64)
    nchars = np.zeros(n_ids, dtype=np.int64)
    for t, i in vocab.items():
        nchars[i] = len(t)
    merge_table, merged, direct = merge_arrays(model, vocab)
    z = np.zeros(1, np.int64)
    bt = _rules.BpeTables(
        z, merge_table, merged, build_pair_filter(merge_table), z, z, z, np.zeros(1, np.uint8),
        z, False, z, np.zeros((1, _rules.SHORT_COLS), np.int64), np.zeros(1, np.uint8),
        np.zeros(1, np.int32), np.zeros(1, np.int16), *_rules.premerge_off(), direct,
    )  # fmt: skip
    pairs = set()
    for t in vocab:
        if len(t) > 1 and not _BYTE_TOKEN.fullmatch(t):
            pairs.update((ord(a), ord(b)) for a, b in pairwise(t))
    ascii_pairs = np.zeros(256, dtype=np.uint64)
    for a, b in pairs:
        if a < 128 and b < 128:
            q = (a << 7) | b
            ascii_pairs[q >> 6] |= np.uint64(1) << np.uint64(q & 63)
    sp = SpTables(char_ids, byte_tok, nchars, np.ones(n_ids, dtype=np.int64),
                  int(vocab["\u2581"]), _hash_set({(a << 21) | b for a, b in pairs}),
                  ascii_pairs.view(np.int64))  # fmt: skip
    raw = [(t.content, t.id) for t in tok.added_tokens if t.content and not t.normalized]
    return sp, bt, raw, []


_BYTE_TOKEN = re.compile(r"<0x[0-9A-F]{2}>")


def _hash_set(keys: set[int]) -> np.ndarray:
    """Open-addressing int64 set (-1 empty, load <= 1/4) probed as ``_joinable`` does."""
    cap = 16
    while cap < 4 * len(keys):
        cap <<= 1
    table = np.full(cap, -1, dtype=np.int64)
    for key in sorted(keys):
        h = (((key * 0x9E3779B1) & _rules.M63) >> 16) & (cap - 1)
        while table[h] >= 0:
            h = (h + 1) & (cap - 1)
        table[h] = key
    return table


def _new_workspace(cap: int) -> _cpu.Workspace:
    wk = _cpu.new_workspace(cap)
    e = np.empty
    return wk._replace(out_ids=e(2 * cap + 2, np.int64), out_s=e(2 * cap + 2, np.int64),
                       out_e=e(2 * cap + 2, np.int64))  # fmt: skip


class SentencePieceEngine:
    """toktier's exact CPU engine for SentencePiece BPE (``Engine`` protocol)."""

    name = "numba-cpu-sentencepiece"

    def __init__(self, tok, *, threads: int | None = None,
                 workspace_bytes: int = _cpu.WORKSPACE_MAX_BYTES):  # fmt: skip
        self.tokenizer = tok
        self.workspace_bytes = workspace_bytes
        self.sp, self.bpe, raw, normed = build_sp_tables(tok)
        self._lit, self._nlit = lit, nlit = build_trie(raw), build_trie(normed)
        self._max_literal = max((len(c) for c, _id in raw + normed), default=0)
        self._no_bits: np.ndarray | None = None
        self._trie_args = (lit.first, lit.keys, lit.child, lit.term,
                           nlit.first, nlit.keys, nlit.child, nlit.term, nlit.size > 0)  # fmt: skip
        self._class_of = stability.class_map_for(tok)
        self._stable = np.ascontiguousarray(stability.cut_matrix(tok.family))
        self.threads = threads or numba.config.NUMBA_NUM_THREADS
        self.compile_seconds: float | None = None
        self._encode_kernel = _jit.BoundKernel(_sp_encode_text)
        self._local = threading.local()
        self._piece_cache = _cpu._aligned_zeros((CACHE_SLOTS, CACHE_COLS))
        self._parts = _cpu.PartsPool("toktier-sp")
        self.literal_probes = check_literals(tok, lambda text: self.encode(text)[0])

    def __repr__(self) -> str:
        return f"SentencePieceEngine({self.tokenizer.name!r})"

    def text_tables(self) -> SimpleNamespace:
        """The per-code-point tables the GPU pipeline's front stages read (decode, literals,
        cuts: ``tables.EngineTables``' fields); the SentencePiece rules need no fold."""
        return SimpleNamespace(
            bits=self.tokenizer.class_table.bits, fold=np.zeros(0x110000, dtype=np.uint8),
            family_code=_rules.F_SENTENCEPIECE, nfc=False, literals=self._lit,
            normalized_literals=self._nlit,
        )  # fmt: skip

    def sp_args(self) -> SpArgs:
        return SpArgs(*self._trie_args, self.sp, self.bpe)

    # --- per-thread state ------------------------------------------------------------------
    def _workspace(self, nb: int) -> _cpu.Workspace:
        return _cpu.thread_workspace(self._local, nb, self.workspace_bytes, _new_workspace)

    def _cache(self) -> np.ndarray:
        """The engine's piece cache, kept across calls and shared by every thread
        (``rules`` short-cache rows, each a seqlock: see ``CpuEngine._cache``)."""
        return self._piece_cache

    def clear_piece_caches(self) -> None:
        """Forget every remembered piece (``CpuEngine.clear_piece_caches``: the empty-cache
        measurement; not while another thread encodes)."""
        self._piece_cache.fill(0)  # zero rows fail their check word: every lookup misses

    @property
    def cache_bytes(self) -> int:
        """Bytes of the piece cache: CACHE_SLOTS x 64 B (16 MiB) per engine."""
        return self._piece_cache.nbytes

    def warmup(self) -> float:
        t0 = time.perf_counter()
        sample = "Hello, world! It's 2026 — 123456789 spaces   \n\n\tx\r\n中文 ▁x" * 3
        self.encode(sample)
        self.encode_parallel(sample * 8, threads=2, min_chars=0)
        # a long non-ASCII text takes the compiled UTF-8 pass (``textcheck.COMPILED_MIN_CHARS``):
        # left cold, a real request's first call compiled it
        mixed = "Grüße, мир — 中文 ok ▁x\n" * 1500
        self.encode(mixed)
        self.encode_parallel(mixed, threads=2, min_chars=0)
        self.compile_seconds = time.perf_counter() - t0
        return self.compile_seconds

    # --- encode ------------------------------------------------------------------------------
    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids uint32, starts int64, ends int64): exact IDs and each token's character span."""
        return self._encode_validated(utf8_array(text))

    def _encode_validated(self, u8: np.ndarray):
        if u8.size <= self.workspace_bytes:
            return self._encode_u8(u8, True)
        # Beyond the workspace budget: parts cut at isolated certified cuts, one after
        # another through this thread's workspace (as ``CpuEngine._encode_bytes``), not a
        # one-call workspace of the whole size, whose fresh pages every call pays for.
        return self._encode_chunks(u8, -(-u8.size // (self.workspace_bytes // 2)), threads=1)

    def _encode_u8(self, u8: np.ndarray, prepend0: bool):
        return self._encode_kernel(u8, prepend0, *self._trie_args, self.sp, self.bpe,
                                   self._cache(), self._workspace(u8.size))  # fmt: skip

    def encode_ids(self, text: str, threads: int | None = None) -> np.ndarray:
        """The exact IDs alone, on the full path (as ``CpuEngine.encode_ids``)."""
        return self.encode_parallel(text, threads)[0]

    def encode_full(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.encode_parallel(text)

    def _prepare(self, u8: np.ndarray):
        nb = u8.size
        cps = np.empty(nb, np.uint32)
        char_start = np.empty(nb + 1, np.int64)
        ls, le, lid = (np.empty(nb, np.int64) for _ in range(3))
        n, nlit = _decode_and_find(u8, *self._trie_args, cps, char_start, ls, le, lid)
        return n, nlit, cps, char_start, ls, le, lid

    def certified_cuts(self, text: str) -> np.ndarray:
        """Every position where ``encode_parallel`` may cut ``text`` (for certification)."""
        n, nlit, cps, _cs, ls, le, _lid = self._prepare(utf8_array(text))
        fl = np.zeros(n, np.uint16)  # no NFC: class bits unused by the cut rule
        return _cpu._all_cuts(n, cps, fl, self._class_of, self._stable, False, ls, le, nlit)

    def encode_parallel(
        self, text: str, threads: int | None = None, *, min_chars: int = MIN_PARALLEL_CHARS
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Like ``encode``, cut at certified boundaries into chunks merged on every core.

        The cuts are found by decoding small windows only (``cpu._byte_cut_near``) and
        are *isolated*: no literal ends at one, so every part but the first starts inside
        a segment and gets no "▁" of its own.  Nothing but the final join is serial.
        """
        u8 = utf8_array(text)
        threads = threads or self.threads
        if len(text) < min_chars or threads <= 1:
            return self._encode_validated(u8)
        # chunks of at most half the workspace budget, taken in turn by the threads
        parts = max(_cpu.chunk_count(u8.size, threads), -(-u8.size // (self.workspace_bytes // 2)))
        return self._encode_chunks(u8, parts, threads)

    def _part_bounds(self, u8: np.ndarray, parts: int) -> list[int]:
        """Byte offsets ``[0, c1, ..., len]`` of isolated certified cuts near equal sizes."""
        if self._no_bits is None:  # the cut rule reads class bits only for NFC: none here
            self._no_bits = np.zeros(0x110000, np.uint16)
        cut_args = (self._no_bits, self._class_of, self._stable, False, *self._trie_args,
                    self._max_literal)  # fmt: skip
        return _cpu.part_bounds(u8, parts, cut_args, isolated=True)

    def _encode_chunks(self, u8: np.ndarray, parts: int, threads: int):
        """Encode ``u8`` cut at isolated certified cuts into up to ``parts`` chunks of near
        equal sizes, taken in turn by ``threads`` threads (``cpu.run_chunks``)."""
        bounds = self._part_bounds(u8, parts)
        if len(bounds) < 3:
            return self._encode_u8(u8, True)
        jobs = [(a, b, a == 0) for a, b in pairwise(bounds)]
        # the compiled call releases the GIL: chunks overlap across threads
        results = _cpu.run_chunks(self._parts, jobs, threads,
                                  lambda j: self._encode_u8(u8[j[0]:j[1]], j[2]))  # fmt: skip
        return _cpu._join_parts(results)


__all__ = ["SentencePieceEngine", "SpTables", "build_sp_tables"]
