"""A multi-process tokenization front end for load experiments: the tier, or a stateless baseline.

``WorkerPool(mode, tokenizer, workload, workers=N)`` starts N worker processes.
In ``"tier"`` mode each worker owns a :class:`~toktier.Tier` and a request goes
to the worker its session hashes to (affinity, so session state is found); the
stateless modes (``"reference"``, ``"fastokens"``, ``"engine"``) encode every
request in full and take requests from one shared queue (the least-loaded
worker takes the next one); ``"null"`` answers every request with no IDs after
materializing its text -- the harness alone, whose CPU per request and capacity
are the floor under every front end's on the same machine.

Request texts are not shipped per request: every worker holds the same
:class:`Workload` (the sessions' final texts and the character offsets of each
call), and materializes a call's text itself, as a front end has the text it
just received.  Requests and plain answers cross raw pipes as fixed-size
``struct`` records, written and read whole (a record is smaller than the
pipe's atomic-write size, so readers never see half of one): pickling a
request and its answer through ``multiprocessing.Queue`` cost ~100 us of the
worker's CPU and ~200 us of the generator process's per request (measured on
the 2-vCPU VM at 2,400-3,200 req/s), against the ~200 us the tier spends
serving one.  Answers that carry IDs or an error, and control messages,
still travel pickled on a second pipe.  Timestamps are ``time.perf_counter()``,
the system-wide monotonic clock on Linux, so sojourn = completion - scheduled arrival is
measured across processes.  A worker that dies is restarted empty at its slot;
its queued requests are re-sent and its sessions become misses (still exact).  A
worker that cannot start is retried with back-off (0.5 s, 1 s, 2 s, ...) at most
``max_failed_starts`` times; then its requests are answered with the worker's error
and ``results()`` raises ``WorkerStartError`` with it: nothing is lost or swallowed.
"""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import queue
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field

import numpy as np

from .errors import WorkerStartError

MODES = ("tier", "reference", "fastokens", "engine", "null")
KINDS = ("init", "cont", "edit", "close")
PATHS = ("repair", "cpu", "gpu", "reference", "fastokens", "engine", "close", "null")
_PATH_CODE = {p: i for i, p in enumerate(PATHS)}
_STOP, _STATS, _PROBE = 253, 254, 255  # control records' kind codes
# rid, session number, trajectory, call, scheduled time, kind code
_REQ = struct.Struct("<qqiidB7x")
# rid, service start, service end, number of IDs, path code
_ANS = struct.Struct("<qddqB7x")
_PIPE_BYTES = 1 << 20  # Linux's default ceiling for unprivileged pipes: ~26K queued records


@dataclass
class Workload:
    """Session texts: ``finals[t]`` is session t's last prompt, ``ends[t][k]`` its call k's length."""

    finals: list[str]
    ends: list[np.ndarray]
    names: list[str] = field(default_factory=list)

    def text(self, traj: int, call: int) -> str:
        return self.finals[traj][: int(self.ends[traj][call])]

    def calls(self, traj: int) -> int:
        return len(self.ends[traj])


@dataclass(frozen=True)
class Request:
    rid: int
    session: str
    traj: int
    call: int
    kind: str  # "init" (the tier has no state for it), "cont", "edit" or "close"
    t_sched: float = 0.0


@dataclass
class Done:
    rid: int
    worker: int
    t_start: float
    t_done: float
    path: str
    n_ids: int
    ids: np.ndarray | None = None
    error: str | None = None


def affinity(session: str, workers: int) -> int:
    """The worker that owns ``session`` (a stable hash: the same in every process and run)."""
    return zlib.crc32(session.encode("utf-8")) % workers


def rss_bytes() -> int:
    """This process's resident set size now (Linux ``/proc``; elsewhere the peak)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) process ``pid`` has used; NaN where
    ``/proc`` is missing (not Linux) or the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def edited(text: str, rid: int) -> str:
    """A deterministic mid-context edit of ``text`` (the soak's "edit" requests)."""
    if len(text) < 64:
        return text + " (edited)"
    at = (rid * 2654435761) % (len(text) - 32)
    return text[:at] + f"<edit {rid}>" + text[at + 16 :]


def _serve_fn(mode: str, tokenizer_name: str, verify_rate: float, tier_kw: dict):
    """(serve(session, text, keep, kind) -> (n_ids, path, ids or None), stats(), probe()).

    The tier answers with its patch (``Result.keep`` + ``new_ids``), as a front end
    hands it to an engine's prefix cache; the whole ID array is assembled only when
    the caller keeps results (``keep``).  Kinds: "init" / "cont" (the text as
    recorded), "edit" (the text with a mid-context edit), "close" (free the session).
    ``stats()`` first lets the verifier finish (the end of a run); ``probe()`` does
    not (RSS and counters during a run).
    """
    import toktier

    tok = toktier.load(tokenizer_name)
    if mode == "tier":
        tier = toktier.Tier(tok, verify_rate=verify_rate, **tier_kw)

        def serve(session, text, keep, kind="cont"):
            if kind == "close":
                return 0, "close", None
            r = tier.encode(text, session=session)
            return len(r), r.path, (r.ids if keep else None)

        def close(session):
            tier.close(session)

        def stats():
            tier.shutdown(timeout=30.0)  # finish the verifier's queue before reporting
            return tier.stats()

        def probe():
            return {"rss_bytes": rss_bytes(), **tier.stats()}

        return serve, stats, probe, close
    if mode == "reference":
        hf = tok.hf

        def full(text):
            return hf.encode(text, add_special_tokens=False).ids
    elif mode == "fastokens":
        import fastokens

        f = fastokens.Tokenizer.from_file(tok.checked_path())

        def full(text):
            return f.encode(text, add_special_tokens=False).ids
    elif mode == "null":  # the harness alone: the request's text is made, nothing encodes it

        def full(text):
            return ()
    elif mode == "engine":
        eng = tok.engine
        eng.warmup()
        encode = eng.encode  # one core per worker: the pool supplies the parallelism

        def full(text):
            return encode(text)[0]
    else:
        raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")

    def serve_full(session, text, keep, kind="cont"):
        # The Rust tokenizers answer with a Python list of IDs, as the latency benchmarks
        # time them; its conversion to an array (~360 us for a 48K-character context, twice
        # fastokens' own encode) is paid only when results are kept, never in a capacity run.
        if kind == "close":
            return 0, "close", None
        ids = full(text)
        return len(ids), mode, (np.asarray(ids, dtype=np.uint32) if keep else None)

    def probe():
        return {"rss_bytes": rss_bytes()}

    return serve_full, dict, probe, lambda session: None


def _grow_pipe(fd: int) -> None:
    """Ask for a 1 MiB pipe buffer (queued requests never block the sender before ~26K)."""
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


def _read_record(fd: int, size: int) -> bytes | None:
    """One whole record from a pipe, or None at end of file (the other side closed)."""
    data = os.read(fd, size)
    while 0 < len(data) < size:  # whole-record writes make this rare; never a torn record
        more = os.read(fd, size - len(data))
        if not more:
            return None
        data += more
    return data or None


def _worker_main(slot, mode, tokenizer_name, workload, inbox, control, answers, verify_rate,
                 tier_kw, keep, pin=None):  # fmt: skip
    """One worker process: serve request records from the pipe ``inbox``; plain answers go
    as records on ``answers``, the rest (IDs, errors, stats, probes) pickled on ``control``.

    ``pin``: the core this worker's serving thread is held to (``WorkerPool(pin_cores=True)``),
    set after the warm-up so the threads started before it (the shadow verifier, the engine's
    thread pool) keep every core."""
    try:
        serve, stats, probe, close = _serve_fn(mode, tokenizer_name, verify_rate, tier_kw)
        serve("__warmup__", workload.text(0, 0), False)
        if pin is not None:
            os.sched_setaffinity(0, {pin})  # Linux: pid 0 is the calling thread alone
    except Exception as exc:
        control.send(("failed", slot, f"{type(exc).__name__}: {exc}"))
        return
    control.send(("ready", slot, None))
    in_fd, out_fd = inbox.fileno(), answers.fileno()
    while True:
        rec = _read_record(in_fd, _REQ.size)
        if rec is None:
            return
        rid, sid, traj, call, _, kind = _REQ.unpack(rec)
        if kind == _STOP:
            return
        if kind == _STATS:
            control.send(("stats", slot, stats()))
            continue
        if kind == _PROBE:
            control.send(("probe", slot, probe()))
            continue
        kind_name, session = KINDS[kind], f"s{sid}"
        text = workload.text(traj, call)  # the request as it arrives: not service time
        if kind_name == "edit":
            text = edited(text, rid)
        t0 = time.perf_counter()
        try:
            if kind_name == "close":
                close(session)
            n_ids, path, ids = serve(session, text, keep, kind_name)
            err = None
        except Exception as exc:  # reported per request; the worker keeps serving
            n_ids, path, ids, err = 0, "error", None, f"{type(exc).__name__}: {exc}"
        t1 = time.perf_counter()
        code = _PATH_CODE.get(path)
        if err is None and not keep and code is not None:
            os.write(out_fd, _ANS.pack(rid, t0, t1, n_ids, code))
            continue
        if keep and ids is None:
            ids = np.zeros(0, np.uint32)
        control.send(Done(rid, slot, t0, t1, path, n_ids, ids, err))


def pinned_cores(workers: int) -> list[int]:
    """The core each worker's serving thread is held to under ``pin_cores``: the usable
    cores in turn from the second, so worker 0 never shares a core with the load generator
    when there are two or more (the generator is not pinned: the scheduler keeps it off a
    busy core).  On one core every worker gets it."""
    if not hasattr(os, "sched_setaffinity"):
        raise OSError("pin_cores needs os.sched_setaffinity (Linux)")
    cores = sorted(os.sched_getaffinity(0))
    return [cores[(slot + 1) % len(cores)] for slot in range(workers)]


class WorkerPool:
    """N worker processes behind one ``submit``; results arrive on ``results()``.

    ``pin_cores``: each worker's serving thread is held to one core (``pinned_cores``); its
    verifier thread and the engine's thread pool are not.  A harness option, the same for
    every mode (experiment 09 compares front ends on one setting)."""

    def __init__(
        self,
        mode: str,
        tokenizer_name: str,
        workload: Workload,
        *,
        workers: int = 1,
        verify_rate: float = 0.05,
        keep_ids: bool = False,
        tier_kw: dict | None = None,
        start_timeout_s: float = 300.0,
        max_failed_starts: int = 3,
        pin_cores: bool = False,
    ):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
        if workers < 1:
            raise ValueError("workers must be >= 1")
        if max_failed_starts < 1:
            raise ValueError("max_failed_starts must be >= 1")
        self.max_failed_starts = max_failed_starts
        self.mode, self.workers = mode, workers
        self.pins = pinned_cores(workers) if pin_cores else [None] * workers
        self._args = (mode, tokenizer_name, workload)
        self._verify_rate, self._keep, self._tier_kw = verify_rate, keep_ids, dict(tier_kw or {})
        self._ctx = mp.get_context("spawn")  # no fork after threads (tokenizers, numba)
        self._readers: dict = {}  # control pipe (one per worker process) -> slot
        self._answers: dict = {}  # answer-record pipe (one per worker process) -> slot
        self._leftover: dict = {}  # answer pipe -> bytes of a record not yet whole
        self._sids: dict[str, int] = {}  # session id -> the number its records carry
        self.affine = mode == "tier"
        # (reader, writer) per slot; stateless modes share one (the idle worker reads next)
        self._inboxes: list = [None if self.affine else self._inbox()] * workers
        self._procs: list = [None] * workers
        self._pending: dict[int, Request] = {}  # sent, not done (re-sent if its worker dies)
        self._lock = threading.Lock()
        self.restarts = 0
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._probes: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        self._starting = [False] * workers  # started, not yet "ready" or "failed"
        self._failed_starts = [0] * workers  # consecutive failed starts
        self._start_error: dict[int, str] = {}
        self._next_start = [0.0] * workers  # back-off: no restart before this time
        self.gave_up: dict[int, str] = {}  # slots no longer restarted, and why
        for slot in range(workers):
            self._start(slot)
        self._await_ready(set(range(workers)), start_timeout_s)
        self._collector = threading.Thread(target=self._collect, daemon=True)
        self._collector.start()

    # --- workers -----------------------------------------------------------------------
    def _inbox(self):
        """A request pipe (reader, writer): the writer never blocks, this process keeps the
        reader open (a dead worker's records wait for its restart instead of failing)."""
        reader, writer = self._ctx.Pipe(duplex=False)
        _grow_pipe(writer.fileno())
        os.set_blocking(writer.fileno(), False)
        return reader, writer

    def _start(self, slot: int) -> None:
        # Each worker answers on its own pipes: a killed worker can garble only its own.
        if self.affine:
            if self._inboxes[slot] is not None:
                for end in self._inboxes[slot]:  # a dead worker's: its requests are re-sent
                    end.close()
            self._inboxes[slot] = self._inbox()
        control, control_w = self._ctx.Pipe(duplex=False)
        answers, answers_w = self._ctx.Pipe(duplex=False)
        _grow_pipe(answers.fileno())
        p = self._ctx.Process(
            target=_worker_main,
            args=(slot, *self._args, self._inboxes[slot][0], control_w, answers_w,
                  self._verify_rate, self._tier_kw, self._keep, self.pins[slot]),
            daemon=True,
        )  # fmt: skip
        p.start()
        control_w.close()
        answers_w.close()
        with self._lock:
            self._readers[control] = slot
            self._answers[answers] = slot
            self._starting[slot] = True
        self._procs[slot] = p

    def _await_ready(self, slots: set[int], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while slots:
            sentinels = {self._procs[s].sentinel: s for s in slots}
            ready = mpc.wait(
                [*self._readers, *sentinels], timeout=max(0.0, deadline - time.monotonic())
            )
            if not ready:
                self.close()
                raise TimeoutError(f"workers {sorted(slots)} did not start in {timeout:.0f} s")
            for conn in ready:
                if conn in sentinels:  # exited before saying ready (e.g. no __main__ guard)
                    if any(r in ready for r, s in self._readers.items() if s == sentinels[conn]):
                        continue  # its last words are on its pipe: read them below
                    code = self._procs[sentinels[conn]].exitcode
                    self.close()
                    raise RuntimeError(
                        f"worker {sentinels[conn]} exited with code {code} while starting; "
                        "scripts that start workers need an `if __name__ == '__main__':` guard"
                    )
                try:
                    kind, slot, info = conn.recv()
                except EOFError:
                    kind, slot, info = "failed", self._readers[conn], "exited while starting"
                with self._lock:
                    self._starting[slot] = False
                if kind == "failed":
                    self.close()
                    raise WorkerStartError(f"worker {slot} failed to start: {info}")
                slots.discard(slot)

    def kill(self, slot: int) -> None:
        """Kill one worker process (fault injection); ``check_workers`` restarts it."""
        self._procs[slot].kill()
        self._procs[slot].join(10)

    def check_workers(self) -> list[int]:
        """Restart dead workers empty and re-send their unfinished requests; returns the slots.

        A slot whose worker failed to start ``max_failed_starts`` times in a row is given
        up: its pending requests are answered with the worker's error and this raises
        ``WorkerStartError``.  Restarts back off exponentially (0.5 s doubling, at most 30 s).
        """
        now = time.monotonic()
        dead = [s for s, p in enumerate(self._procs)
                if p is not None and not p.is_alive() and s not in self.gave_up]  # fmt: skip
        restarted, gave_up = [], []
        for slot in dead:
            with self._lock:
                if self._starting[slot]:  # died before saying ready or failed
                    self._starting[slot] = False
                    self._failed_starts[slot] += 1
                failures = self._failed_starts[slot]
            if failures >= self.max_failed_starts:
                gave_up.append(slot)
                continue
            if now < self._next_start[slot]:
                continue
            self._next_start[slot] = now + min(30.0, 0.5 * 2**failures)
            self.restarts += 1
            self._start(slot)
            restarted.append(slot)
        if restarted:
            with self._lock:
                lost = [
                    r for r in self._pending.values()
                    if not self.affine or self._slot(r) in restarted
                ]  # fmt: skip
            for r in sorted(lost, key=lambda r: r.rid):
                self._send(self._slot(r), self._record(r))
        if gave_up:
            raise self._give_up(gave_up)
        return restarted

    def _give_up(self, slots: list[int]) -> WorkerStartError:
        """Stop restarting ``slots``; answer the requests only they could serve with the error."""
        for slot in slots:
            self.gave_up[slot] = self._start_error.get(slot, "exited while starting")
        why = "; ".join(f"worker {s}: {self.gave_up[s]}" for s in slots)
        msg = f"{len(slots)} worker(s) failed to start {self.max_failed_starts} times ({why})"
        none_left = len(self.gave_up) == self.workers
        with self._lock:
            lost = [r for r in self._pending.values()
                    if (self._slot(r) in self.gave_up if self.affine else none_left)]  # fmt: skip
            for r in lost:
                del self._pending[r.rid]
        t = time.perf_counter()
        for r in sorted(lost, key=lambda r: r.rid):
            slot = self._slot(r)
            self._done.put(Done(r.rid, slot, t, t, "error", 0, None, f"WorkerStartError: {msg}"))
        return WorkerStartError(f"{msg}; {len(lost)} pending request(s) answered with this error")

    # --- requests ----------------------------------------------------------------------
    def _slot(self, req: Request) -> int:
        return affinity(req.session, self.workers) if self.affine else 0

    def submit(self, req: Request) -> None:
        """Queue one request (validated first: a bad one is never counted as pending)."""
        if not isinstance(req, Request):
            raise TypeError(f"submit takes a Request, got {type(req).__name__}")
        if not isinstance(req.session, str) or not req.session:
            raise TypeError(f"session id must be a non-empty str, got {req.session!r}")
        try:
            req.session.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                f"session id {req.session!r} is not encodable as UTF-8 (a lone surrogate?)"
            ) from None
        if req.kind not in KINDS:
            raise ValueError(f"unknown request kind {req.kind!r}; known: {', '.join(KINDS)}")
        slot = self._slot(req)
        if slot in self.gave_up and (self.affine or len(self.gave_up) == self.workers):
            raise WorkerStartError(f"worker {slot} was given up: {self.gave_up[slot]}")
        with self._lock:
            self._pending[req.rid] = req
            rec = self._record(req)
        self._send(slot, rec)

    def _record(self, req: Request) -> bytes:
        sid = self._sids.setdefault(req.session, len(self._sids))
        return _REQ.pack(req.rid, sid, req.traj, req.call, req.t_sched, KINDS.index(req.kind))

    def _send(self, slot: int, record: bytes) -> None:
        """Write one record to ``slot``'s inbox.  A full pipe (a backlog of ~26K requests)
        waits for its reader; if the reader is dead the request stays pending and goes
        again when ``check_workers`` restarts it."""
        fd = self._inboxes[slot][1].fileno()
        while True:
            try:
                os.write(fd, record)
                return
            except BlockingIOError:
                procs = [self._procs[slot]] if self.affine else self._procs
                if not any(p is not None and p.is_alive() for p in procs):
                    return
                time.sleep(0.001)

    def _collect(self) -> None:
        """Read answers as they come.  After a read it sleeps 1 ms so answers gather and
        are read many per call (the workers stamp their own times: no measured time moves)."""
        while not self._closed:
            with self._lock:
                conns = [*self._readers, *self._answers]
            try:
                ready = mpc.wait(conns, timeout=0.2)
            except (OSError, ValueError):  # a pipe closed meanwhile (close(), a restart)
                continue
            for conn in ready:
                if conn in self._answers:
                    self._read_answers(conn)
                    continue
                try:
                    msg = conn.recv()
                except (EOFError, OSError):  # the worker died: forget its pipe
                    with self._lock:
                        self._readers.pop(conn, None)
                    conn.close()
                    continue
                self._route(msg)
            if ready:
                time.sleep(0.001)

    def _read_answers(self, conn) -> None:
        try:
            data = os.read(conn.fileno(), _ANS.size * 1024)
        except OSError:
            data = b""
        if not data:  # the worker died: forget its pipe
            with self._lock:
                self._answers.pop(conn, None)
                self._leftover.pop(conn, None)
            conn.close()
            return
        data = self._leftover.pop(conn, b"") + data
        whole = len(data) - len(data) % _ANS.size
        if whole < len(data):
            self._leftover[conn] = data[whole:]
        slot = self._answers[conn]
        for rid, t0, t1, n_ids, code in _ANS.iter_unpack(data[:whole]):
            self._route(Done(rid, slot, t0, t1, PATHS[code], n_ids))

    def _route(self, msg) -> None:
        if isinstance(msg, tuple) and msg[0] in ("ready", "failed"):
            kind, slot, info = msg
            with self._lock:
                if kind == "ready":
                    self._failed_starts[slot] = 0
                else:
                    self._start_error[slot] = str(info)
                    if self._starting[slot]:
                        self._failed_starts[slot] += 1
                self._starting[slot] = False
            return
        if isinstance(msg, tuple) and msg[0] == "probe":
            self._probes.put(msg)
            return
        if isinstance(msg, Done):
            with self._lock:
                if self._pending.pop(msg.rid, None) is None:
                    return  # a re-sent request answered twice
        self._done.put(msg)  # results, and ("ready" after a restart) / ("stats", ...) tuples

    def results(self, n: int, timeout: float) -> list[Done]:
        """Up to ``n`` results within ``timeout`` seconds (restarting dead workers meanwhile)."""
        out, deadline = [], time.monotonic() + timeout
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                msg = self._done.get(timeout=min(left, 0.5))
            except queue.Empty:
                self.check_workers()
                continue
            if isinstance(msg, Done):
                out.append(msg)
        return out

    def ready(self) -> list[Done]:
        """The results that have arrived, without waiting."""
        out = []
        while True:
            try:
                msg = self._done.get_nowait()
            except queue.Empty:
                return out
            if isinstance(msg, Done):
                out.append(msg)

    def cpu_seconds(self) -> float:
        """CPU seconds the live worker processes have used (their verifiers included)."""
        return sum(process_cpu_s(p.pid) for p in self._procs if p is not None and p.is_alive())

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def probe(self, timeout: float = 30.0) -> dict[int, dict]:
        """Each live worker's RSS and counters now, without stopping its verifier."""
        slots = [s for s, p in enumerate(self._procs) if p is not None and p.is_alive()]
        probe = _REQ.pack(0, 0, 0, 0, 0.0, _PROBE)
        for s in slots:
            self._send(s if self.affine else 0, probe)
        got, deadline = {}, time.monotonic() + timeout
        while len(got) < len(slots) and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                _, slot, info = self._probes.get(timeout=0.5)
                got[slot] = info
        return got

    def stats(self, timeout: float = 120.0) -> list[dict]:
        """Each worker's own stats (the tier's counters and its verifier's)."""
        if not self.affine:
            return []
        for s in range(self.workers):
            self._send(s, _REQ.pack(0, 0, 0, 0, 0.0, _STATS))
        got, deadline = {}, time.monotonic() + timeout
        while len(got) < self.workers and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                msg = self._done.get(timeout=0.5)
                if isinstance(msg, tuple) and msg[0] == "stats":
                    got[msg[1]] = msg[2]
        return [got[s] for s in sorted(got)]

    def close(self) -> None:
        self._closed = True
        stop = _REQ.pack(0, 0, 0, 0, 0.0, _STOP)
        for box in {id(b): b for b in self._inboxes}.values():
            for _ in range(self.workers):
                with contextlib.suppress(OSError):  # a full pipe: the kill below
                    os.write(box[1].fileno(), stop)
        for p in self._procs:
            if p is not None:
                p.join(5)
                if p.is_alive():
                    p.kill()
        for conn in [*self._readers, *self._answers]:
            conn.close()
        for box in {id(b): b for b in self._inboxes}.values():
            for end in box:
                end.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
