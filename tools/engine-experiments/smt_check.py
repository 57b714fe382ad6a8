"""Do the two vCPUs share a physical core (SMT)?  A dependent L1 load chain and an ALU chain
timed on CPU 0 alone, then while CPU 1 runs the same kind of loop (os.sched_setaffinity; one
process each).  Usage: ``.venv/bin/python tools/engine-experiments/smt_check.py``; record:
``results/runs/engine-ab/ascii-literals-offsets.txt``.
"""

import os
import subprocess
import sys
import time

import numba
import numpy as np


@numba.njit(cache=False, nogil=True)
def chase(nxt, steps):
    j = 0
    for _ in range(steps):
        j = nxt[j]
    return j


@numba.njit(cache=False, nogil=True)
def alu(steps):
    x = 1
    for k in range(steps):
        x = (x * 6364136223846793005 + k) ^ (x >> 13)
    return x


PERM = np.random.default_rng(0).permutation(1024).astype(np.int64)
NXT = np.empty(1024, np.int64)
NXT[PERM] = np.roll(PERM, -1)  # one cycle through 8 KB: every load hits L1


def step_ns(kind: str) -> float:
    """Median ns per step of five 20M-step runs on CPU 0."""
    os.sched_setaffinity(0, {0})
    out = []
    for _ in range(5):
        t0 = time.perf_counter()
        if kind == "chase":
            chase(NXT, 20_000_000)
        else:
            alu(20_000_000)
        out.append((time.perf_counter() - t0) * 1e9 / 2e7)
    return float(np.median(out))


def spin(seconds: float, kind: str) -> None:
    os.sched_setaffinity(0, {1})
    end = time.time() + seconds
    while time.time() < end:
        if kind == "chase":
            chase(NXT, 5_000_000)
        else:
            alu(5_000_000)


def main() -> None:
    chase(NXT, 10)
    alu(10)
    for kind in ("chase", "alu"):
        alone = step_ns(kind)
        other = subprocess.Popen([sys.executable, __file__, "spin", "8", kind])
        time.sleep(2.5)  # the other process has compiled and is spinning
        busy = step_ns(kind)
        other.wait()
        again = step_ns(kind)
        print(f"{kind}: ns/step alone {alone:.3f}, other vCPU running the same loop {busy:.3f}, "
              f"alone again {again:.3f} -> {busy / ((alone + again) / 2):.2f}x")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "spin":
        spin(float(sys.argv[2]), sys.argv[3])
    else:
        main()
