"""Exclusive prefix sums over device arrays whose length lives in the device ``meta`` array.

Three passes, as in a decoupled reduce-then-scan: ``k_scan_reduce`` sums every
tile of ``blockDim * ipt`` elements, ``k_scan_sums`` (one block) scans the tile
sums and writes the total to ``meta``, ``k_scan_apply`` writes each element's
exclusive prefix.  Launch geometry comes from the buffer capacity and the
kernels read the live length from ``meta``, so the passes chain on a stream (and
into a CUDA graph) with no host synchronization.  ``GpuEngine._scan`` launches
them; every compaction of the pipeline (characters, literal candidates,
segments, pieces, token offsets) is one of these scans.
"""

from __future__ import annotations

from numba import cuda, int64

SCAN_BD = 256  # shared-memory size of the scan kernels (>= any scan block size)


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
