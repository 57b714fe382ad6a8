"""Every GPU kernel compiles for a real GPU (sm_90) -- offline, with no GPU present.

The simulator runs kernels as Python, so it cannot catch what only the CUDA
compiler sees (numba typing in nopython mode, NVVM code generation).  Here a
recording backend captures each kernel launch of the GPU engine's chain with
the exact argument types the device run would pass (C-contiguous arrays of the
same dtypes, the same scalars), and ``numba.cuda.compile_ptx`` compiles each
one through NVVM for compute capability 9.0 (H100/H200); ``ptxas`` then
assembles the PTX when it is installed.  numba asks the (absent) driver for
the current device's compute capability and nvrtc for the supported
architectures: the script answers both for an sm_90 target and points numba at
the toolkit's libdevice.  Skipped when the CUDA toolkit's NVVM is not installed.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import textwrap

import pytest

LIBDEVICE = sorted(glob.glob("/usr/local/cuda*/nvvm/libdevice/libdevice*.bc"))

SCRIPT = textwrap.dedent(
    """
    import glob, os, shutil, subprocess, sys, tempfile, threading, time, types
    import numpy as np
    import numba.cuda.cudadrv.nvrtc as nvrtc
    import numba.cuda.cudadrv.nvvm as nvvm
    import numba.cuda.dispatcher as dispatcher
    nvrtc.get_supported_ccs = lambda: ((7, 5), (8, 0), (8, 6), (8, 9), (9, 0))
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
    LIB = sys.argv[1]
    nvvm.get_libdevice = lambda: LIB
    nvvm.open_libdevice = lambda: open(LIB, "rb").read()
    from numba import cuda, typeof
    import toktier
    from toktier.engine import gpu
    assert not gpu.SIMULATOR

    class Recorder:
        name = "record"; simulator = False; graphs_reason = ""
        lock = threading.Lock()
        geometry = gpu._Geometry(bd=256, max_blocks=64, scan_bd=256, scan_ipt=16, warp_bd=128,
                                 block_bd=256, huge_bd=32)
        buckets = (1 << 12,)
        def __init__(self):
            self.syncs = self.launches = 0
            self.calls = []
        def empty(self, n, dtype): return np.zeros(max(int(n), 1), dtype)
        def to_device(self, h): return np.ascontiguousarray(h)
        def put(self, dev, h): dev[: len(h)] = h
        def fetch(self, dev, n):
            self.syncs += 1
            return dev[: max(int(n), 0)].copy()
        def device_copy(self, dev, n): return dev[:n].copy()
        def host_to_device_array(self, h): return h
        def launch(self, k, grid, block, *args):
            self.launches += 1
            self.calls.append((k, grid, block, args))

    seen = {}
    # every table of every tokenizer has the same dtypes (tables.py): one of each kind of
    # run -- raw literals only, two-pass literals (deepseek), NFC (qwen3) -- covers them
    # -- and SentencePiece (its own stages 4-6, no split level)
    for name in ["llama3", "deepseek-v4", "qwen3", "mistral-sp-v3"]:
        rec = Recorder()
        eng = gpu.GpuEngine(toktier.load(name), graphs=False, _backend=rec)
        eng.encode("Hello <|x|> world")
        eng.encode_batch(["a", "b"])
        if eng.sp_tables is None:
            eng.split("abc")
        eng.certified_cuts("abc d")
        if name == "llama3":  # stage 0: a 16-bit upload's kernels
            gpu.GpuEngine(toktier.load(name), graphs=False, units=True, _backend=rec).encode(
                "h\u00e9llo \U0001f600")
        for k, grid, block, args in rec.calls:
            assert grid >= 1 and block >= 1 and block % 32 == 0 or block == 1, (k, grid, block)
            sig = tuple(typeof(a) for a in args)
            seen.setdefault((k.py_func.__name__, sig), k)
    ptxas = shutil.which("ptxas") or next(iter(glob.glob("/usr/local/cuda*/bin/ptxas")), None)
    names = set()
    for (kname, sig), k in sorted(seen.items(), key=lambda kv: kv[0][0]):
        t0 = time.perf_counter()
        ptx, _ = cuda.compile_ptx(k.py_func, sig, cc=(9, 0))
        names.add(kname)
        if kname in ("k_bpe_warp", "k_bpe_block"):
            assert "shfl.sync" in ptx, kname  # the warp reduction really uses shuffles
        info = ""
        if ptxas:
            with tempfile.TemporaryDirectory() as d:
                src = os.path.join(d, "k.ptx")
                open(src, "w").write(ptx)
                r = subprocess.run([ptxas, "-arch=sm_90", "-v", src, "-o", os.path.join(d, "k.cubin")],
                                   capture_output=True, text=True)
                assert r.returncode == 0, (kname, r.stderr[-2000:])
                info = " ".join(l.split("ptxas info    : ")[-1] for l in r.stderr.splitlines() if "Used" in l)
        print(f"PTX {kname} {len(ptx)} chars {time.perf_counter() - t0:.2f}s {info}", flush=True)
    # the profiler's hold kernel (bench.gpu_profile: sleeps so queued launches start back to back)
    from toktier.bench.gpu_profile import hold_kernel
    ptx, _ = cuda.compile_ptx(hold_kernel().py_func, (typeof(400),), cc=(9, 0))
    assert "nanosleep" in ptx, ptx[-500:]
    print("PTX k_hold", len(ptx), "chars", flush=True)
    every = {n for n in gpu.__all__ if n.startswith("k_")}
    assert names == every, ("launched kernels differ from the package's", names ^ every)
    print("KERNELS", len(names), "SIGNATURES", len(seen), "PTXAS", bool(ptxas))
    """
)


@pytest.mark.skipif(not LIBDEVICE, reason="CUDA toolkit NVVM/libdevice not installed")
def test_every_gpu_kernel_compiles_for_sm90():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, LIBDEVICE[-1]], env=env, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    if "libnvvm" in proc.stderr and proc.returncode:
        pytest.skip("libnvvm could not be loaded: " + proc.stderr[-300:])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert "KERNELS 23" in proc.stdout, proc.stdout  # every k_* of engine.gpu (checked inside)
