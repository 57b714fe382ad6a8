"""Where device memory and launches come from: the CUDA simulator or CuPy on a real GPU.

A backend owns allocation, host<->device copies (each ``fetch`` is one host
synchronization, counted), kernel launches on its stream, CUDA-graph capture
and the launch geometry.  ``GpuEngine`` is written against this small surface,
so the same engine code runs under the simulator in CI (``_SimBackend``), on a
GPU (``_CupyBackend``) and under the PTX test's recording backend.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from numba import cuda

from .sim import SIMULATOR


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
    # Few threads per block: a simulated barrier hands the GIL to every thread of its block.
    # Two warps per warp-kernel block, each looping over its own pieces (as on the GPU).
    geometry = _Geometry(bd=32, max_blocks=2, scan_bd=8, scan_ipt=128, warp_bd=64, block_bd=64,
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
            if isinstance(a, tuple):  # a table tuple (``device.BpeTables``...): views inside
                items = [self._view(x) if isinstance(x, self.cp.ndarray) else x for x in a]
                conv = type(a)(*items) if hasattr(a, "_fields") else tuple(items)
            else:
                conv = cuda.as_cuda_array(a, sync=False)
            v = self._views[id(a)] = (a, conv)
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
        conv = [self._view(a) if isinstance(a, (self.cp.ndarray, tuple)) else a for a in args]
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
