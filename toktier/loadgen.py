"""Open-loop load from real agent sessions: request mixtures, arrival processes, sojourn times.

Open loop: requests are sent at their scheduled times whether or not earlier ones
have finished, so queueing shows up in the sojourn time (done - scheduled).
Two arrival processes:

- Poisson at a given rate over the measured request mixture: each request
  advances a random live session by one call (a continuation); a session that
  has made all its recorded calls is replaced by a new one whose first request
  is an initialization -- so initializations are the trajectories' own share of
  calls (session starts), as recorded;
- burst replay: sessions that all start within a short window, each resuming at
  a random call (its first request is an initialization), the following calls
  at the recorded ``created`` gaps, divided by a compression factor so a
  scenario fits in seconds.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Sequence

import numpy as np

from .serving import Request, WorkerPool, Workload
from .workload.templates import render_segments


def build_workload(trajs, tokenizer_name: str, *, max_context_chars: int | None = None) -> Workload:
    """Each trajectory's calls as character ends of its rendered transcript (capped if asked)."""
    finals, ends, names = [], [], []
    for t in trajs:
        segs = render_segments(t.messages, tokenizer_name)
        prefix = np.concatenate([[0], np.cumsum([len(s) for s in segs])]).astype(np.int64)
        e = np.asarray([prefix[c.prompt_messages] for c in t.calls], dtype=np.int64)
        if max_context_chars is not None:
            e = e[e <= max_context_chars]
        e = e[e > 0]
        if e.size == 0:
            continue
        finals.append("".join(segs)[: int(e[-1])])
        ends.append(e)
        names.append(t.session)
    if not finals:
        raise ValueError("no call fits: raise max_context_chars or pass more trajectories")
    return Workload(finals, ends, names)


def init_share(trajs) -> float:
    """The trajectories' share of calls that start a session (no reusable prefix)."""
    calls = sum(len(t.calls) for t in trajs)
    return sum(1 for t in trajs if t.calls) / max(1, calls)


class MixtureSource:
    """Session-shaped requests drawn from a workload: continuations and initializations.

    ``live`` sessions run concurrently, each replaying one trajectory's calls in
    order.  The first sessions start at a random call, so the requests are drawn
    from the recorded calls' distribution from the first timed request on (their
    initializations are ``warm()``, sent before timing).  A session that has made
    all its calls is replaced by one that starts at ``start``: "first" (call 0, a
    recorded session start) or "random" (a session resumed with no state: a larger
    initialization).  Session ids are fresh per source.
    """

    def __init__(self, workload: Workload, *, live: int = 64, start: str = "first", seed: int = 0):
        if start not in ("first", "random"):
            raise ValueError(f"start must be 'first' or 'random', got {start!r}")
        self.w, self.start = workload, start
        self.rng = np.random.default_rng(seed)
        self._n = 0
        self._rid = 0
        # [id, traj, next call]; the first ones mid-session (stationary from the start)
        self.sessions: list[list[int]] = [self._fresh(True) for _ in range(live)]

    def _fresh(self, random_call: bool) -> list[int]:
        t = int(self.rng.integers(len(self.w.finals)))
        c = int(self.rng.integers(self.w.calls(t))) if random_call else 0
        self._n += 1
        return [self._n, t, c]

    def _request(self, s: list[int], kind: str) -> Request:
        self._rid += 1
        req = Request(self._rid, f"v{s[0]}", s[1], s[2], kind)
        s[2] += 1
        return req

    def warm(self) -> list[Request]:
        return [self._request(s, "init") for s in self.sessions]

    def next(self) -> Request:
        i = int(self.rng.integers(len(self.sessions)))
        s = self.sessions[i]
        if s[2] >= self.w.calls(s[1]):
            self.sessions[i] = s = self._fresh(self.start == "random")
            return self._request(s, "init")
        return self._request(s, "cont")


def poisson_offsets(rate: float, duration_s: float, seed: int = 0) -> np.ndarray:
    """Arrival times (seconds from start) of a Poisson process of ``rate`` per second."""
    rng = np.random.default_rng(seed)
    n = int(rate * duration_s * 1.5) + 16
    t = np.cumsum(rng.exponential(1.0 / rate, size=n))
    return t[t < duration_s]


def burst_schedule(
    workload: Workload,
    trajs,
    *,
    sessions: int,
    calls: int,
    window_s: float,
    compression: float,
    seed: int = 0,
) -> list[tuple[float, Request]]:
    """Recorded-gap replay: ``sessions`` sessions starting within ``window_s``, ``calls`` each."""
    rng = np.random.default_rng(seed)
    by_name = {t.session: t for t in trajs}
    out, rid = [], 0
    for k in range(sessions):
        ti = int(rng.integers(len(workload.finals)))
        traj = by_name.get(workload.names[ti]) if workload.names else None
        n = workload.calls(ti)
        c0 = int(rng.integers(max(1, n - calls))) if n > 1 else 0
        t = float(rng.uniform(0, window_s))
        for j, c in enumerate(range(c0, min(n, c0 + calls))):
            if j:
                gap = _gap(traj, c)
                t += gap / compression
            rid += 1
            out.append((t, Request(rid, f"b{seed}-{k}", ti, c, "init" if j == 0 else "cont")))
    out.sort(key=lambda x: x[0])
    return out


def _gap(traj, c: int) -> float:
    """Recorded seconds between call c-1 and call c (1 s when the log has no times)."""
    if traj is None or c == 0 or c >= len(traj.calls):
        return 1.0
    a, b = traj.calls[c - 1].created, traj.calls[c].created
    return max(0.0, b - a) if a is not None and b is not None else 1.0


# The last 20 us of a wait are polled (sleeps overshoot by ~10-15 us under fine_timer).
# Measured on the 2-vCPU VM, one repair worker at 3,200-4,000 req/s, alternated runs: the
# generator's CPU per request 63-71 us polling 20 us, 83-95 us polling 50 us.
POLL_S = 0.00002


def wait_until(target: float, clock=time.perf_counter, sleep=time.sleep) -> None:
    """Return at ``target`` (``time.perf_counter`` seconds): sleep most of the gap, then poll.

    The last ``POLL_S`` is polled for precision, and every poll yields the GIL
    (``time.sleep(0)``).  A loop that kept it would hold off this process's other
    threads -- the collector that reads the answers -- until the interpreter's switch
    interval (5 ms) forces a hand-over (measured on the 2-vCPU VM with an ``mp.Queue``
    feeder thread, Poisson arrivals: 2.6 ms P50 / 10 ms P99 delivery at 4,800 req/s when
    holding the GIL, 0.27 / 0.9 ms when yielding).  The window is short because polling
    burns a core the workers could use; it is that short only under ``fine_timer()``
    (without it a sleep overshoots by ~60 us, the kernel's default timer slack).
    """
    while True:
        now = clock()
        if now >= target:
            return
        if target - now > 2 * POLL_S:
            sleep(target - now - POLL_S)
        else:
            sleep(0)  # yield the GIL to the collector thread


@contextlib.contextmanager
def fine_timer():
    """This thread's timer slack at 1 us inside (Linux ``prctl``; elsewhere nothing).

    The default slack (50 us) lets the kernel wake a sleeper up to that late, so a
    generator that sleeps close to each send time must poll longer instead.  Measured on
    the 2-vCPU VM: ``time.sleep(100 us)`` overshoots by 57 us at P50 with the default,
    13 us with 1 us of slack.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        before = libc.prctl(30, 0, 0, 0, 0)  # PR_GET_TIMERSLACK
        ok = before >= 0 and libc.prctl(29, 1000, 0, 0, 0) == 0  # PR_SET_TIMERSLACK, ns
    except (OSError, AttributeError):
        ok = False
    try:
        yield ok
    finally:
        if ok:
            libc.prctl(29, before, 0, 0, 0)


@contextlib.contextmanager
def paused_gc():
    """The cyclic garbage collector off inside (as it was after), and one collection then.

    A run allocates a request and a result object per send; every few thousand the
    collector walks the older generations -- the schedule, the pending and finished
    requests, hundreds of thousands of objects -- holding the GIL for milliseconds to
    tens of milliseconds, and the sends due meanwhile go out late.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
            gc.collect()


def run_open_loop(
    pool: WorkerPool,
    schedule: Sequence[tuple[float, Request]],
    *,
    drain_s: float = 10.0,
    pause_gc: bool = True,
) -> dict:
    """Send each request at its offset; wait for all (up to ``drain_s`` after the last send).

    ``pause_gc``: the cyclic garbage collector stays off while requests are sent and
    answered (``paused_gc``), so no collection over this process's objects stalls a send.
    Returns column arrays: rid, kind, offset, sojourn_s, service_s, path, worker, done
    (False: still queued when the drain ended -- a backlogged point, its sojourn a lower bound)
    and late_s (send time minus scheduled time: the generator's own lag, part of sojourn).
    """
    n = len(schedule)
    kinds = np.array([r.kind for _, r in schedule])
    offs = np.array([o for o, _ in schedule], dtype=np.float64)
    index = {r.rid: i for i, (_, r) in enumerate(schedule)}
    sched = np.zeros(n)
    late = np.zeros(n)  # how long after its scheduled time each request was handed over
    with paused_gc() if pause_gc else contextlib.nullcontext(), fine_timer():
        t0 = time.perf_counter() + 0.05
        for i, (off, req) in enumerate(schedule):
            target = t0 + off
            wait_until(target)
            sched[i] = target
            pool.submit(Request(req.rid, req.session, req.traj, req.call, req.kind, target))
            late[i] = time.perf_counter() - target
        left = (t0 + (offs[-1] if n else 0) + drain_s) - time.perf_counter()
        done = pool.results(n, timeout=left)
    sojourn = np.full(n, np.nan)
    service = np.full(n, np.nan)
    path = np.array([""] * n, dtype=object)
    worker = np.full(n, -1)
    finished = np.zeros(n, dtype=bool)
    end = time.perf_counter()
    for d in done:
        i = index[d.rid]
        sojourn[i] = d.t_done - sched[i]
        service[i] = d.t_done - d.t_start
        path[i], worker[i], finished[i] = d.path, d.worker, True
    sojourn[~finished] = end - sched[~finished]  # a lower bound: still waiting
    return {
        "rid": np.array([r.rid for _, r in schedule]),
        "kind": kinds,
        "offset": offs,
        "sojourn_s": sojourn,
        "service_s": service,
        "path": path,
        "worker": worker,
        "done": finished,
        "errors": sum(1 for d in done if d.error),
        "late_s": late,  # the generator's own lag: large values mean it, not the server, saturated
    }


def closed_loop(pool: WorkerPool, requests: Sequence[Request], timeout: float = 600.0) -> int:
    """Send requests one at a time, each after the previous finished (warm-up); returns errors."""
    errors = 0
    for r in requests:
        pool.submit(r)
        got = pool.results(1, timeout)
        if not got:
            raise TimeoutError(f"no answer to warm-up request {r.rid} in {timeout} s")
        errors += got[0].error is not None
    return errors
