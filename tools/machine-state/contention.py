"""Is this machine's core shared right now?  Two compiled probes timed side by side for a while.

- ``chain``: one dependent chain of multiply-adds -- bound by the multiplier's latency, it runs
  at the same speed whether or not another hardware thread shares the core;
- ``wide``: eight independent chains -- bound by the core's issue width, it slows when another
  thread (a co-tenant on the host's SMT sibling: invisible to the guest, whose ``lscpu`` says
  one thread per core) takes issue slots;
- ``python``: a 20,000-step Python loop (the interpreter is high-IPC code too).

Best of 5 per sample, a sample every ~60 ms for ``SECONDS`` (default 40).  A moment counts as
contended when ``wide`` reads over 1.25x its minimum.  Prints the spread of each probe, their
medians in both kinds of moment, and how long each kind lasts.
Usage: ``.venv/bin/python tools/machine-state/contention.py [SECONDS]``.
"""

import sys
import time

import numba
import numpy as np

from toktier.bench.contention import wide_probe_us


@numba.njit(nogil=True)
def chain(n):
    x = 1
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & 0x7FFFFFFFFFFFFFFF
    return x


def python_loop():
    s = 0
    for i in range(20000):
        s += i
    return s


def best_us(fn, reps: int = 5) -> float:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / 1e3)
    return min(out)


def main(seconds: float) -> None:
    chain(10)
    wide_probe_us()
    rows = []
    end = time.time() + seconds
    while time.time() < end:
        rows.append((best_us(lambda: chain(300_000)), min(wide_probe_us() for _ in range(5)),
                     best_us(python_loop)))  # fmt: skip
        time.sleep(0.05)
    r = np.array(rows)
    busy = r[:, 1] > 1.25 * r[:, 1].min()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {len(r)} samples over "
          f"{seconds:.0f} s; contended (wide > 1.25x its minimum): {busy.mean():.0%} of samples")  # fmt: skip
    for i, label in enumerate(("chain (latency-bound)", "wide (issue-bound)", "python loop")):
        col = r[:, i]
        split = (f"contended {np.median(col[busy]):7.1f}, not {np.median(col[~busy]):7.1f}"
                 if busy.any() and (~busy).any() else "")  # fmt: skip
        print(f"  {label:22s} us: min {col.min():7.1f} P50 {np.median(col):7.1f} "
              f"max {col.max():7.1f} | {split}")  # fmt: skip
    runs, cur, length = [], busy[0], 0
    for b in busy:
        if b == cur:
            length += 1
        else:
            runs.append((cur, length))
            cur, length = b, 1
    runs.append((cur, length))
    period = seconds / len(r)
    for kind, label in ((True, "contended"), (False, "not contended")):
        ls = [n for k, n in runs if k == kind]
        if ls:
            print(f"  {label} stretches: median {np.median(ls) * period * 1e3:.0f} ms, "
                  f"longest {max(ls) * period:.1f} s")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 40.0)
