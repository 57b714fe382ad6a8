"""Stage 5: BPE on the device, by piece byte length.

- ``k_bpe_small``: thread per piece of at most ``SMALL_MAX`` bytes (the rules'
  ``bpe_merge`` on per-thread local arrays); literals and single bytes too.
  Longer pieces are queued on three work lists.
- ``k_bpe_warp``: warp per piece of up to ``WARP_MAX`` bytes.
- ``k_bpe_block``: block per piece of up to ``block_max`` bytes.
- ``k_bpe_huge``: one thread per longer piece with the rules' O(L log L) heap
  (``merge_large``), a documented exact fallback.

The warp and block kernels apply the sequential merge order exactly: each round
reduces (rank, position) over the live adjacent pairs -- warp shuffles
(``warp_min``), then shared memory across the warps of a block -- and merges
that ONE occurrence (lowest rank, leftmost on ties) with ``merge_at``, whose
list surgery is ``rules.merge_link``, the CPU heap's merge step.  The CUDA
simulator runs this same code (``sim`` gives it shuffles).

Workspace arrays (``sym``, ``rnk``, ``nxt``, ``prv``, ``otmp``) are indexed by
byte: a piece uses its own bytes' slots, so pieces never overlap.  The warp and
block kernels keep their linked list in absolute slots (``nxt``/``prv`` hold
slot numbers, -1 at the piece's ends), so ``rules.merge_link`` works on the
whole arrays, and a (rank, slot) key orders ties leftmost as (rank, position)
would.
"""

from __future__ import annotations

from numba import cuda, int64

from ..rules import CACHE_MAX_BYTES
from .device import (
    DEVICE,
    LM_LIT,
    M_NBIG,
    M_NHUGE,
    M_NMID,
    M_NP,
    NO_RANK,
    SMALL_HEAP,
    SMALL_MAX,
    WARP_MAX,
)

FULL_MASK = 0xFFFFFFFF
NONE_KEY = (1 << 63) - 1  # larger than any (rank << 32 | position)
MAX_WARPS = 32  # per block (shared partials of the block BPE kernel)

# The rules' device functions (numba resolves callees as module globals).
bpe_merge = DEVICE.bpe_merge
merge_link = DEVICE.merge_link
piece_words_bytes = DEVICE.piece_words_bytes
piece_hash = DEVICE.piece_hash
short_lookup = DEVICE.short_lookup
pair_code = DEVICE.pair_code
merged_token = DEVICE.merged_token
vocab_lookup = DEVICE.vocab_lookup


@cuda.jit(device=True)
def piece_bpe(u8, b0, b1, bpe, sym, rank, nxt, prv, heap, out, n_out):
    """``rules.bpe_merge`` of the bytes ``u8[b0:b1]`` (the CPU's very merge function)."""
    return bpe_merge(u8, b0, b1, bpe, sym, rank, nxt, prv, heap, out, n_out)


@cuda.jit
def k_bpe_small(meta, piece_lo, char_start, u8, lmark, lid, bpe, block_max, otmp, cnt, wl_mid,
                wl_big, wl_huge):  # fmt: skip
    """Thread per piece: literals, single bytes and pieces <= SMALL_MAX bytes; queue the rest.

    A piece's tokens go to ``otmp`` from its own first byte on (a piece of L bytes
    has at most L tokens, so pieces never overlap there).  With a short-piece map on
    the device (``GpuEngine(short_map=True)``; otherwise ``bpe.smap`` is one empty
    row), a piece of 2..CACHE_MAX_BYTES bytes that is itself a token whose own
    encoding is that token (the CPU engine's map, ``cpu.build_short_map``) is emitted
    without merging: the map is a memo of ``bpe_merge`` for exactly those pieces.
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
            otmp[b0] = bpe.byte_ids[u8[b0]]
            cnt[j] = 1
        elif length <= SMALL_MAX:
            t = -1
            if length <= CACHE_MAX_BYTES and bpe.smap.shape[0] > 1:
                lw, w0, w1 = piece_words_bytes(u8, b0, b1)
                t = short_lookup(bpe.smap, lw, w0, w1, piece_hash(lw, w0, w1))
            if t >= 0:
                otmp[b0] = t
                cnt[j] = 1
            else:
                m = piece_bpe(u8, b0, b1, bpe, sym, rank, nxt, prv, heap, otmp, b0)
                cnt[j] = m - b0
        elif length <= WARP_MAX:
            wl_mid[cuda.atomic.add(meta, M_NMID, 1)] = j
        elif length <= block_max:
            wl_big[cuda.atomic.add(meta, M_NBIG, 1)] = j
        else:
            wl_huge[cuda.atomic.add(meta, M_NHUGE, 1)] = j


@cuda.jit(device=True)
def merge_at(k, sym, rnk, nxt, prv, bpe):
    """Merge the live pair at slot k (``rules.merge_link``); re-rank the two pairs that
    changed in the per-slot rank array (one thread per piece calls it)."""
    c = pair_code(bpe, sym[k], sym[nxt[k]])
    rnk[nxt[k]] = NO_RANK  # the right symbol dies
    nj = merge_link(sym, nxt, prv, k, merged_token(bpe, c))
    if nj >= 0:
        rnk[k] = pair_code(bpe, sym[k], sym[nj]) >> 32
    else:
        rnk[k] = NO_RANK
    p = prv[k]
    if p >= 0:
        rnk[p] = pair_code(bpe, sym[p], sym[k]) >> 32


@cuda.jit(device=True)
def local_best(rnk, b0, length, first, step):
    """Smallest (rank << 32 | slot) over this thread's positions of the piece at slot b0
    (NONE_KEY if none)."""
    best = NONE_KEY
    for k in range(b0 + first, b0 + length, step):
        r = int(rnk[k])
        if r != NO_RANK:
            key = (r << 32) | k
            if key < best:
                best = key
    return best


@cuda.jit(device=True)
def warp_min(best):
    """Minimum over the 32 lanes by shuffles, broadcast from lane 0 (every lane must call it)."""
    off = 16
    while off > 0:
        other = cuda.shfl_down_sync(FULL_MASK, best, off)
        if other < best:
            best = other
        off //= 2
    return cuda.shfl_sync(FULL_MASK, best, 0)


@cuda.jit(device=True)
def start_list(u8, b0, length, bpe, sym, nxt, prv, first, step):
    """This thread's share of a piece's initial symbols and links (positions first, +step..)."""
    for k in range(first, length, step):
        i = b0 + k
        sym[i] = bpe.byte_ids[u8[i]]
        nxt[i] = i + 1 if k + 1 < length else -1
        prv[i] = i - 1 if k > 0 else -1


@cuda.jit(device=True)
def start_ranks(b0, length, bpe, sym, rnk, first, step):
    """This thread's share of the initial pair ranks (after every symbol is written)."""
    for k in range(first, length, step):
        i = b0 + k
        if k + 1 < length:
            rnk[i] = pair_code(bpe, sym[i], sym[i + 1]) >> 32
        else:
            rnk[i] = NO_RANK


@cuda.jit(device=True)
def emit_list(sym, nxt, otmp, b0):
    """Write the live symbols of the merged piece at slot b0 to ``otmp[b0:]`` in order;
    returns the count."""
    m = 0
    k = b0
    while k >= 0:
        otmp[b0 + m] = sym[k]
        m += 1
        k = nxt[k]
    return m


@cuda.jit
def k_bpe_warp(meta, wl, piece_lo, char_start, u8, bpe, sym, rnk, nxt, prv, otmp, cnt):
    """Warp per piece of 33..128 bytes: one exact merge per round, argmin by warp shuffles."""
    lane = cuda.threadIdx.x % 32
    wpb = cuda.blockDim.x // 32
    first_warp = cuda.blockIdx.x * wpb + cuda.threadIdx.x // 32
    nwarps = cuda.gridDim.x * wpb
    count = meta[M_NMID]
    for w in range(first_warp, count, nwarps):  # warp-uniform
        j = wl[w]
        b0 = int(char_start[piece_lo[j]])
        length = int(char_start[piece_lo[j + 1]]) - b0
        found = -1
        if bpe.ignore_merges:
            if lane == 0:
                found = vocab_lookup(u8, b0, b0 + length, bpe.vkeys, bpe.vids, bpe.pool,
                                     bpe.pool_off)  # fmt: skip
            found = cuda.shfl_sync(FULL_MASK, found, 0)
        if found >= 0:
            if lane == 0:
                otmp[b0] = found
                cnt[j] = 1
        else:
            start_list(u8, b0, length, bpe, sym, nxt, prv, lane, 32)
            cuda.syncwarp(FULL_MASK)
            start_ranks(b0, length, bpe, sym, rnk, lane, 32)
            cuda.syncwarp(FULL_MASK)
            while True:
                best = warp_min(local_best(rnk, b0, length, lane, 32))
                if best == NONE_KEY:
                    break
                if lane == 0:
                    merge_at(best & 0xFFFFFFFF, sym, rnk, nxt, prv, bpe)
                cuda.syncwarp(FULL_MASK)
            if lane == 0:
                cnt[j] = emit_list(sym, nxt, otmp, b0)
        cuda.syncwarp(FULL_MASK)


@cuda.jit
def k_bpe_block(meta, wl, piece_lo, char_start, u8, bpe, sym, rnk, nxt, prv, otmp, cnt):
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
        b0 = int(char_start[piece_lo[j]])
        length = int(char_start[piece_lo[j + 1]]) - b0
        if tid == 0:
            f = -1
            if bpe.ignore_merges:
                f = vocab_lookup(u8, b0, b0 + length, bpe.vkeys, bpe.vids, bpe.pool,
                                 bpe.pool_off)  # fmt: skip
            bcast[0] = f
        cuda.syncthreads()
        found = bcast[0]
        cuda.syncthreads()
        if found >= 0:
            if tid == 0:
                otmp[b0] = found
                cnt[j] = 1
        else:
            start_list(u8, b0, length, bpe, sym, nxt, prv, tid, bd)
            cuda.syncthreads()
            start_ranks(b0, length, bpe, sym, rnk, tid, bd)
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
                        merge_at(b & 0xFFFFFFFF, sym, rnk, nxt, prv, bpe)
                    bcast[0] = b
                cuda.syncthreads()
                if bcast[0] == NONE_KEY:
                    break
            if tid == 0:
                cnt[j] = emit_list(sym, nxt, otmp, b0)
        cuda.syncthreads()


@cuda.jit
def k_bpe_huge(meta, wl, piece_lo, char_start, u8, bpe, sym, rnk, nxt, prv, heap, otmp, cnt):
    """Thread per piece longer than block_max: the rules' heap BPE (exact, O(L log L))."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    count = meta[M_NHUGE]
    for w in range(start, count, stride):
        j = wl[w]
        b0 = int(char_start[piece_lo[j]])
        b1 = int(char_start[piece_lo[j + 1]])
        m = piece_bpe(u8, b0, b1, bpe, sym[b0:b1], rnk[b0:b1], nxt[b0:b1], prv[b0:b1],
                      heap[3 * b0 : 3 * b1], otmp, b0)  # fmt: skip
        cnt[j] = m - b0
