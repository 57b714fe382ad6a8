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

1. UTF-8 on the device: char-start flag per byte, prefix scan -> character index
   of every byte, decode -> code points, class bits (table on the device),
   char->byte offsets; NFC quick-check failures are counted.
2. Added-token literals: a literal-candidate flag per character, compacted by a
   scan; one thread walks the candidates leftmost-longest per document exactly
   as the CPU's ``_find_literals`` walks every position (non-candidates can
   never start a literal); each literal then marks its span.
3. The boundary predicate, per character: the CPU's certified cut ``_cut_ok``
   (stable class pair of the family's cut matrix, NFC-safe, not strictly inside
   an added-token literal; literal edges and document starts are forced cuts).
   This is the engine's substitute for the paper's per-character piece-start
   predicate: cuts are a subset of piece starts, certified to split the
   reference's input exactly, and the family's matcher (``pretokenize_segment``)
   finds the remaining piece starts inside each segment.  Cuts are compacted by
   a scan into segments.
4. Thread per segment: ``pretokenize_segment`` -> a piece-start flag per
   character; a scan compacts the pieces.
5. BPE by piece byte length: <= 32 bytes one thread per piece (the rules'
   ``bpe_uncached`` on per-thread local arrays); 33-128 bytes one warp per piece;
   129-``block_max`` bytes one block per piece; longer pieces one thread each
   with the rules' O(L log L) heap (``bpe_large``), a documented exact fallback.
   The warp and block kernels apply the sequential merge order exactly: each
   round reduces (rank, position) over the live adjacent pairs -- warp shuffles,
   then shared memory across the warps of a block -- and merges that ONE
   occurrence (lowest rank, leftmost on ties), never several per round.
6. Output: a scan of per-piece token counts; each piece writes its tokens and
   their character spans (token byte lengths from the vocabulary, lifted to
   characters through the byte->character index of stage 1: paper App. F,
   Route C) into one packed int64 buffer ``[ids | starts | ends]``.

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
(NumPy arrays, no CuPy, no graphs) so CI certifies the kernels; it lacks warp
shuffles, which ``_install_simulator_shims`` emulates with the hardware's lane
semantics (``shfl_down_sync`` reads lane+delta, or keeps its own value past
lane 31), and it allocates shared arrays racily, which the shims fix.  Under
the simulator the BPE kernels take the warp minimum in one exchange
(``_warp_min_sim``); the shuffle version the GPU compiles is certified there
separately.  Every kernel also compiles to PTX for sm_90 offline in CI
(``tests/test_gpu_ptx.py``).  Code that needs a real GPU is marked
``GPU-only`` below and lives in ``_CupyBackend``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field

import numpy as np
from numba import config as _nbconfig
from numba import cuda, int64

from ..families import stability
from ..families.classes import NFC_UNSAFE as _NFC_UNSAFE_BITS
from ..textcheck import check_text
from . import rules as _rules
from .cuda import DEVICE
from .tables import EngineUnsupported

SIMULATOR = bool(_nbconfig.ENABLE_CUDASIM)

# --- device functions of the rules (numba resolves callees as module globals) -------------
pretokenize_segment = DEVICE.pretokenize_segment
bpe_uncached = DEVICE.bpe_uncached
pair_rank = DEVICE.pair_rank
pair_slot = DEVICE.pair_slot
vocab_lookup = DEVICE.vocab_lookup
literal_at = DEVICE.literal_at

NO_RANK = _rules.NO_RANK
NFC_UNSAFE = _NFC_UNSAFE_BITS
FULL_MASK = 0xFFFFFFFF
NONE_KEY = (1 << 63) - 1  # larger than any (rank << 32 | position)

SMALL_MAX = 32  # bytes: thread per piece at or below
SMALL_HEAP = 3 * SMALL_MAX  # heap entries of rules.bpe_large for such a piece (<= 3L - 3)
WARP_MAX = 128  # bytes: warp per piece at or below
BLOCK_MAX = 4096  # bytes: block per piece at or below; longer: thread + heap (fallback)
SCAN_BD = 256  # shared-memory size of the scan kernels (>= any scan block size)
MAX_WARPS = 32  # per block (shared partials of the block BPE kernel)

# meta: device-side counts and parameters of one pipeline run
M_NB, M_N, M_NCAND, M_NLIT, M_NSEG, M_NP, M_NMID, M_NBIG, M_NHUGE = range(9)
M_NTOK, M_UNSAFE, M_NDOCS, M_MODE = range(9, 13)
M_SIZE = 16
MODE_LITERALS = 1  # extract added-token literals (off for split-level runs)

# lmark bits per character
LM_INSIDE = 1  # strictly inside a literal: never a cut
LM_CUT = 2  # literal start or end, or a document start: always a cut
LM_LIT = 4  # a literal starts here; its index is lmark >> 3


# --- simulator support ---------------------------------------------------------------------
_SHIM_LOCK = threading.Lock()


def _install_simulator_shims() -> None:
    """Give the CUDA simulator the warp intrinsics the kernels use (it has none).

    Lanes are Python threads; a shuffle is an exchange through per-thread slots
    between two simulated ``syncthreads``, with the hardware's lane semantics
    (``shfl_down_sync`` reads lane + delta, or keeps its own value past lane 31).
    A block-wide barrier stands for the warp's, so under the simulator every
    thread of a block must reach each intrinsic: the warp kernel runs one warp
    per block there, and the block kernel calls them uniformly anyway.
    """
    import sys

    from numba.cuda import types as nb_types
    from numba.cuda.np import numpy_support
    from numba.cuda.simulator import kernelapi

    cls = kernelapi.FakeCUDAModule
    if getattr(cls, "_toktier_warp_shims", False):
        return

    def slots_of(t):
        mgr = t._manager
        slots = getattr(mgr, "_toktier_slots", None)
        if slots is None:
            with _SHIM_LOCK:
                slots = getattr(mgr, "_toktier_slots", None)
                if slots is None:
                    size = int(np.prod(mgr._block_dim))
                    if size % 32:
                        raise RuntimeError("warp intrinsics need whole warps (blockDim % 32 == 0)")
                    slots = mgr._toktier_slots = [None] * size
        return slots

    def exchange(value, read):
        t = threading.current_thread()
        slots = slots_of(t)
        slots[t.thread_id] = value
        t.syncthreads()
        out = read(slots, t.thread_id - t.thread_id % 32, t.thread_id % 32)
        t.syncthreads()
        return out

    def shfl_sync(self, mask, value, src_lane):
        return exchange(value, lambda slots, w, lane: slots[w + int(src_lane) % 32])

    def shfl_down_sync(self, mask, value, delta):
        d = int(delta)
        return exchange(
            value, lambda slots, w, lane: slots[w + lane + d if lane + d < 32 else w + lane]
        )

    def syncwarp(self, mask=FULL_MASK):
        threading.current_thread().syncthreads()

    def warp_allmin(self, value):
        """Simulator only: the minimum over the warp in one exchange (see ``warp_min``)."""
        return exchange(value, lambda slots, w, lane: min(slots[w : w + 32]))

    cls.shfl_sync = shfl_sync
    cls.shfl_down_sync = shfl_down_sync
    cls.syncwarp = syncwarp
    cls.toktier_warp_allmin = warp_allmin
    cls._toktier_warp_shims = True

    # The simulator creates a shared array on first use without a lock: two threads of a
    # block arriving together can each get their own array (found as garbage block-scan
    # totals).  Allocate under a lock, keyed like the simulator (caller file and line).
    shared = kernelapi.FakeCUDAShared
    plain = shared.array

    def shared_array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:
            return plain(self, shape, dtype, alignment)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)
        with _SHIM_LOCK:
            res = self._allocations.get(caller)
            if res is None:
                dt = numpy_support.as_dtype(dtype) if isinstance(dtype, nb_types.Type) else dtype
                res = self._allocations[caller] = np.empty(shape, dt)
        return res

    shared.array = shared_array


if SIMULATOR:
    _install_simulator_shims()


# --- scans ----------------------------------------------------------------------------------
@cuda.jit(device=True)
def block_exclusive(sh, tid, bd, v):
    """Exclusive prefix of ``v`` over the block's threads and the block total (Kogge-Stone)."""
    sh[tid] = v
    cuda.syncthreads()
    off = 1
    while off < bd:
        t = sh[tid - off] if tid >= off else 0
        cuda.syncthreads()
        sh[tid] += t
        cuda.syncthreads()
        off *= 2
    r = sh[tid] - v
    total = sh[bd - 1]
    cuda.syncthreads()
    return r, total


@cuda.jit
def k_scan_reduce(meta, len_idx, src, sums, ipt):
    """Pass 1: the sum of every tile of ``blockDim * ipt`` elements of ``src[:meta[len_idx]]``."""
    sh = cuda.shared.array(SCAN_BD, int64)
    tid = cuda.threadIdx.x
    bd = cuda.blockDim.x
    n = meta[len_idx]
    tile_size = bd * ipt
    ntiles = (n + tile_size - 1) // tile_size
    for tile in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
        base = tile * tile_size
        s = 0
        for r in range(ipt):
            i = base + r * bd + tid  # strided: coalesced loads
            if i < n:
                s += int(src[i])
        _ex, total = block_exclusive(sh, tid, bd, s)
        if tid == 0:
            sums[tile] = total


@cuda.jit
def k_scan_sums(meta, len_idx, total_idx, sums, tile_size):
    """Pass 2 (one block, any number of tiles): exclusive scan of the tile sums; total -> meta."""
    sh = cuda.shared.array(SCAN_BD, int64)
    tid = cuda.threadIdx.x
    bd = cuda.blockDim.x
    n = meta[len_idx]
    ntiles = (n + tile_size - 1) // tile_size
    per = (ntiles + bd - 1) // bd
    a = min(tid * per, ntiles)
    b = min(a + per, ntiles)
    s = 0
    for i in range(a, b):
        s += int(sums[i])
    ex, total = block_exclusive(sh, tid, bd, s)
    off = ex
    for i in range(a, b):
        v = int(sums[i])
        sums[i] = off
        off += v
    if tid == 0:
        meta[total_idx] = total


@cuda.jit
def k_scan_apply(meta, len_idx, src, dst, sums, ipt):
    """Pass 3: ``dst[i]`` = exclusive prefix sum of ``src`` at i (tile offset + in-tile scan)."""
    sh = cuda.shared.array(SCAN_BD, int64)
    tid = cuda.threadIdx.x
    bd = cuda.blockDim.x
    n = meta[len_idx]
    tile_size = bd * ipt
    ntiles = (n + tile_size - 1) // tile_size
    for tile in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
        base = tile * tile_size + tid * ipt  # contiguous run per thread
        s = 0
        for r in range(ipt):
            i = base + r
            if i < n:
                s += int(src[i])
        ex, _total = block_exclusive(sh, tid, bd, s)
        off = int(sums[tile]) + ex
        for r in range(ipt):
            i = base + r
            if i < n:
                v = int(src[i])
                dst[i] = off
                off += v


# --- stage 1: UTF-8, classes, NFC flags, literal candidates ---------------------------------
@cuda.jit
def k_begin(params, meta):
    if cuda.grid(1) == 0:
        for k in range(M_SIZE):
            meta[k] = 0
        meta[M_NB] = params[0]
        meta[M_NDOCS] = params[1]
        meta[M_MODE] = params[2]


@cuda.jit
def k_start_flags(meta, u8, flag, doc_unsafe):
    """flag[b] = 1 where byte b starts a character; clears the per-document NFC flags."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    nb = meta[M_NB]
    for b in range(start, nb, stride):
        flag[b] = 1 if (int(u8[b]) & 0xC0) != 0x80 else 0
    for d in range(start, meta[M_NDOCS], stride):
        doc_unsafe[d] = 0


@cuda.jit(device=True)
def doc_of(doc_lo, nd, i):
    """The document holding character i: the last d with doc_lo[d] <= i."""
    lo = 0
    hi = nd
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if doc_lo[mid] <= i:
            lo = mid
        else:
            hi = mid
    return lo


@cuda.jit
def k_decode(meta, u8, flag, cidx, bits, first1, first2, nfc, doc_lo, cps, char_start, fl,
             lcand, lmark, doc_unsafe):  # fmt: skip
    """Decode every character, gather its class bits, flag literal candidates and NFC failures."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    nb = meta[M_NB]
    n = meta[M_N]
    lits = (meta[M_MODE] & MODE_LITERALS) != 0
    nd = meta[M_NDOCS]
    if start == 0:
        char_start[n] = nb
    for b in range(start, nb, stride):
        if flag[b] == 0:
            continue
        i = cidx[b]
        x = int(u8[b])
        if x < 0x80:
            cp = x
        elif x < 0xE0:
            cp = ((x & 0x1F) << 6) | (int(u8[b + 1]) & 0x3F)
        elif x < 0xF0:
            cp = ((x & 0x0F) << 12) | ((int(u8[b + 1]) & 0x3F) << 6) | (int(u8[b + 2]) & 0x3F)
        else:
            cp = (
                ((x & 0x07) << 18)
                | ((int(u8[b + 1]) & 0x3F) << 12)
                | ((int(u8[b + 2]) & 0x3F) << 6)
                | (int(u8[b + 3]) & 0x3F)
            )
        cps[i] = cp
        char_start[i] = b
        f = int(bits[cp])
        fl[i] = f
        lmark[i] = 0
        lcand[i] = 1 if lits and (first1[cp] != 0 or first2[cp] != 0) else 0
        if nfc and (f & NFC_UNSAFE) != 0:
            cuda.atomic.add(meta, M_UNSAFE, 1)
            doc_unsafe[doc_of(doc_lo, nd, i)] = 1


# --- stage 2: added-token literals ----------------------------------------------------------
@cuda.jit
def k_compact(meta, len_idx, flag, idx, out):
    """out[idx[i]] = i for every flagged i < meta[len_idx] (after the scan of ``flag``)."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = meta[len_idx]
    for i in range(start, n, stride):
        if flag[i] != 0:
            out[idx[i]] = i


@cuda.jit(device=True)
def lit_pass(cps, cand, r, nc, pos, stop, first, keys, child, term, out_s, out_e, out_id, m):
    """``rules.literal_scan`` over ``[pos, stop)``, visiting only candidate positions.

    A position whose code point starts no literal of either trie can never match
    (``literal_at`` returns at once there), so skipping it changes nothing.
    Returns the next candidate index and the new literal count.
    """
    while r < nc and cand[r] < stop:
        i = cand[r]
        if i >= pos:
            e, t = literal_at(cps, i, stop, first, keys, child, term)
            if e > 0:
                out_s[m] = i
                out_e[m] = e
                out_id[m] = t
                m += 1
                pos = e
        r += 1
    return r, m


@cuda.jit
def k_lit_walk(meta, cps, cand, doc_lo, f1, k1, c1, t1, f2, k2, c2, t2, has2, a_s, a_e, a_id,
               ls, le, lid):  # fmt: skip
    """One thread: every document's literals, leftmost-longest, as ``cpu._find_literals``.

    Pass 1 matches raw literals over the document; pass 2 matches normalized
    literals in the gaps pass 1 leaves.  Documents are separate inputs: no
    literal crosses a document end.
    """
    if cuda.grid(1) != 0:
        return
    n = meta[M_N]
    nc = meta[M_NCAND]
    nd = meta[M_NDOCS]
    m = 0
    r = 0
    for d in range(nd):
        lo = doc_lo[d]
        hi = doc_lo[d + 1] if d + 1 < nd else n
        while r < nc and cand[r] < lo:
            r += 1
        if not has2:
            r, m = lit_pass(cps, cand, r, nc, lo, hi, f1, k1, c1, t1, ls, le, lid, m)
            continue
        r0 = r
        r, na = lit_pass(cps, cand, r, nc, lo, hi, f1, k1, c1, t1, a_s, a_e, a_id, 0)
        q = r0
        pos = lo
        for k in range(na + 1):
            stop = a_s[k] if k < na else hi
            while q < nc and cand[q] < pos:
                q += 1
            q, m = lit_pass(cps, cand, q, nc, pos, stop, f2, k2, c2, t2, ls, le, lid, m)
            if k < na:
                ls[m] = a_s[k]
                le[m] = a_e[k]
                lid[m] = a_id[k]
                m += 1
                pos = a_e[k]
        r = max(r, q)
    meta[M_NLIT] = m


@cuda.jit
def k_mark_literals(meta, ls, le, lmark):
    """Literal k: its start (with its index) and end are cuts, its inside never is."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = meta[M_N]
    nlit = meta[M_NLIT]
    for k in range(start, nlit, stride):
        s = ls[k]
        e = le[k]
        cuda.atomic.or_(lmark, s, LM_CUT | LM_LIT | (k << 3))
        for p in range(s + 1, e):
            cuda.atomic.or_(lmark, p, LM_INSIDE)
        if e < n:
            cuda.atomic.or_(lmark, e, LM_CUT)


@cuda.jit
def k_mark_docs(meta, doc_lo, lmark):
    """Every document start is a cut (documents of a batch are separate inputs)."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = meta[M_N]
    for d in range(start, meta[M_NDOCS], stride):
        p = doc_lo[d]
        if p < n:
            cuda.atomic.or_(lmark, p, LM_CUT)


# --- stage 3: the boundary predicate and segments -------------------------------------------
@cuda.jit
def k_cuts(meta, cps, fl, class_of, stable, ncls, nfc, lmark, cut):
    """cut[p]: may the text be cut before character p -- ``cpu._cut_ok``, per character."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = meta[M_N]
    for p in range(start, n, stride):
        mk = int(lmark[p])
        c = 0
        if p == 0 or (mk & LM_CUT) != 0:
            c = 1  # literal edges and document starts split the reference's input too
        elif (mk & LM_INSIDE) == 0:
            unsafe = nfc and ((int(fl[p - 1]) | int(fl[p])) & NFC_UNSAFE) != 0
            if not unsafe and stable[int(class_of[cps[p - 1]]) * ncls + int(class_of[cps[p]])]:
                c = 1
        cut[p] = c


@cuda.jit
def k_close(meta, count_idx, len_idx, lo):
    """lo[meta[count_idx]] = meta[len_idx]: the end sentinel of a compacted start list."""
    if cuda.grid(1) == 0:
        lo[meta[count_idx]] = meta[len_idx]


# --- stage 4: pre-tokenization, thread per segment ------------------------------------------
@cuda.jit
def k_pretokenize(meta, seg_lo, cps, fl, fold, family, lmark, ends, pflag):
    """pflag[p] = 1 where a piece starts; a literal segment is one piece."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    nseg = meta[M_NSEG]
    for k in range(start, nseg, stride):
        lo = seg_lo[k]
        hi = seg_lo[k + 1]
        for p in range(lo, hi):
            pflag[p] = 0
        pflag[lo] = 1
        if (int(lmark[lo]) & LM_LIT) == 0:
            m = pretokenize_segment(cps, fl, fold, lo, hi, family, ends, lo)
            for q in range(lo, m):
                e = ends[q]
                if e < hi:
                    pflag[e] = 1


# --- stage 5: BPE by piece length -----------------------------------------------------------
@cuda.jit
def k_bpe_small(meta, piece_lo, char_start, u8, lmark, lid, byte_ids, keys, ranks, merged,
                vkeys, vids, pool, pool_off, ignore_merges, block_max, otmp, cnt, wl_mid,
                wl_big, wl_huge):  # fmt: skip
    """Thread per piece: literals, single bytes and pieces <= SMALL_MAX bytes; queue the rest.

    A piece's tokens go to ``otmp`` from its own first byte on (a piece of L bytes
    has at most L tokens, so pieces never overlap there).
    """
    sym = cuda.local.array(SMALL_MAX, int64)
    rank = cuda.local.array(SMALL_MAX, int64)
    nxt = cuda.local.array(SMALL_MAX, int64)
    prv = cuda.local.array(SMALL_MAX, int64)
    heap = cuda.local.array(SMALL_HEAP, int64)
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    npieces = meta[M_NP]
    for j in range(start, npieces, stride):
        lo = piece_lo[j]
        b0 = int(char_start[lo])
        b1 = int(char_start[piece_lo[j + 1]])
        length = b1 - b0
        mk = int(lmark[lo])
        if (mk & LM_LIT) != 0:
            otmp[b0] = lid[mk >> 3]
            cnt[j] = 1
        elif length == 1:
            otmp[b0] = byte_ids[u8[b0]]
            cnt[j] = 1
        elif length <= SMALL_MAX:
            m = bpe_uncached(u8, b0, b1, byte_ids, keys, ranks, merged, vkeys, vids, pool,
                             pool_off, ignore_merges, sym, rank, nxt, prv, heap, otmp, b0)  # fmt: skip
            cnt[j] = m - b0
        elif length <= WARP_MAX:
            wl_mid[cuda.atomic.add(meta, M_NMID, 1)] = j
        elif length <= block_max:
            wl_big[cuda.atomic.add(meta, M_NBIG, 1)] = j
        else:
            wl_huge[cuda.atomic.add(meta, M_NHUGE, 1)] = j


@cuda.jit(device=True)
def merge_at(k, b0, sym, rnk, nxt, prv, keys, ranks, merged):
    """Merge the live pair at piece position k with its right neighbour; refresh the two ranks."""
    j = nxt[b0 + k]
    sym[b0 + k] = merged[pair_slot(keys, sym[b0 + k], sym[b0 + j])]
    sym[b0 + j] = -1
    rnk[b0 + j] = NO_RANK
    nj = nxt[b0 + j]
    nxt[b0 + k] = nj
    if nj >= 0:
        prv[b0 + nj] = k
        rnk[b0 + k] = pair_rank(keys, ranks, sym[b0 + k], sym[b0 + nj])
    else:
        rnk[b0 + k] = NO_RANK
    p = prv[b0 + k]
    if p >= 0:
        rnk[b0 + p] = pair_rank(keys, ranks, sym[b0 + p], sym[b0 + k])


@cuda.jit(device=True)
def local_best(rnk, b0, length, first, step):
    """Smallest (rank << 32 | position) over this thread's positions (NONE_KEY if none)."""
    best = NONE_KEY
    for k in range(first, length, step):
        r = int(rnk[b0 + k])
        if r != NO_RANK:
            key = (r << 32) | k
            if key < best:
                best = key
    return best


@cuda.jit(device=True)
def warp_min_shfl(best):
    """Minimum over the 32 lanes by shuffles, broadcast from lane 0 (every lane must call it)."""
    off = 16
    while off > 0:
        other = cuda.shfl_down_sync(FULL_MASK, best, off)
        if other < best:
            best = other
        off //= 2
    return cuda.shfl_sync(FULL_MASK, best, 0)


def _warp_min_sim(best):  # simulator only: kernels there are plain Python
    """``warp_min_shfl``'s result in one simulated exchange instead of six.

    Six shuffles cost six pairs of simulated barriers per merge round, which
    makes long pieces minutes slow; the shuffle version itself is certified
    under the simulator by its own test (``tests/test_gpu_cudasim.py``) and is
    what the GPU compiles.  Assign ``gpu.warp_min = gpu.warp_min_shfl`` to run
    the kernels with it under the simulator.
    """
    return cuda.toktier_warp_allmin(best)


warp_min = _warp_min_sim if SIMULATOR else warp_min_shfl


@cuda.jit(device=True)
def emit_list(b0, sym, nxt, otmp):
    """Write the live symbols of a merged piece to ``otmp[b0:]`` in order; returns the count."""
    m = 0
    k = 0
    while k >= 0:
        otmp[b0 + m] = sym[b0 + k]
        m += 1
        k = nxt[b0 + k]
    return m


@cuda.jit
def k_bpe_warp(meta, wl, piece_lo, char_start, u8, byte_ids, keys, ranks, merged, vkeys, vids,
               pool, pool_off, ignore_merges, sym, rnk, nxt, prv, otmp, cnt):  # fmt: skip
    """Warp per piece of 33..128 bytes: one exact merge per round, argmin by warp shuffles."""
    lane = cuda.threadIdx.x % 32
    wpb = cuda.blockDim.x // 32
    first_warp = cuda.blockIdx.x * wpb + cuda.threadIdx.x // 32
    nwarps = cuda.gridDim.x * wpb
    count = meta[M_NMID]
    for w in range(first_warp, count, nwarps):  # warp-uniform
        j = wl[w]
        lo = piece_lo[j]
        b0 = int(char_start[lo])
        length = int(char_start[piece_lo[j + 1]]) - b0
        found = -1
        if ignore_merges:
            if lane == 0:
                found = vocab_lookup(u8, b0, b0 + length, vkeys, vids, pool, pool_off)
            found = cuda.shfl_sync(FULL_MASK, found, 0)
        if found >= 0:
            if lane == 0:
                otmp[b0] = found
                cnt[j] = 1
        else:
            for k in range(lane, length, 32):
                sym[b0 + k] = byte_ids[u8[b0 + k]]
                nxt[b0 + k] = k + 1 if k + 1 < length else -1
                prv[b0 + k] = k - 1
            cuda.syncwarp(FULL_MASK)
            for k in range(lane, length, 32):
                if k + 1 < length:
                    rnk[b0 + k] = pair_rank(keys, ranks, sym[b0 + k], sym[b0 + k + 1])
                else:
                    rnk[b0 + k] = NO_RANK
            cuda.syncwarp(FULL_MASK)
            while True:
                best = warp_min(local_best(rnk, b0, length, lane, 32))
                if best == NONE_KEY:
                    break
                if lane == 0:
                    merge_at(best & 0xFFFFFFFF, b0, sym, rnk, nxt, prv, keys, ranks, merged)
                cuda.syncwarp(FULL_MASK)
            if lane == 0:
                cnt[j] = emit_list(b0, sym, nxt, otmp)
        cuda.syncwarp(FULL_MASK)


@cuda.jit
def k_bpe_block(meta, wl, piece_lo, char_start, u8, byte_ids, keys, ranks, merged, vkeys, vids,
                pool, pool_off, ignore_merges, sym, rnk, nxt, prv, otmp, cnt):  # fmt: skip
    """Block per piece of 129..block_max bytes: warp shuffles, then shared memory across warps."""
    part = cuda.shared.array(MAX_WARPS, int64)
    bcast = cuda.shared.array(1, int64)
    tid = cuda.threadIdx.x
    bd = cuda.blockDim.x
    lane = tid % 32
    wid = tid // 32
    nwarp = (bd + 31) // 32
    count = meta[M_NBIG]
    for w in range(cuda.blockIdx.x, count, cuda.gridDim.x):  # block-uniform
        j = wl[w]
        lo = piece_lo[j]
        b0 = int(char_start[lo])
        length = int(char_start[piece_lo[j + 1]]) - b0
        if tid == 0:
            f = -1
            if ignore_merges:
                f = vocab_lookup(u8, b0, b0 + length, vkeys, vids, pool, pool_off)
            bcast[0] = f
        cuda.syncthreads()
        found = bcast[0]
        cuda.syncthreads()
        if found >= 0:
            if tid == 0:
                otmp[b0] = found
                cnt[j] = 1
        else:
            for k in range(tid, length, bd):
                sym[b0 + k] = byte_ids[u8[b0 + k]]
                nxt[b0 + k] = k + 1 if k + 1 < length else -1
                prv[b0 + k] = k - 1
            cuda.syncthreads()
            for k in range(tid, length, bd):
                if k + 1 < length:
                    rnk[b0 + k] = pair_rank(keys, ranks, sym[b0 + k], sym[b0 + k + 1])
                else:
                    rnk[b0 + k] = NO_RANK
            cuda.syncthreads()
            while True:
                best = warp_min(local_best(rnk, b0, length, tid, bd))
                if lane == 0:
                    part[wid] = best
                cuda.syncthreads()
                if tid == 0:
                    b = part[0]
                    for q in range(1, nwarp):
                        if part[q] < b:
                            b = part[q]
                    if b != NONE_KEY:
                        merge_at(b & 0xFFFFFFFF, b0, sym, rnk, nxt, prv, keys, ranks, merged)
                    bcast[0] = b
                cuda.syncthreads()
                if bcast[0] == NONE_KEY:
                    break
            if tid == 0:
                cnt[j] = emit_list(b0, sym, nxt, otmp)
        cuda.syncthreads()


@cuda.jit
def k_bpe_huge(meta, wl, piece_lo, char_start, u8, byte_ids, keys, ranks, merged, vkeys, vids,
               pool, pool_off, ignore_merges, sym, rnk, nxt, prv, heap, otmp, cnt):  # fmt: skip
    """Thread per piece longer than block_max: the rules' heap BPE (exact, O(L log L))."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    count = meta[M_NHUGE]
    for w in range(start, count, stride):
        j = wl[w]
        b0 = int(char_start[piece_lo[j]])
        b1 = int(char_start[piece_lo[j + 1]])
        m = bpe_uncached(u8, b0, b1, byte_ids, keys, ranks, merged, vkeys, vids, pool, pool_off,
                         ignore_merges, sym[b0:b1], rnk[b0:b1], nxt[b0:b1], prv[b0:b1],
                         heap[3 * b0 : 3 * b1], otmp, b0)  # fmt: skip
        cnt[j] = m - b0


# --- stage 6: output compaction and character spans -----------------------------------------
@cuda.jit(device=True)
def char_of(cidx, u8, b):
    """The character holding byte b (cidx: exclusive scan of the char-start flags)."""
    i = int(cidx[b])
    return i if (int(u8[b]) & 0xC0) != 0x80 else i - 1


@cuda.jit
def k_output(meta, piece_lo, char_start, cidx, u8, lmark, lid, toff, cnt, otmp, nbytes, packed):
    """Tokens of piece j at ``toff[j]``: packed = [ids | starts | ends], each ntok long."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    npieces = meta[M_NP]
    ntok = meta[M_NTOK]
    for j in range(start, npieces, stride):
        lo = piece_lo[j]
        o = int(toff[j])
        mk = int(lmark[lo])
        if (mk & LM_LIT) != 0:
            packed[o] = lid[mk >> 3]
            packed[ntok + o] = lo
            packed[2 * ntok + o] = piece_lo[j + 1]
        else:
            b = int(char_start[lo])
            base = b
            for t in range(cnt[j]):
                tok = otmp[base + t]
                last = b + int(nbytes[tok]) - 1
                packed[o + t] = tok
                packed[ntok + o + t] = char_of(cidx, u8, b)
                packed[2 * ntok + o + t] = char_of(cidx, u8, last) + 1
                b = last + 1


# --- host side ------------------------------------------------------------------------------
class GpuUnavailable(EngineUnsupported):
    """No usable CUDA GPU (and no simulator): the GPU engine cannot run here."""


@dataclass(frozen=True)
class _Geometry:
    """Block sizes and grid caps; grids come from buffer capacity, capped, grid-stride loops."""

    bd: int  # elementwise kernels
    max_blocks: int
    scan_bd: int
    scan_ipt: int
    warp_bd: int  # warps per block * 32 (warp BPE)
    block_bd: int  # block BPE
    huge_bd: int

    def blocks(self, items: int, per_block: int) -> int:
        return max(1, min(-(-max(items, 1) // per_block), self.max_blocks))


class _SimBackend:
    """CUDA simulator: "device" arrays are numba FakeCUDAArrays over host memory."""

    name = "cudasim"
    simulator = True
    lock = threading.Lock()  # the simulator runs one kernel at a time per process
    graphs_reason = "CUDA simulator: no stream capture (numba external streams and CuPy need a GPU)"
    # One warp per block for the warp kernel (the simulated warp barrier is the block's).
    # Few threads per scan block: a simulated barrier costs about a millisecond per thread.
    geometry = _Geometry(bd=32, max_blocks=2, scan_bd=8, scan_ipt=128, warp_bd=32, block_bd=64,
                         huge_bd=32)  # fmt: skip
    buckets = (1 << 12, 1 << 14, 1 << 16, 1 << 18)

    def __init__(self):
        self.syncs = 0
        self.launches = 0

    def empty(self, n: int, dtype):
        return cuda.device_array(max(int(n), 1), dtype=dtype)

    def to_device(self, host: np.ndarray):
        return cuda.to_device(np.ascontiguousarray(host))

    def put(self, dev, host: np.ndarray) -> None:
        if len(host):
            dev[: len(host)].copy_to_device(np.ascontiguousarray(host, dtype=dev.dtype))

    def fetch(self, dev, n: int) -> np.ndarray:
        """Device -> host copy of ``dev[:n]``: one host synchronization."""
        self.syncs += 1
        return dev[: max(int(n), 0)].copy_to_host() if n > 0 else np.zeros(0, dev.dtype)

    def device_copy(self, dev, n: int):
        """A fresh device array holding ``dev[:n]`` (host memory under the simulator)."""
        return dev[: max(int(n), 0)].copy_to_host() if n > 0 else np.zeros(0, dev.dtype)

    def host_to_device_array(self, host: np.ndarray):
        return np.asarray(host)

    def launch(self, kernel, grid: int, block: int, *args) -> None:
        self.launches += 1
        kernel[grid, block](*args)

    def capture(self, fn):  # pragma: no cover - never called: graphs are off here
        raise RuntimeError(self.graphs_reason)

    def forget(self, ws) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def device_facts(self) -> dict:
        return {"device": "cudasim", "gpu": None, "driver": None, "runtime": None}


class _CupyBackend:  # GPU-only: none of this runs without a CUDA device
    """Real GPU: CuPy owns memory, the stream and graphs; numba launches the kernels."""

    name = "cupy"
    simulator = False
    graphs_reason = ""
    buckets = (1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 23)  # 64K .. 8M bytes

    def __init__(self):
        import cupy

        self.cp = cupy
        self.lock = threading.Lock()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.nb_stream = cuda.external_stream(self.stream.ptr)
        sms = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["multiProcessorCount"]
        self.geometry = _Geometry(bd=256, max_blocks=32 * int(sms), scan_bd=256, scan_ipt=16,
                                  warp_bd=128, block_bd=256, huge_bd=32)  # fmt: skip
        self.syncs = 0
        self.launches = 0
        self._views: dict[int, tuple] = {}
        self._staging: dict[int, tuple] = {}

    # Buffers are CuPy arrays; kernels get numba views made once (no per-launch
    # __cuda_array_interface__ conversion, no stream sync inside a capture).
    def _view(self, a):
        v = self._views.get(id(a))
        if v is None or v[0] is not a:
            v = self._views[id(a)] = (a, cuda.as_cuda_array(a, sync=False))
        return v[1]

    def synchronize(self) -> None:
        self.stream.synchronize()

    def forget(self, ws) -> None:
        """Drop the views of a discarded workspace's buffers (they hold the arrays alive)."""
        for a in vars(ws).values():
            for cache in (self._views, self._staging):
                v = cache.get(id(a))
                if v is not None and v[0] is a:
                    del cache[id(a)]

    def empty(self, n: int, dtype):
        return self.cp.empty(max(int(n), 1), dtype=dtype)

    def to_device(self, host: np.ndarray):
        with self.stream:
            a = self.cp.asarray(np.ascontiguousarray(host))
        self.stream.synchronize()  # once per engine (tables), not per request
        return a

    def put(self, dev, host: np.ndarray) -> None:
        """Host -> device through a pinned staging buffer per destination: a truly async copy
        (a pageable source would make the runtime synchronize the stream first).  The buffer
        is free again at the latest when the request's first fetch synchronizes."""
        n = len(host)
        if not n:
            return
        st = self._staging.get(id(dev))
        if st is None or st[0] is not dev:
            import cupyx

            st = self._staging[id(dev)] = (dev, cupyx.empty_pinned(dev.shape, dtype=dev.dtype))
        st[1][:n] = host
        dev[:n].set(st[1][:n], stream=self.stream)

    def fetch(self, dev, n: int) -> np.ndarray:
        self.syncs += 1
        if n <= 0:
            self.stream.synchronize()
            return np.zeros(0, dtype=dev.dtype)
        return dev[: int(n)].get(stream=self.stream)  # blocking copy: one synchronization

    def device_copy(self, dev, n: int):
        with self.stream:
            return dev[: max(int(n), 0)].copy()

    def host_to_device_array(self, host: np.ndarray):
        with self.stream:
            return self.cp.asarray(host)

    def launch(self, kernel, grid: int, block: int, *args) -> None:
        self.launches += 1
        conv = [self._view(a) if isinstance(a, self.cp.ndarray) else a for a in args]
        kernel[grid, block, self.nb_stream](*conv)

    def capture(self, fn):
        """Record ``fn``'s launches on the stream as a CUDA graph (kernels already compiled)."""
        s = self.stream
        s.begin_capture()
        try:
            fn()
        finally:
            graph = s.end_capture()
        graph.upload(s)
        return graph

    def device_facts(self) -> dict:
        rt = self.cp.cuda.runtime
        props = rt.getDeviceProperties(self.cp.cuda.Device().id)
        name = props["name"]
        return {
            "device": "gpu",
            "gpu": name.decode() if isinstance(name, bytes) else str(name),
            "driver": rt.driverGetVersion(),
            "runtime": rt.runtimeGetVersion(),
            "memory_bytes": int(props["totalGlobalMem"]),
            "sm_count": int(props["multiProcessorCount"]),
        }


def _make_backend():
    if SIMULATOR:
        return _SimBackend()
    return _CupyBackend()


_INT = np.int32  # index buffers (capacities stay far below 2**31)
_COUNTS = (("chars", M_N), ("literals", M_NLIT), ("segments", M_NSEG), ("pieces", M_NP),
           ("warp_pieces", M_NMID), ("block_pieces", M_NBIG), ("heap_pieces", M_NHUGE),
           ("tokens", M_NTOK), ("nfc_unsafe_chars", M_UNSAFE))  # fmt: skip


class _Workspace:
    """Every buffer of one pipeline run, sized by a byte capacity (reused across requests)."""

    def __init__(self, be, cap: int, engine: GpuEngine, docs: int = 1):
        g = be.geometry
        self.cap = cap
        e = be.empty
        self.params = e(4, np.int64)
        self.meta = e(M_SIZE, np.int64)
        self.u8 = e(cap, np.uint8)
        for name in ("flag", "cidx", "lcand", "lidx", "cand", "ls", "le", "lid", "lmark", "cut",
                     "sidx", "ends", "pflag", "pidx", "cnt", "toff", "wl_mid", "wl_big",
                     "wl_huge", "otmp"):  # fmt: skip
            setattr(self, name, e(cap, _INT))
        has2 = engine._has2
        for name in ("a_s", "a_e", "a_id"):  # pass-1 literals, only for two-pass tokenizers
            setattr(self, name, e(cap if has2 else 1, _INT))
        self.cps = e(cap, np.uint32)
        self.fl = e(cap, np.uint16)
        self.char_start = e(cap + 1, _INT)
        self.seg_lo = e(cap + 1, _INT)
        self.piece_lo = e(cap + 1, _INT)
        for name in ("sym", "rnk", "nxt", "prv"):
            setattr(self, name, e(cap, np.int64))
        self.heap = e(3 * cap, np.int64)
        self.packed = e(3 * cap, np.int64)
        tile = g.scan_bd * g.scan_ipt
        self.sums = e(-(-(cap + 1) // tile) + 1, np.int64)
        self.set_docs(be, np.zeros(1, dtype=_INT), docs)
        self.graph = None

    def set_docs(self, be, doc_lo: np.ndarray, capacity: int | None = None) -> None:
        need = max(len(doc_lo), capacity or 0, 1)
        if getattr(self, "doc_cap", 0) < need:
            self.doc_cap = need
            self.doc_lo = be.empty(need, _INT)
            self.doc_unsafe = be.empty(need, _INT)
        be.put(self.doc_lo, doc_lo.astype(_INT))


@dataclass
class _Stats:
    requests: int = 0
    host_syncs: int = 0
    kernel_launches: int = 0
    graph_replays: int = 0
    delegated_docs: int = 0
    last: dict = field(default_factory=dict)


class GpuEngine:
    """toktier's exact GPU engine for one tokenizer (byte-level BPE families)."""

    name = "gpu"

    def __init__(self, tok, *, graphs: bool | None = None, block_max: int = BLOCK_MAX,
                 buckets: tuple[int, ...] | None = None, cpu=None, _backend=None):  # fmt: skip
        from .cpu import CpuEngine, engine_for

        if _backend is None and not self.available():
            raise GpuUnavailable("no usable CUDA GPU with CuPy (and NUMBA_ENABLE_CUDASIM is off)")
        self.tokenizer = tok
        self._cpu = cpu or engine_for(tok) or CpuEngine(tok)  # raises EngineUnsupported
        self.tables = t = self._cpu.tables
        self._be = be = _backend or _make_backend()
        if block_max < WARP_MAX:
            raise ValueError(f"block_max must be >= {WARP_MAX}")
        self.block_max = int(block_max)
        self.buckets = tuple(sorted(buckets or be.buckets))
        if graphs and be.simulator:
            graphs = False
        self.graphs = (not be.simulator) if graphs is None else bool(graphs)
        self.graphs_reason = be.graphs_reason if be.simulator else ("" if self.graphs else "off")
        self._has2 = bool(t.normalized_literals.size > 0)
        class_of = stability.class_map(tok.family, tok.class_table, tok.hf.normalizer)
        stable = np.ascontiguousarray(stability.cut_matrix(tok.family))
        d = be.to_device
        self._ncls = int(stable.shape[0])
        self._dev = {
            "bits": d(t.bits),
            "fold": d(t.fold),
            "class_of": d(class_of.astype(np.uint8)),
            "stable": d(stable.astype(np.uint8).ravel()),
            "byte_ids": d(t.byte_ids),
            "keys": d(t.pair_keys),
            "ranks": d(t.pair_ranks),
            "merged": d(t.pair_merged),
            "vkeys": d(t.vocab_keys),
            "vids": d(t.vocab_ids),
            "pool": d(t.pool),
            "pool_off": d(t.pool_off),
            "nbytes": d(t.token_nbytes),
        }
        for tag, trie in (("1", t.literals), ("2", t.normalized_literals)):
            self._dev["first" + tag] = d(trie.first)
            self._dev["tkeys" + tag] = d(trie.keys)
            self._dev["child" + tag] = d(trie.child)
            self._dev["term" + tag] = d(trie.term)
        self._lock = threading.Lock()
        self._inflight = 0
        self._inflight_lock = threading.Lock()
        self._spaces: dict[int, _Workspace] = {}  # single requests (graphs live here)
        self._batch_spaces: dict[int, _Workspace] = {}
        self._stats = _Stats()
        self.compile_seconds: float | None = None

    def __repr__(self) -> str:
        return f"GpuEngine({self.tokenizer.name!r}, backend={self._be.name}, graphs={self.graphs})"

    # --- availability and state -------------------------------------------------------------
    @classmethod
    def available(cls) -> bool:
        """True with the CUDA simulator on, or with a real CUDA GPU and CuPy importable."""
        if SIMULATOR:
            return True
        try:
            import cupy

            return bool(cuda.is_available()) and cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:
            return False

    @property
    def backend(self) -> str:
        return self._be.name

    def busy(self) -> bool:
        """True while a request is in flight (a router may spill to the CPU meanwhile)."""
        return self._inflight > 0

    def stats(self) -> dict:
        s = self._stats
        per = s.host_syncs / s.requests if s.requests else 0.0
        return {
            "backend": self._be.name,
            "graphs_enabled": self.graphs,
            "graphs_reason": self.graphs_reason,
            "requests": s.requests,
            "host_syncs": s.host_syncs,
            "host_syncs_per_request": per,
            "kernel_launches": s.kernel_launches,
            "graph_replays": s.graph_replays,
            "delegated_docs": s.delegated_docs,
            "buckets": list(self.buckets),
            "captured_buckets": sorted(c for c, w in self._spaces.items() if w.graph is not None),
            "last_request": dict(s.last),
        }

    def device_facts(self) -> dict:
        return self._be.device_facts()

    def synchronize(self) -> None:
        """Wait for the engine's stream (timing of device-array delivery; not a request)."""
        self._be.synchronize()

    @contextlib.contextmanager
    def _request(self, kind: str, docs: int = 1):
        """One request: the device lock, in-flight flag and per-request sync accounting."""
        with self._inflight_lock:
            self._inflight += 1
        try:
            with self._be.lock, self._lock:
                s0, l0 = self._be.syncs, self._be.launches
                info = {"kind": kind, "docs": docs, "graph": False, "delegated": 0}
                yield info
                info["host_syncs"] = self._be.syncs - s0
                info["kernel_launches"] = self._be.launches - l0
                st = self._stats
                st.requests += 1
                st.host_syncs += info["host_syncs"]
                st.kernel_launches += info["kernel_launches"]
                st.graph_replays += int(info["graph"])
                st.delegated_docs += info["delegated"]
                st.last = info
        finally:
            with self._inflight_lock:
                self._inflight -= 1

    # --- workspaces and the kernel chain ----------------------------------------------------
    def _capacity(self, nb: int) -> int:
        for c in self.buckets:
            if nb <= c:
                return c
        top = self.buckets[-1]
        return -(-nb // top) * top

    def _workspace(self, nb: int, *, batch: bool = False) -> _Workspace:
        """The workspace of ``nb``'s bucket.  Batches have their own (their document arrays
        grow, which would leave a captured graph pointing at freed buffers)."""
        spaces = self._batch_spaces if batch else self._spaces
        cap = self._capacity(nb)
        ws = spaces.get(cap)
        if ws is None:
            if cap > self.buckets[-1]:  # one oversized workspace at a time
                for c in [c for c in spaces if c > self.buckets[-1]]:
                    self._be.forget(spaces.pop(c))
            ws = spaces[cap] = _Workspace(self._be, cap, self)
        return ws

    def _scan(self, ws: _Workspace, len_idx: int, src, dst, total_idx: int) -> None:
        g = self._be.geometry
        L = self._be.launch
        tile = g.scan_bd * g.scan_ipt
        blocks = g.blocks(ws.cap + 1, tile)
        L(k_scan_reduce, blocks, g.scan_bd, ws.meta, len_idx, src, ws.sums, g.scan_ipt)
        L(k_scan_sums, 1, g.scan_bd, ws.meta, len_idx, total_idx, ws.sums, tile)
        L(k_scan_apply, blocks, g.scan_bd, ws.meta, len_idx, src, dst, ws.sums, g.scan_ipt)

    def _pipeline(self, ws: _Workspace, *, literals: bool, stage: str) -> None:
        """Launch the chain on the stream; nothing here reads the device (graph-capturable)."""
        be, g, dv, t = self._be, self._be.geometry, self._dev, self.tables
        L = be.launch
        cap = ws.cap
        el = g.blocks(cap, g.bd)
        L(k_begin, 1, 1, ws.params, ws.meta)
        L(k_start_flags, el, g.bd, ws.meta, ws.u8, ws.flag, ws.doc_unsafe)
        self._scan(ws, M_NB, ws.flag, ws.cidx, M_N)
        L(k_decode, el, g.bd, ws.meta, ws.u8, ws.flag, ws.cidx, dv["bits"], dv["first1"],
          dv["first2"], t.nfc, ws.doc_lo, ws.cps, ws.char_start, ws.fl, ws.lcand, ws.lmark,
          ws.doc_unsafe)  # fmt: skip
        if literals:
            self._scan(ws, M_N, ws.lcand, ws.lidx, M_NCAND)
            L(k_compact, el, g.bd, ws.meta, M_N, ws.lcand, ws.lidx, ws.cand)
            L(k_lit_walk, 1, 1, ws.meta, ws.cps, ws.cand, ws.doc_lo, dv["first1"], dv["tkeys1"],
              dv["child1"], dv["term1"], dv["first2"], dv["tkeys2"], dv["child2"], dv["term2"],
              self._has2, ws.a_s, ws.a_e, ws.a_id, ws.ls, ws.le, ws.lid)  # fmt: skip
            L(k_mark_literals, el, g.bd, ws.meta, ws.ls, ws.le, ws.lmark)
        L(k_mark_docs, el, g.bd, ws.meta, ws.doc_lo, ws.lmark)
        L(k_cuts, el, g.bd, ws.meta, ws.cps, ws.fl, dv["class_of"], dv["stable"], self._ncls,
          t.nfc, ws.lmark, ws.cut)  # fmt: skip
        self._scan(ws, M_N, ws.cut, ws.sidx, M_NSEG)
        L(k_compact, el, g.bd, ws.meta, M_N, ws.cut, ws.sidx, ws.seg_lo)
        L(k_close, 1, 1, ws.meta, M_NSEG, M_N, ws.seg_lo)
        if stage == "cuts":
            return
        L(k_pretokenize, el, g.bd, ws.meta, ws.seg_lo, ws.cps, ws.fl, dv["fold"], t.family_code,
          ws.lmark, ws.ends, ws.pflag)  # fmt: skip
        self._scan(ws, M_N, ws.pflag, ws.pidx, M_NP)
        L(k_compact, el, g.bd, ws.meta, M_N, ws.pflag, ws.pidx, ws.piece_lo)
        L(k_close, 1, 1, ws.meta, M_NP, M_N, ws.piece_lo)
        if stage == "pieces":
            return
        bpe = (dv["byte_ids"], dv["keys"], dv["ranks"], dv["merged"], dv["vkeys"], dv["vids"],
               dv["pool"], dv["pool_off"], t.ignore_merges)  # fmt: skip
        L(k_bpe_small, el, g.bd, ws.meta, ws.piece_lo, ws.char_start, ws.u8, ws.lmark, ws.lid,
          *bpe, self.block_max, ws.otmp, ws.cnt, ws.wl_mid, ws.wl_big, ws.wl_huge)  # fmt: skip
        scratch = (ws.sym, ws.rnk, ws.nxt, ws.prv)
        mid_blocks = g.blocks(-(-cap // (SMALL_MAX + 1)), g.warp_bd // 32)
        L(k_bpe_warp, mid_blocks, g.warp_bd, ws.meta, ws.wl_mid, ws.piece_lo, ws.char_start,
          ws.u8, *bpe, *scratch, ws.otmp, ws.cnt)  # fmt: skip
        L(k_bpe_block, g.blocks(cap, WARP_MAX + 1), g.block_bd, ws.meta, ws.wl_big, ws.piece_lo,
          ws.char_start, ws.u8, *bpe, *scratch, ws.otmp, ws.cnt)  # fmt: skip
        L(k_bpe_huge, g.blocks(-(-cap // (self.block_max + 1)), g.huge_bd), g.huge_bd, ws.meta,
          ws.wl_huge, ws.piece_lo, ws.char_start, ws.u8, *bpe, *scratch, ws.heap, ws.otmp,
          ws.cnt)  # fmt: skip
        self._scan(ws, M_NP, ws.cnt, ws.toff, M_NTOK)
        L(k_output, el, g.bd, ws.meta, ws.piece_lo, ws.char_start, ws.cidx, ws.u8, ws.lmark,
          ws.lid, ws.toff, ws.cnt, ws.otmp, dv["nbytes"], ws.packed)  # fmt: skip

    def _run(self, ws: _Workspace, u8: np.ndarray, doc_lo: np.ndarray, *, literals: bool,
             stage: str, info: dict) -> np.ndarray:  # fmt: skip
        """Upload, run the chain (graph replay when possible), fetch ``meta`` (1 sync)."""
        be = self._be
        be.put(ws.u8, u8)
        mode = MODE_LITERALS if literals else 0
        be.put(ws.params, np.array([u8.size, len(doc_lo), mode, 0], dtype=np.int64))
        # Single-request workspaces keep doc_lo = [0] from their creation: it never grows,
        # so a captured graph's pointers stay valid.
        single = ws in self._spaces.values()
        use_graph = self.graphs and single and literals and stage == "ids"
        if use_graph and ws.graph is None:
            ws.graph = self._capture(ws)
        if use_graph and ws.graph is not None:
            ws.graph.launch(be.stream)  # GPU-only
            info["graph"] = True
        else:
            self._pipeline(ws, literals=literals, stage=stage)
        meta = be.fetch(ws.meta, M_SIZE)
        for key, idx in _COUNTS:  # device counts, summed over the runs of a request
            info[key] = info.get(key, 0) + int(meta[idx])
        return meta

    def _capture(self, ws: _Workspace):  # GPU-only
        """The bucket's bytes->IDs chain as a CUDA graph; on failure, eager from then on."""
        try:
            return self._be.capture(lambda: self._pipeline(ws, literals=True, stage="ids"))
        except Exception as exc:  # keep serving eagerly, and say why
            self.graphs = False
            self.graphs_reason = f"capture failed: {type(exc).__name__}: {exc}"
            return None

    # --- single request -------------------------------------------------------------------
    def _single(self, text: str, info: dict):
        """Run one text; returns (meta, ws) or None when the text was empty."""
        check_text(text)
        u8 = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        if not u8.size:
            return None
        ws = self._workspace(u8.size)
        meta = self._run(ws, u8, np.zeros(1, dtype=_INT), literals=True, stage="ids", info=info)
        return meta, ws

    def _delegate(self, text: str, info: dict):
        info["delegated"] += 1
        return self._cpu.encode_full(text)

    @staticmethod
    def _empty():
        z = np.zeros(0, dtype=np.int64)
        return z.astype(np.uint32), z, z.copy()

    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids uint32, starts int64, ends int64): exact IDs and character spans (2 host syncs)."""
        with self._request("encode") as info:
            r = self._single(text, info)
            if r is None:
                return self._empty()
            meta, ws = r
            if meta[M_UNSAFE]:
                return self._delegate(text, info)
            n = int(meta[M_NTOK])
            packed = self._be.fetch(ws.packed, 3 * n)
            return packed[:n].astype(np.uint32), packed[n : 2 * n], packed[2 * n :]

    encode_full = encode  # the device path is the full path

    def export_spans(self, text: str) -> np.ndarray:
        """int64[3, n] = (ids, starts, ends), delivered in one device->host copy."""
        with self._request("export") as info:
            r = self._single(text, info)
            if r is None:
                return np.zeros((3, 0), dtype=np.int64)
            meta, ws = r
            if meta[M_UNSAFE]:
                return np.stack(self._delegate(text, info)).astype(np.int64)
            n = int(meta[M_NTOK])
            return self._be.fetch(ws.packed, 3 * n).reshape(3, n)

    def encode_list(self, text: str) -> list[int]:
        """The IDs as a Python list (list delivery: ids copied alone, then ``tolist``)."""
        with self._request("list") as info:
            r = self._single(text, info)
            if r is None:
                return []
            meta, ws = r
            if meta[M_UNSAFE]:
                return self._delegate(text, info)[0].tolist()
            return self._be.fetch(ws.packed, int(meta[M_NTOK])).tolist()

    def encode_arrays(self, text: str):
        """(ids int64, starts, ends) left on the device (CuPy; NumPy under the simulator).

        One host synchronization (the token count); the arrays are a fresh device
        copy, so the next request does not overwrite them.
        """
        with self._request("arrays") as info:
            r = self._single(text, info)
            if r is None:
                z = self._be.host_to_device_array(np.zeros(0, dtype=np.int64))
                return z, z, z
            meta, ws = r
            if meta[M_UNSAFE]:
                ids, s, e = self._delegate(text, info)
                h = self._be.host_to_device_array
                return h(ids.astype(np.int64)), h(s), h(e)
            n = int(meta[M_NTOK])
            out = self._be.device_copy(ws.packed, 3 * n)
            return out[:n], out[n : 2 * n], out[2 * n :]

    # --- split level and cuts (certification) ---------------------------------------------
    def split(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Piece (start, end) offsets of the pre-tokenizer on ``text`` as one input, on the device."""
        return self.split_batch([text])[0]

    def split_batch(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """``split`` of every text, in one pipeline run (documents cut apart, no literals)."""
        with self._request("split", len(texts)) as info:
            return self._batch(texts, info, literals=False, stage="pieces")

    def certified_cuts(self, text: str) -> np.ndarray:
        """Every position the device predicate cuts ``text`` at (literal edges included)."""
        with self._request("cuts") as info:
            check_text(text)
            u8 = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
            if not u8.size:
                return np.zeros(0, dtype=np.int64)
            ws = self._workspace(u8.size)
            meta = self._run(ws, u8, np.zeros(1, dtype=_INT), literals=True, stage="cuts",
                             info=info)  # fmt: skip
            seg = self._be.fetch(ws.seg_lo, int(meta[M_NSEG]))
            return seg[1:].astype(np.int64)

    # --- batches ----------------------------------------------------------------------------
    def encode_batch(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Every document's (ids, starts, ends), from one pipeline run per workspace-full.

        Documents are concatenated with a forced cut at every document start (and
        literals never cross a document end), so each equals its own encode.
        """
        with self._request("batch", len(texts)) as info:
            return self._batch(texts, info, literals=True, stage="ids")

    def _batch(self, texts: list[str], info: dict, *, literals: bool, stage: str) -> list:
        for t in texts:
            check_text(t)
        out: list = []
        group: list[str] = []
        size = 0
        limit = self.buckets[-1]
        for t in texts:
            nb = len(t.encode("utf-8"))
            if group and size + nb > limit:
                out.extend(self._batch_run(group, info, literals=literals, stage=stage))
                group, size = [], 0
            group.append(t)
            size += nb
        if group:
            out.extend(self._batch_run(group, info, literals=literals, stage=stage))
        return out

    def _batch_run(self, texts: list[str], info: dict, *, literals: bool, stage: str) -> list:
        lens = np.array([len(t) for t in texts], dtype=np.int64)
        doc_lo = np.zeros(len(texts), dtype=np.int64)
        np.cumsum(lens[:-1], out=doc_lo[1:])
        u8 = np.frombuffer("".join(texts).encode("utf-8"), dtype=np.uint8)
        if not u8.size:
            empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
            return [empty if stage == "pieces" else self._empty() for _ in texts]
        ws = self._workspace(u8.size, batch=True)
        ws.set_docs(self._be, doc_lo)
        meta = self._run(ws, u8, doc_lo, literals=literals, stage=stage, info=info)
        bounds = np.append(doc_lo, int(lens.sum()))
        if stage == "pieces":
            npieces = int(meta[M_NP])
            lo = self._be.fetch(ws.piece_lo, npieces + 1).astype(np.int64)
            cut = np.searchsorted(lo[:-1], bounds, side="left")
            return [
                (lo[cut[d] : cut[d + 1]] - bounds[d], lo[cut[d] + 1 : cut[d + 1] + 1] - bounds[d])
                for d in range(len(texts))
            ]
        unsafe = np.zeros(len(texts), dtype=bool)
        if meta[M_UNSAFE]:
            unsafe = self._be.fetch(ws.doc_unsafe, len(texts)).astype(bool)
        n = int(meta[M_NTOK])
        packed = self._be.fetch(ws.packed, 3 * n)
        ids, starts, ends = packed[:n], packed[n : 2 * n], packed[2 * n :]
        cut = np.searchsorted(starts, bounds, side="left")
        res = []
        for d, text in enumerate(texts):
            if unsafe[d]:
                res.append(self._delegate(text, info))
                continue
            a, b = cut[d], cut[d + 1]
            base = bounds[d]
            res.append((ids[a:b].astype(np.uint32), starts[a:b] - base, ends[a:b] - base))
        return res

    # --- warm-up ----------------------------------------------------------------------------
    def warmup(self, *, capture: bool = True) -> float:
        """Compile every kernel (first launches) and capture every bucket's graph; returns seconds."""
        t0 = time.perf_counter()
        # Every kernel is launched by any run (the warp/block/heap kernels with empty work
        # lists too), so one short text of each path compiles the whole chain.
        sample = "Hello, world! It's 2026 — 123456789 spaces   \n\n\tx\r\n"
        lits = [t.content for t in self.tokenizer.added_tokens[:2] if t.content]
        self.encode_batch([sample, "".join(lits) + sample])
        self.encode(sample)
        self.split(sample)
        if capture and self.graphs:
            with self._be.lock, self._lock:
                for cap in self.buckets:
                    ws = self._spaces.get(cap) or self._spaces.setdefault(
                        cap, _Workspace(self._be, cap, self)
                    )
                    if ws.graph is None and self.graphs:
                        ws.graph = self._capture(ws)
        self.compile_seconds = time.perf_counter() - t0
        return self.compile_seconds


def tune_simulator() -> None:
    """Make simulated barriers cheap: a short GIL switch interval (process-wide; tests, smoke runs).

    The simulator runs each CUDA thread as a Python thread and polls them; with
    the default 5 ms switch interval every barrier costs milliseconds.
    """
    import sys

    if SIMULATOR:
        sys.setswitchinterval(1e-4)
