"""Where a GPU request's time goes: per-kernel device time and the host's share.

Batch throughput (claim F2) stays ~20x short of the paper after batches became CUDA
graphs, so launch overhead is not the main cost; this profile says what is.  For
each tokenizer and corpus (experiment 06's, ``gpu_bench.corpora``) it times, on an
eager engine (no graphs: every launch goes through the backend, where a CUDA event
pair brackets it):

- the batch (``encode_batch`` of the corpus's documents) and one single request of
  the same text joined (``encode_arrays``);
- per kernel: device milliseconds summed over its launches, launches, grid, block --
  twice: inline (an event pair around each launch, so a small kernel's time includes
  the host's time to launch it while the GPU waits) and queued (each launch preceded by
  an untimed hold kernel that keeps the GPU busy while the host prepares the launch, so
  the pair times the kernel's execution alone); inline minus queued is the launch gap;
- the request's wall time without the events (best of ``repeats``), so
  ``wall - kernels`` is what the host and the transfers cost;
- a cProfile of the batch request's host side (top functions by own time).

Runs on a CUDA GPU (``--allow-simulator --smoke``: a tiny run under the CUDA
simulator, where the "device" times are the simulator's wall clock and mean nothing;
CI runs it so the script cannot rot).  ``toktier profile-gpu`` writes the JSON
record and a text report.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from collections import defaultdict

from ..errors import ToktierError
from .gpu_bench import SIMULATOR_MAX_CHARS, corpora, require_gpu
from .machine import machine_facts

CORPUS_CHARS = 1_000_000


HOLD_US = 400  # a hold kernel's sleep: longer than the host takes to launch one kernel

_hold_kernel = None


def hold_kernel():
    """``k_hold[1, 1](us)``: one thread sleeps about ``us`` microseconds (``nanosleep``
    in 1-us steps), so launches queued behind it start back to back (compiled on first use)."""
    global _hold_kernel
    if _hold_kernel is None:
        import numpy as np
        from numba import cuda

        @cuda.jit
        def k_hold(us):
            if cuda.grid(1) == 0:
                for _ in range(us):
                    cuda.nanosleep(np.uint32(1000))

        _hold_kernel = k_hold
    return _hold_kernel


class KernelTimer:
    """Brackets every launch of ``backend`` with a CUDA event pair (wall clock under the
    simulator); ``summary()`` synchronizes and sums the device time per kernel.
    ``hold_us`` > 0: each launch is preceded by an untimed ``hold_kernel`` (device only),
    so the pair times the kernel's execution, not the host's time to launch it."""

    def __init__(self, backend, hold_us: int = 0):
        self.be = backend
        self.hold_us = int(hold_us)
        self.records: list[tuple] = []
        self._orig = None

    def __enter__(self):
        be, orig = self.be, self.be.launch
        self._orig = orig
        cp = getattr(be, "cp", None)

        def launch(kernel, grid, block, *args):
            name = _kernel_name(kernel)
            if cp is None:  # the simulator runs each launch to completion
                t0 = time.perf_counter()
                orig(kernel, grid, block, *args)
                self.records.append((name, grid, block, t0, time.perf_counter()))
                return
            if self.hold_us > 0:
                orig(hold_kernel(), 1, 1, self.hold_us)
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(be.stream)
            orig(kernel, grid, block, *args)
            end.record(be.stream)
            self.records.append((name, grid, block, start, end))

        be.launch = launch
        return self

    def __exit__(self, *exc):
        del self.be.launch  # the class's method again
        return False

    def summary(self) -> list[dict]:
        """Rows (kernel, ms, launches, grid, block), the most expensive first."""
        cp = getattr(self.be, "cp", None)
        if cp is not None:
            self.be.synchronize()
        acc: dict[str, dict] = defaultdict(lambda: {"ms": 0.0, "launches": 0})
        for name, grid, block, a, b in self.records:
            ms = cp.cuda.get_elapsed_time(a, b) if cp is not None else (b - a) * 1e3
            row = acc[name]
            row["ms"] += float(ms)
            row["launches"] += 1
            row["grid"], row["block"] = int(grid), int(block)
        rows = [{"kernel": k, **v} for k, v in acc.items()]
        return sorted(rows, key=lambda r: -r["ms"])


def _kernel_name(kernel) -> str:
    fn = getattr(kernel, "py_func", None)
    return getattr(fn, "__name__", None) or getattr(kernel, "__name__", repr(kernel))


def _best_ms(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(max(repeats, 1)):
        t0 = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - t0) * 1e3)
    return best


def _host_profile(fn, top: int) -> list[dict]:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    st = pstats.Stats(prof, stream=io.StringIO())
    rows = []
    for (path, line, func), (_cc, calls, own, cum, _callers) in st.stats.items():
        rows.append({"function": f"{path.rsplit('/', 1)[-1]}:{line}:{func}", "calls": calls,
                     "own_ms": own * 1e3, "cum_ms": cum * 1e3})  # fmt: skip
    return sorted(rows, key=lambda r: -r["own_ms"])[:top]


def profile_request(eng, name: str, fn, nbytes: int, repeats: int, *, host_top: int = 15) -> dict:
    """One request shape on an eager engine: wall (no events), kernels (with), host profile."""
    fn()  # untimed: buffers of this size, compiled paths
    wall = _best_ms(fn, repeats)
    with KernelTimer(eng._be) as kt:
        fn()
    inline = kt.summary()
    simulated = getattr(eng._be, "cp", None) is None
    with KernelTimer(eng._be, 0 if simulated else HOLD_US) as kt:
        fn()
    kernels = kt.summary()
    dev = sum(r["ms"] for r in kernels)
    dev_inline = sum(r["ms"] for r in inline)
    return {
        "request": name,
        "bytes": nbytes,
        "wall_ms": wall,
        "kernel_ms": dev,  # queued: the kernels' execution alone (sum over launches)
        "kernel_inline_ms": dev_inline,  # inline: execution + the GPU's wait for each launch
        "launch_gap_ms": max(dev_inline - dev, 0.0),
        "host_and_copies_ms": max(wall - dev, 0.0),
        "gb_per_s": nbytes / 1e9 / (wall / 1e3),
        "kernels": kernels,
        "kernels_inline": inline,
        "host": _host_profile(fn, host_top),
    }


def run(tokenizers: list[str], *, corpus_chars: int = CORPUS_CHARS, repeats: int = 3,
        sources=("stdlib", "trajectories", "pycountry"), allow_simulator: bool = False,
        progress: bool = True, short_map: bool | None = None, units: bool = False) -> dict:  # fmt: skip
    """The profile record: per tokenizer, corpus and request shape (batch, joined single);
    ``short_map``: the engine with the short-piece map on the device or not (None: the
    engine's default, on for byte-level BPE); the record names what ran.  ``units``: non-ASCII
    requests uploaded as 16-bit characters (``GpuEngine(units=True)``)."""
    from ..engine.gpu import GpuEngine, tune_simulator
    from ..registry import load

    device = require_gpu(allow_simulator)
    if device == "cudasim":
        if corpus_chars > SIMULATOR_MAX_CHARS:
            raise ToktierError(f"simulator smoke run: at most {SIMULATOR_MAX_CHARS:,} characters "
                               f"per corpus (asked {corpus_chars:,}); use --smoke")  # fmt: skip
        tune_simulator()
    docs_by_corpus = corpora(corpus_chars, sources)
    record = {"kind": "gpu-profile", "device": device, "machine": machine_facts(),
              "parameters": {"tokenizers": tokenizers, "corpus_chars": corpus_chars,
                             "repeats": repeats, "sources": list(sources),
                             "short_map": short_map, "units": units},
              "rows": []}  # fmt: skip
    for name in tokenizers:
        tok = load(name)
        eng = GpuEngine(tok, graphs=False, short_map=short_map, units=units)  # eager: every launch timed
        eng.warmup(capture=False)
        record["gpu"] = eng.device_facts()
        for corpus, docs in docs_by_corpus.items():
            joined = "".join(docs)
            nbytes = len(joined.encode("utf-8"))
            shapes = (
                (f"batch of {len(docs)}", lambda d=docs, e=eng: e.encode_batch(d)),
                ("single (joined)", lambda t=joined, e=eng: e.encode_arrays(t)),
            )
            for shape, fn in shapes:
                row = profile_request(eng, shape, fn, nbytes, repeats)
                record["rows"].append({"tokenizer": name, "corpus": corpus, "docs": len(docs),
                                       "short_map": eng.short_map, **row})  # fmt: skip
                if progress:
                    print(f"{name} {corpus:12s} {shape:16s} wall {row['wall_ms']:8.2f} ms, "
                          f"kernels {row['kernel_ms']:8.2f} ms", flush=True)  # fmt: skip
    return record


def report(record: dict, *, kernels: int = 12, host: int = 8) -> str:
    """The record as text: per request, the kernels and host functions that cost most."""
    lines = [f"# GPU profile ({record['device']}, {record.get('gpu', {}).get('gpu', '?')}, "
             f"commit {str(record['machine'].get('commit', ''))[:12]})"]  # fmt: skip
    for r in record["rows"]:
        lines.append(f"\n## {r['tokenizer']} {r['corpus']} {r['request']}: {r['bytes']:,} bytes, "
                     f"wall {r['wall_ms']:.2f} ms ({r['gb_per_s']:.3f} GB/s), kernels "
                     f"{r['kernel_ms']:.2f} ms executing ({r.get('kernel_inline_ms', 0):.2f} "
                     f"timed inline: launch gaps {r.get('launch_gap_ms', 0):.2f}), host and "
                     f"copies {r['host_and_copies_ms']:.2f} ms")  # fmt: skip
        for k in r["kernels"][:kernels]:
            lines.append(f"  {k['ms']:9.3f} ms  {k['kernel']:28s} launches {k['launches']:4d}  "
                         f"grid {k['grid']:6d} block {k['block']:4d}")  # fmt: skip
        lines.append("  host (cProfile, own time):")
        for h in r["host"][:host]:
            lines.append(f"  {h['own_ms']:9.3f} ms  {h['calls']:6d} calls  {h['function']}")
    return "\n".join(lines) + "\n"
