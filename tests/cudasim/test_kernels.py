"""Kernels and device helpers on their own: shuffles, the warp minimum, scans, BPE paths.

The simulator runs the code the GPU compiles, warp shuffles included
(``engine.gpu.sim``); these checks pin the pieces the chain tests can only
reach indirectly.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import toktier
from toktier.engine import gpu
from toktier.engine.gpu import bpe

from .checks import check_ids


@cuda.jit
def k_shuffles(vals, down, bcast):
    t = cuda.threadIdx.x
    down[t] = cuda.shfl_down_sync(0xFFFFFFFF, vals[t], 5)
    bcast[t] = cuda.shfl_sync(0xFFFFFFFF, vals[t], 39)  # lane 39 % 32 = 7


def test_shuffles_have_the_hardware_lane_semantics():
    """Two warps of one block: each exchanges within itself; past lane 31 a lane keeps its own."""
    vals = np.arange(64, dtype=np.int64) * 10
    down = np.zeros(64, np.int64)
    bcast = np.zeros(64, np.int64)
    k_shuffles[1, 64](vals, down, bcast)
    lane = np.arange(64) % 32
    warp0 = np.arange(64) - lane
    assert down.tolist() == np.where(lane + 5 < 32, vals + 50, vals).tolist()
    assert bcast.tolist() == (vals[warp0 + 7]).tolist()


@cuda.jit
def k_min(vals, out):
    out[cuda.threadIdx.x] = bpe.warp_min(vals[cuda.threadIdx.x])


def test_warp_min_is_the_minimum_of_each_warp():
    """The shuffle reduction the BPE kernels use: random keys, ties, empty lanes, two warps."""
    rng = np.random.default_rng(1)
    for _trial in range(4):
        keys = rng.integers(0, 5, size=64).astype(np.int64) * (1 << 32) + rng.integers(0, 3, 64)
        keys[rng.integers(0, 64, size=12)] = gpu.NONE_KEY
        out = np.zeros(64, dtype=np.int64)
        k_min[1, 64](keys, out)
        assert (out[:32] == keys[:32].min()).all() and (out[32:] == keys[32:].min()).all()


@pytest.mark.parametrize(("n_tiles", "delta"), [(0, 0), (0, 1), (1, -1), (1, 0), (1, 1), (9, 5)])
def test_scan_at_tile_edges(n_tiles, delta):
    """The three-pass scan at lengths around tile edges and past one tile per scan thread."""
    g = gpu._SimBackend.geometry
    tile = g.scan_bd * g.scan_ipt
    n = max(0, n_tiles * tile + delta)
    rng = np.random.default_rng(n)
    src = rng.integers(0, 4, size=n + 1).astype(np.int32)
    dst = np.full(n + 1, -7, dtype=np.int32)
    sums = np.zeros(n // tile + 2, dtype=np.int64)
    meta = np.zeros(gpu.M_SIZE, dtype=np.int64)
    meta[0] = n
    gpu.k_scan_reduce[2, g.scan_bd](meta, 0, src, sums, g.scan_ipt)
    gpu.k_scan_sums[1, g.scan_bd](meta, 0, 1, sums, tile)
    gpu.k_scan_apply[2, g.scan_bd](meta, 0, src, dst, sums, g.scan_ipt)
    expect = np.concatenate([[0], np.cumsum(src[:n])])
    assert dst[:n].tolist() == expect[:n].tolist() and dst[n] == -7, n
    assert meta[1] == expect[n], (n, meta[1], expect[n])


def test_warp_block_and_heap_bpe_paths():
    """One piece on each of the warp, block and heap (past ``block_max``) paths."""
    tok = toktier.load("cl100k")
    eng = gpu.GpuEngine(tok, block_max=150)
    doc = "x" * 36 + " " + "-" * 140 + "\n" + "=" * 170 + " ok"
    ((ids, s, e),) = eng.encode_batch([doc])
    info = eng.stats()["last_request"]
    assert info["warp_pieces"] == 1 and info["block_pieces"] == 1 and info["heap_pieces"] == 1
    check_ids(tok, doc, ids, s, e, "bpe paths")


@cuda.jit
def k_fails(out, where):
    t = cuda.threadIdx.x
    cuda.syncthreads()
    if t == 3:
        raise ValueError("boom")  # the simulator runs kernels as Python
    if where == 0:
        cuda.syncthreads()
    else:
        out[t] = cuda.shfl_sync(0xFFFFFFFF, t, 0)
    out[t] = 1


@cuda.jit
def k_early_exit(out):
    t = cuda.threadIdx.x
    if t >= 16:
        return  # the barrier then counts the live threads only, as the simulator's own does
    cuda.syncthreads()
    out[t] = 1


@pytest.mark.parametrize("where", [0, 1])
def test_simulated_barriers_abort_instead_of_hanging(where):
    """A thread that fails releases the others (block and warp barriers) and its error is
    the one raised; threads that return early no longer count at later barriers."""
    out = np.zeros(64, dtype=np.int64)
    with pytest.raises(ValueError, match="boom"):
        k_fails[1, 64](out, where)
    k_early_exit[1, 64](out)
    assert out[:16].tolist() == [1] * 16
