"""Is the core shared at this moment?  A probe to tag each timed call with the machine's state.

On the 2-vCPU cloud VMs these benchmarks run on, the host shares a physical core between our
vCPU and another tenant's thread some of the time (SMT; the guest's ``lscpu`` still reports
one thread per core).  Then high-IPC code -- the Python interpreter, table-walking loops --
runs 1.4-1.9x slower, while latency-bound code does not change, and the state flips every
~0.1-0.2 s (``tools/machine-state/contention.py``, ``docs/hardware.md``).  A probe whose speed
depends on the issue width (eight independent chains) timed just before a call says which
kind of moment the call ran in, so a result can be reported for both kinds instead of for
whatever mix a run happened to get.  The probe never changes what is measured: it runs
before the clock starts.
"""

from __future__ import annotations

import time

import numba
import numpy as np

WIDE_STEPS = 10_000  # ~20 us on a 2.4-3.5 GHz core when nothing shares it
CONTENDED_RATIO = 1.25  # a probe this much slower than the fastest seen: the core is shared


@numba.njit(cache=True, nogil=True)
def _wide(n):
    """Eight independent chains of adds, shifts and small multiplies: bound by how many
    instructions the core issues per cycle, so it slows when another thread shares the core."""
    a = b = c = d = e = f = g = h = 1
    for i in range(n):
        a = (a * 3 + i) & 0xFFFFFFFF
        b = (b * 5 + i) & 0xFFFFFFFF
        c = (c * 7 + i) & 0xFFFFFFFF
        d = (d * 9 + i) & 0xFFFFFFFF
        e = (e ^ (e >> 3)) + i
        f = (f ^ (f >> 5)) + i
        g = (g ^ (g >> 7)) + i
        h = (h ^ (h >> 9)) + i
    return a + b + c + d + e + f + g + h


def wide_probe_us(steps: int = WIDE_STEPS) -> float:
    """Microseconds of one issue-bound probe of ``steps`` steps (compiled on first use)."""
    t0 = time.perf_counter_ns()
    _wide(steps)
    return (time.perf_counter_ns() - t0) / 1e3


class ContentionTagger:
    """Tags moments as contended or not by the probe against the fastest probe seen so far.

    ``probe``: a callable returning microseconds (``wide_probe_us`` by default; tests pass
    their own).  ``calibrate`` takes the minimum of a burst of probes first, so the first
    tags already have a floor to compare with; the floor keeps falling if a faster probe
    comes later (a run that starts contended is not misread for long).
    """

    def __init__(self, probe=wide_probe_us, ratio: float = CONTENDED_RATIO):
        if ratio <= 1:
            raise ValueError(f"ratio must be > 1, got {ratio!r}")
        self._probe, self.ratio = probe, ratio
        self.floor = float("inf")

    def calibrate(self, rounds: int = 200, pause_s: float = 0.01) -> float:
        """The fastest of ``rounds`` probes, ``pause_s`` apart (becomes the floor); returns it.

        Spread out (2 s by default) because a state lasts ~0.05-2 s: a burst could fall
        entirely inside a contended stretch."""
        for k in range(rounds):
            self.floor = min(self.floor, self._probe())
            if pause_s and k + 1 < rounds:
                time.sleep(pause_s)
        return self.floor

    def retag(self, rows: list[dict]) -> list[dict]:
        """Rows' ``contended`` read again against the floor as it stands now (the fastest
        probe of the whole run): a run whose first minutes were all contended tagged those
        calls against a floor that was still too high."""
        for r in rows:
            if r.get("probe_us") is not None:
                r["contended"] = r["probe_us"] > self.ratio * self.floor
        return rows

    def tag(self) -> tuple[float, bool]:
        """(probe microseconds, contended?) for this moment."""
        t = self._probe()
        self.floor = min(self.floor, t)
        return t, t > self.ratio * self.floor


STATES = ("not contended", "contended", "all")


def summarize_by_state(rows: list[dict], keys: tuple[str, ...]) -> list[dict]:
    """P50 (us) and count per ``keys`` group and per state (``not contended``, ``contended``,
    ``all``) of rows carrying ``ms`` and ``contended`` (rows without a tag count in ``all``
    only).  A state no call of a group ran in is left out."""
    groups: dict[tuple, dict[str, list[float]]] = {}
    for r in rows:
        g = groups.setdefault(tuple(r[k] for k in keys), {s: [] for s in STATES})
        g["all"].append(r["ms"])
        if r.get("contended") is not None:
            g["contended" if r["contended"] else "not contended"].append(r["ms"])
    out = []
    for key, by in groups.items():
        for state in STATES:
            if by[state]:
                out.append({**dict(zip(keys, key, strict=True)), "state": state,
                            "n": len(by[state]), "p50_us": float(np.median(by[state])) * 1e3})  # fmt: skip
    return out
