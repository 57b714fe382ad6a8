"""How late the load generator's requests reach a worker process, polling with or without the GIL.

Experiment 09's generator handed each request to an ``mp.Queue`` whose feeder thread
shipped it to the worker (until 2026-11-26; it now writes fixed-size records to a pipe
itself, ``toktier.serving``), and this probe keeps that setting.  The generator polls the last fraction of a millisecond before
each send time; a poll that keeps the GIL holds the feeder thread off for up to the
interpreter's switch interval, so at a few thousand requests per second requests arrive
milliseconds late.  This probe measures that delivery delay (receipt in the worker minus
the scheduled time) for both ways of polling, on Poisson arrivals, with no tokenizer in
the loop.  ``python -m toktier.bench.generator_probe [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time

import numpy as np

from .. import loadgen
from . import machine


def _receiver(inbox, conn) -> None:
    late = []
    while (target := inbox.get()) is not None:
        late.append(time.perf_counter() - target)
    conn.send(late)


def _hold_gil_sleep(seconds: float) -> None:
    """The generator's former poll, as ``wait_until``'s sleep: a zero sleep is skipped, so
    the poll never lets go of the GIL."""
    if seconds > 0:
        time.sleep(seconds)


def delivery_delays(rate: float, yield_gil: bool, duration_s: float = 3.0, seed: int = 0):
    """Delivery delays (ms) of ``rate`` req/s Poisson arrivals to one worker process."""
    ctx = mp.get_context("spawn")
    inbox = ctx.Queue()
    reader, writer = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_receiver, args=(inbox, writer), daemon=True)
    proc.start()
    writer.close()
    inbox.put(time.perf_counter())  # the receiver is up before timing starts
    time.sleep(1.0)
    sleep = time.sleep if yield_gil else _hold_gil_sleep
    t0 = time.perf_counter() + 0.05
    for off in loadgen.poisson_offsets(rate, duration_s, seed=seed):
        target = t0 + float(off)
        loadgen.wait_until(target, sleep=sleep)
        inbox.put(target)
    inbox.put(None)
    late = np.asarray(reader.recv()[1:]) * 1e3
    proc.join()
    return late


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rates", type=float, nargs="+", default=[2000.0, 4800.0])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out")
    args = p.parse_args(argv)
    rows = []
    for rate in args.rates:
        for rep in range(args.repeats):
            for yield_gil in (False, True):  # alternated: both see the same machine state
                d = delivery_delays(rate, yield_gil, seed=rep)
                rows.append({
                    "rate": rate, "poll": "yields the GIL" if yield_gil else "holds the GIL",
                    "repeat": rep, "p50_ms": float(np.median(d)),
                    "p99_ms": float(np.percentile(d, 99)), "max_ms": float(d.max()),
                })  # fmt: skip
                r = rows[-1]
                print(f"{rate:6.0f} req/s  {r['poll']:15s}  delivery P50 {r['p50_ms']:.3f} ms  "
                      f"P99 {r['p99_ms']:.3f} ms  max {r['max_ms']:.1f} ms")  # fmt: skip
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": machine.machine_facts(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
