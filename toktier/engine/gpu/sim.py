"""The CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) made fit to run the kernels CI certifies.

numba's simulator runs every CUDA thread of a block as a Python thread.  It has
no warp intrinsics, it allocates shared arrays racily, and its ``syncthreads``
is a barrier that a polling manager thread releases (about a millisecond and a
half per barrier of 32 threads, most of it the poller holding the GIL).
``_install_simulator_shims`` (run on import when the simulator is on) fixes all
three, so the simulator runs *the very code the GPU compiles* -- the shuffle
reduction of the BPE kernels included, with no simulator-only substitute:

- ``syncthreads``: a condition-variable barrier over the block's live threads
  (a thread that returns stops counting, as with the simulator's own barrier);
  the manager just joins its threads.  An exception in one thread aborts the
  barrier, so the others stop instead of waiting forever.
- warps: threads ``32w .. 32w + 31`` of a block are warp ``w``, each with a
  barrier of its own.  ``syncwarp`` waits on it; ``shfl_sync`` and
  ``shfl_down_sync`` exchange values through double-buffered per-lane slots with
  one warp barrier per shuffle, with the hardware's lane semantics
  (``shfl_down_sync`` reads lane + delta, or keeps its own value past lane 31;
  ``shfl_sync`` reads ``src_lane % 32``).  Every lane of a warp must call each
  intrinsic, as the kernels do (warp-uniform loops), and blocks must be whole
  warps.
- ``cuda.shared.array``: allocated under a lock (two threads arriving together
  could each get their own array; found as garbage block-scan totals).

``tune_simulator`` shortens the GIL switch interval, which makes simulated
barriers cheap; it is process-wide, for tests and smoke runs.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
from numba import config as _nbconfig

SIMULATOR = bool(_nbconfig.ENABLE_CUDASIM)
FULL_MASK = 0xFFFFFFFF
WARP = 32

_SHIM_LOCK = threading.Lock()


class _Barrier:
    """A reusable barrier over the live threads of a group (a block, or one warp of it).

    ``wait`` returns when every live thread of the group has arrived; ``leave``
    (a thread returned) takes a thread out of the count and releases the others
    if they were only waiting for it.  ``slots`` are two generations of per-thread
    exchange slots for the warp shuffles: a thread writes generation g's slots
    before the barrier and reads them after it; generation g + 2 reuses them only
    once every thread has passed barrier g + 1, i.e. has finished reading.
    """

    def __init__(self, size: int):
        self.cond = threading.Condition(threading.Lock())
        self.size = size
        self.live = size
        self.waiting = 0
        self.generation = 0
        self.aborted = False
        self.slots = ([None] * size, [None] * size)

    def _release(self) -> None:
        self.waiting = 0
        self.generation += 1
        self.cond.notify_all()

    def wait(self) -> None:
        with self.cond:
            if self.aborted:
                raise RuntimeError("abort flag set on syncthreads call")
            g = self.generation
            self.waiting += 1
            if self.waiting == self.live:
                self._release()
                return
            while self.generation == g and not self.aborted:
                self.cond.wait()
            if self.aborted:
                raise RuntimeError("abort flag set on syncthreads clear")

    def leave(self) -> None:
        with self.cond:
            self.live -= 1
            if self.live and self.waiting == self.live:
                self._release()

    def abort(self) -> None:
        with self.cond:
            self.aborted = True
            self.cond.notify_all()


def _warp_of(t) -> tuple[_Barrier, int]:
    """The calling simulated thread's warp barrier and lane."""
    warps = t._manager._toktier_warps
    w = warps[t.thread_id // WARP]
    if w.size != WARP:
        raise RuntimeError("warp intrinsics need whole warps (blockDim % 32 == 0)")
    return w, t.thread_id % WARP


def _exchange(value, read):
    """Publish ``value`` in this lane's slot, wait for the warp, return ``read(slots, lane)``."""
    w, lane = _warp_of(threading.current_thread())
    slots = w.slots[w.generation & 1]  # the generation cannot move before this lane arrives
    slots[lane] = value
    w.wait()
    return read(slots, lane)


def _install_simulator_shims() -> None:
    """Patch the simulator: a fast block barrier, warps with shuffles, safe shared arrays."""
    from numba.cuda import types as nb_types
    from numba.cuda.np import numpy_support
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi

    cls = kernelapi.FakeCUDAModule
    if getattr(cls, "_toktier_warp_shims", False):
        return

    # --- blocks: threads, a barrier over the live ones, exceptions abort it ------------
    def run(self, grid_point, *args):
        size = int(np.prod(self._block_dim))
        block = self._toktier_block = _Barrier(size)
        warps = self._toktier_warps = [_Barrier(min(WARP, size - w)) for w in range(0, size, WARP)]
        first_error: list = []

        def target():
            t = threading.current_thread()
            try:
                self._f(*args)
            except BaseException:
                with _SHIM_LOCK:
                    if not first_error:
                        first_error.append(t)
                block.abort()
                for w in warps:
                    w.abort()
                raise
            finally:
                block.leave()
                warps[t.thread_id // WARP].leave()

        threads = []
        for block_point in np.ndindex(*self._block_dim):
            t = sim_kernel.BlockThread(target, self, grid_point, block_point, self._debug)
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        for t in first_error + threads:  # the thread that failed first, not an aborted one
            if t.exception:
                raise t.exception[0].with_traceback(t.exception[1])

    def syncthreads(self):
        if self.abort:
            raise RuntimeError("abort flag set on syncthreads call")
        self._manager._toktier_block.wait()

    sim_kernel.BlockManager.run = run
    sim_kernel.BlockThread.syncthreads = syncthreads

    # --- warps ----------------------------------------------------------------------------
    def shfl_sync(self, mask, value, src_lane):
        src = int(src_lane) % WARP
        return _exchange(value, lambda slots, lane: slots[src])

    def shfl_down_sync(self, mask, value, delta):
        d = int(delta)
        return _exchange(value, lambda slots, lane: slots[lane + d if lane + d < WARP else lane])

    def syncwarp(self, mask=FULL_MASK):
        _warp_of(threading.current_thread())[0].wait()

    cls.shfl_sync = shfl_sync
    cls.shfl_down_sync = shfl_down_sync
    cls.syncwarp = syncwarp
    cls._toktier_warp_shims = True

    # --- shared arrays: one per (caller file, line) and block, allocated under a lock -------
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


def tune_simulator() -> None:
    """Make simulated barriers cheap: a short GIL switch interval (process-wide; tests, smoke runs).

    The simulator runs each CUDA thread as a Python thread; every barrier hands
    the GIL to each of them in turn.
    """
    if SIMULATOR:
        sys.setswitchinterval(1e-4)


if SIMULATOR:
    _install_simulator_shims()
