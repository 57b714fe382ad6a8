"""Router: which exact path serves a request, and why -- the policy made explicit and testable.

Every route is exact (repair certifies its splice; the engines are certified
against the reference), so routing is purely a latency decision:

- session hit -> ``repair``, unless the append is large (at least
  ``delta_min_chars``) and a full encode is predicted faster (delta-aware
  routing, paper §9; beyond the paper's shipped router);
- miss -> ``gpu`` for texts of at least ``gpu_min_chars`` when a GPU engine is
  present and idle; ``cpu`` (the numba engine) otherwise -- "spill" when the
  GPU is busy; ``reference`` for unsupported tokenizers and for texts below
  ``reference_below_chars`` (0 by default: the engine wins at every size here).

The cost model is two throughputs and one fixed cost measured on this machine at
start-up (repair runs the single-thread window engine over about Δ characters plus
a fixed cost -- the window's old text, certificate, splice -- that ``Tier`` times on
small appends; a full encode runs the full engine over the whole text), so the
crossover moves with the hardware instead of being a constant from someone else's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .engine.protocol import Engine, OffloadEngine

DEFAULT_GPU_MIN_CHARS = 2048  # below ~2 KB a transfer and launch cost more than the CPU (engine.md)
DEFAULT_DELTA_MIN_CHARS = 8192  # appends below this always repair: small work, no prediction needed
_CALIBRATION_CHARS = 1 << 16
DEFAULT_REPAIR_OVERHEAD_S = 150e-6  # fixed cost of a repair beyond Δ (Tier measures its own)


@dataclass(frozen=True)
class Route:
    """A routing decision: ``name`` is the path ("repair", "gpu", "cpu", "reference")."""

    name: str
    reason: str


def _throughput(fn, text: str, repeats: int = 3) -> float:
    """Characters per second of ``fn(text)``: best of a few runs (start-up calibration)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - t0)
    return len(text) / max(best, 1e-9)


REPAIR_HIT = Route("repair", "session hit")


class Router:
    """Choose a route per request.  ``cpu``: the full-path CPU engine (numba or reference)."""

    def __init__(
        self,
        cpu: Engine | None,
        *,
        gpu: OffloadEngine | None = None,
        reference: Engine | None = None,
        gpu_min_chars: int = DEFAULT_GPU_MIN_CHARS,
        reference_below_chars: int = 0,
        delta_aware: bool = True,
        delta_min_chars: int = DEFAULT_DELTA_MIN_CHARS,
        repair_chars_per_s: float | None = None,
        full_chars_per_s: dict[str, float] | None = None,
        repair_overhead_s: float = DEFAULT_REPAIR_OVERHEAD_S,
    ):
        if gpu_min_chars < 0 or reference_below_chars < 0:
            raise ValueError("size thresholds must be >= 0")
        if gpu is not None and not isinstance(gpu, OffloadEngine):
            raise TypeError(f"gpu must be an OffloadEngine (engine.protocol), got {gpu!r}")
        self.cpu, self.gpu, self.reference = cpu, gpu, reference
        self.gpu_min_chars = gpu_min_chars
        self.reference_below_chars = reference_below_chars
        self.delta_aware = delta_aware
        self.delta_min_chars = delta_min_chars
        self.repair_chars_per_s = repair_chars_per_s
        self.full_chars_per_s = dict(full_chars_per_s or {})
        self.repair_overhead_s = repair_overhead_s  # window, certificate, splice, commit

    # --- calibration -------------------------------------------------------------------
    def calibrate(self, sample: str) -> dict:
        """Measure the repair and full throughputs on ``sample`` (start-up, never per request)."""
        text = (sample * (_CALIBRATION_CHARS // max(1, len(sample)) + 1))[:_CALIBRATION_CHARS]
        self.repair_chars_per_s = _throughput(self.cpu.encode, text)
        self.full_chars_per_s["cpu"] = _throughput(self.cpu.encode_full, text)
        if self.gpu is not None:
            self.full_chars_per_s["gpu"] = _throughput(self.gpu.encode_full, text)
        return {"repair": self.repair_chars_per_s, **self.full_chars_per_s}

    # --- decisions ---------------------------------------------------------------------
    def miss(self, n_chars: int, *, supported: bool = True) -> Route:
        """Route for a text with no usable session state."""
        if not supported or self.cpu is None:
            return Route("reference", "tokenizer family has no certified engine: reference")
        if n_chars < self.reference_below_chars:
            return Route("reference", f"{n_chars} chars < {self.reference_below_chars}: reference")
        if self.gpu is not None and n_chars >= self.gpu_min_chars:
            if not self.gpu.busy():
                return Route("gpu", f"{n_chars} chars >= {self.gpu_min_chars}: GPU")
            return Route("cpu", "GPU busy: spill to the CPU engine")
        if self.gpu is not None:
            return Route("cpu", f"{n_chars} chars < {self.gpu_min_chars}: CPU engine")
        return Route("cpu", "no GPU: CPU engine")

    def hit(self, context_chars: int, delta_chars: int, *, supported: bool = True) -> Route:
        """Route for an append of ``delta_chars`` to a live session of ``context_chars``."""
        if delta_chars < self.delta_min_chars:
            return REPAIR_HIT
        if not (self.delta_aware and supported and self.repair_chars_per_s):
            return REPAIR_HIT
        full = self.miss(context_chars + delta_chars, supported=supported)
        rate = self.full_chars_per_s.get(full.name)
        if not rate:
            return Route("repair", "session hit")
        repair_s = self.repair_overhead_s + delta_chars / self.repair_chars_per_s
        full_s = (context_chars + delta_chars) / rate
        if full_s < repair_s:
            return Route(
                full.name,
                f"large append: full encode predicted {full_s * 1e3:.2f} ms < repair "
                f"{repair_s * 1e3:.2f} ms ({full.reason})",
            )
        return REPAIR_HIT

    def engine(self, route: Route) -> Engine:
        """The engine that serves a full-encode route."""
        if route.name == "gpu":
            return self.gpu
        if route.name == "cpu":
            return self.cpu
        if route.name == "reference":
            return self.reference
        raise ValueError(f"route {route.name!r} is not a full-encode route")
