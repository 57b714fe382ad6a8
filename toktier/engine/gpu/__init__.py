"""Exact full tokenization on the GPU: a chain of numba-cuda kernels, counts kept on the device.

``GpuEngine(tok)`` has the engine interface (``encode``/``encode_full`` -> (ids
uint32, starts int64, ends int64) with character spans equal to the reference
offsets) plus batch, device-array, list and packed-export deliveries.  Every
rule it applies is a device function of ``engine.rules`` (the source the CPU
engine compiles), so the GPU and the CPU engine cannot drift apart.

Pipeline (one stream; every kernel reads its sizes from the device ``meta``
array, so no host synchronization happens between stages and launch geometry
comes from the buffer capacity, i.e. the input's byte length rounded up to a
bucket -- never from a count computed on the device):

0. (``GpuEngine(units=True)``, a non-ASCII request with no character beyond U+FFFF) the
   text arrives as 16-bit characters (``units``: a compiled pass over the str's storage
   instead of CPython's UTF-8 encode); each character's UTF-8 length, a scan, and each
   character writes its bytes: the UTF-8 of stage 1, built here.
1. UTF-8 on the device: char-start flag per byte, prefix scan -> character index
   of every byte, decode (``rules.decode_at``) -> code points, class bits (table
   on the device), char->byte offsets; NFC quick-check failures are counted.
2. Added-token literals: a literal-candidate flag per character, compacted by a
   scan; one thread walks the candidates leftmost-longest per document exactly
   as the CPU's ``_find_literals`` walks every position (the same step,
   ``rules.literal_take``; non-candidates can never start a literal); each
   literal then marks its span.
3. The boundary predicate, per character: the certified cut ``rules.cut_ok``
   that the CPU's ``_cut_ok`` calls too (stable class pair of the family's cut matrix, NFC-safe, not strictly inside
   an added-token literal; literal edges and document starts are forced cuts).
   This is the engine's substitute for the paper's per-character piece-start
   predicate: cuts are a subset of piece starts, certified to split the
   reference's input exactly, and the family's matcher (``pretokenize_segment``)
   finds the remaining piece starts inside each segment.  Cuts are compacted by
   a scan into segments.
4. Thread per segment: ``pretokenize_segment`` -> a piece-start flag per
   character; a scan compacts the pieces.
5. BPE by piece byte length: <= 32 bytes one thread per piece (the rules'
   ``bpe_merge`` on per-thread local arrays); 33-128 bytes one warp per piece;
   129-``block_max`` bytes one block per piece; longer pieces one thread each
   with the rules' O(L log L) heap (``merge_large``), a documented exact fallback.
   The warp and block kernels apply the sequential merge order exactly: each
   round reduces (rank, position) over the live adjacent pairs -- warp shuffles,
   then shared memory across the warps of a block -- and merges that ONE
   occurrence (lowest rank, leftmost on ties), never several per round, with
   the CPU heap's merge step (``rules.merge_link``).
6. Output: a scan of per-piece token counts; each piece writes its tokens and
   their character spans (token byte lengths from the vocabulary, lifted to
   characters by ``rules.token_chars`` over the char->byte offsets of stage 1,
   as the CPU's ``emit_piece``: paper App. F, Route C) into one packed int64
   buffer ``[ids | starts | ends]``.

SentencePiece BPE (no pre-tokenizer; ``rules.sp_*``): stages 1-3 as above, then
one thread per segment runs ``rules.sp_segment`` -- its pieces (cut where no merge
can cross), their merges (``merge_small``/``merge_large``) and spans -- into slots
``char_start[lo] + k`` (a segment yields at most its bytes plus one "▁"); a segment
that starts a document or follows a literal gets the prepended "▁", one that starts
at a certified cut does not (``stages.k_sp_segments``); a scan and ``k_sp_output``
pack the result.

Host synchronizations per request: one copy of ``meta`` (counts and the NFC
flag), one copy of the packed output -- 2.  On a real GPU the single-request
chain is captured once per input-size bucket as a CUDA graph (CuPy stream
capture, numba kernels launched on the capturing stream through
``numba.cuda.external_stream``) and replayed; ``graphs=False`` launches the
same kernels eagerly (same 2 synchronizations, more launch overhead).

Deviations, all exactness-preserving: (a) the piece cache of ``rules`` is a
CPU-side memo (a hit returns exactly what the merges return), the GPU merges
every piece; (b) texts whose NFC quick check fails (qwen3/qwen3.6 only) are
delegated whole to the CPU engine, which handles them exactly; (c) pieces
longer than ``block_max`` bytes use one thread with the heap instead of a block.

The CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) runs every kernel on the CPU
(NumPy arrays, no CuPy, no graphs) so CI certifies the kernels
(``tests/cudasim``); ``sim`` gives it warp shuffles with the hardware's lane
semantics, race-free shared arrays and a fast barrier, so it runs exactly the
code the GPU compiles.  Every kernel also compiles to PTX for sm_90 offline in
CI (``tests/test_gpu_ptx.py``).  Code that needs a real GPU is marked
``GPU-only`` and lives in ``backends._CupyBackend``.

Modules, one concern each:

- ``sim``: the simulator shims and ``tune_simulator``;
- ``device``: the rules compiled as device functions (``DEVICE``), the
  ``meta``/``lmark`` layout, piece size classes, the table named tuples;
- ``scans``: the three-pass exclusive scan every compaction uses;
- ``stages``: stage kernels 1-4 and 6 (UTF-8, literals, cuts, pre-tokenization,
  output);
- ``bpe``: stage 5, the BPE kernels and their device helpers;
- ``backends``: simulator and CuPy backends, launch geometry;
- ``engine``: ``GpuEngine`` (tables, workspaces, the launch chain, deliveries);
- ``ranges``: the one-thread-per-range harness (``rules.encode_range`` as a
  device function), formerly ``toktier.engine.cuda``.

This package re-exports the names the rest of toktier and the tests use.
"""

from __future__ import annotations

from . import sim  # first: the simulator shims, before any kernel runs
from .backends import _CupyBackend, _Geometry, _make_backend, _SimBackend
from .bpe import (
    FULL_MASK,
    MAX_WARPS,
    NONE_KEY,
    k_bpe_block,
    k_bpe_huge,
    k_bpe_small,
    k_bpe_warp,
    local_best,
    merge_at,
    warp_min,
)
from .device import (
    BLOCK_MAX,
    DEVICE,
    LM_CUT,
    LM_INSIDE,
    LM_LIT,
    M_MODE,
    M_N,
    M_NB,
    M_NBIG,
    M_NCAND,
    M_NDOCS,
    M_NHUGE,
    M_NLIT,
    M_NMID,
    M_NP,
    M_NSEG,
    M_NTOK,
    M_NUNITS,
    M_SIZE,
    M_UBYTES,
    M_UNSAFE,
    MODE_LITERALS,
    NFC_UNSAFE,
    NO_RANK,
    SMALL_HEAP,
    SMALL_MAX,
    WARP_MAX,
    BpeTables,
    LiteralTrie,
    TextTables,
)
from .engine import GpuEngine, GpuUnavailable, _Stats, _Workspace
from .scans import SCAN_BD, block_exclusive, k_scan_apply, k_scan_reduce, k_scan_sums
from .sim import SIMULATOR, _install_simulator_shims, tune_simulator
from .stages import (
    k_begin,
    k_close,
    k_compact,
    k_cuts,
    k_decode,
    k_lit_match,
    k_lit_walk,
    k_mark_docs,
    k_mark_literals,
    k_output,
    k_pretokenize,
    k_sp_output,
    k_sp_segments,
    k_start_flags,
    k_units_len,
    k_units_write,
)
from .units import UnitBuffer

__all__ = [
    "BLOCK_MAX",
    "DEVICE",
    "FULL_MASK",
    "LM_CUT",
    "LM_INSIDE",
    "LM_LIT",
    "MAX_WARPS",
    "MODE_LITERALS",
    "M_MODE",
    "M_N",
    "M_NB",
    "M_NBIG",
    "M_NCAND",
    "M_NDOCS",
    "M_NHUGE",
    "M_NLIT",
    "M_NMID",
    "M_NP",
    "M_NSEG",
    "M_NTOK",
    "M_NUNITS",
    "M_SIZE",
    "M_UBYTES",
    "M_UNSAFE",
    "NFC_UNSAFE",
    "NONE_KEY",
    "NO_RANK",
    "SCAN_BD",
    "SIMULATOR",
    "SMALL_HEAP",
    "SMALL_MAX",
    "WARP_MAX",
    "BpeTables",
    "GpuEngine",
    "GpuUnavailable",
    "LiteralTrie",
    "TextTables",
    "UnitBuffer",
    "_CupyBackend",
    "_Geometry",
    "_SimBackend",
    "_Stats",
    "_Workspace",
    "_install_simulator_shims",
    "_make_backend",
    "block_exclusive",
    "k_begin",
    "k_bpe_block",
    "k_bpe_huge",
    "k_bpe_small",
    "k_bpe_warp",
    "k_close",
    "k_compact",
    "k_cuts",
    "k_decode",
    "k_lit_match",
    "k_lit_walk",
    "k_mark_docs",
    "k_mark_literals",
    "k_output",
    "k_pretokenize",
    "k_scan_apply",
    "k_scan_reduce",
    "k_scan_sums",
    "k_sp_output",
    "k_sp_segments",
    "k_start_flags",
    "k_units_len",
    "k_units_write",
    "local_best",
    "merge_at",
    "sim",
    "tune_simulator",
    "warp_min",
]
