"""ShadowVerifier: re-check a sample of emitted IDs against the reference, off the request path.

Certification proves the fast paths on the inputs it tried; the shadow verifier
watches the inputs that serving actually produces, including history-dependent
state no fresh-process test reaches (paper §3.6, §6.8).  The request path pays
only a coin flip and, for sampled requests, an enqueue of the text (as a tuple
of immutable chunks: no O(context) join) and a copy of the IDs.  A daemon thread
joins the text, encodes it with the reference through ``encode_batch`` (which
releases the GIL, unlike ``encode``), compares exactly and, on a mismatch,
writes a quarantine record and calls ``on_mismatch``.  When it falls behind,
the bounded queue refuses new samples and the drop counter says so.

The verifier spends at most ``cpu_share`` of one core (averaged over its checks): after
a check that took ``t`` seconds of its thread's CPU time it pauses ``t * (1/share - 1)``.
A reference re-encode of a long context costs tens of milliseconds, so an unbounded
verifier at 5% sampling takes a whole core under load, from the requests it shadows
(experiment 09 on the 2-vCPU VM: the tier's capacity fell by half).  A pause, unlike a
lower thread priority, never leaves the GIL with a thread the OS does not run.
``flush`` and ``close`` lift the pauses: a caller waiting for the checks gets them at
full speed.

Quarantine records hold the user's full prompt, the session id and both ID lists
(``_record``).  They go to a private per-user folder (``paths.quarantine_dir``; mode
0700, files 0600, created exclusively, never through a symlink), at most
``max_records`` files (more are dropped and counted) and ``max_record_bytes`` each (a
larger record keeps only the divergence: the text and full ID lists are left out,
counted).  After ``close`` the verifier samples nothing more (``offered_after_close``).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import random
import secrets
import stat
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import paths

DEFAULT_RATE = 0.05
DEFAULT_QUEUE = 256
DEFAULT_CPU_SHARE = 0.25  # of one core: the verifier's CPU, averaged over its checks
DEFAULT_MAX_CHARS = 32_000_000  # larger samples are skipped (counted), not checked
DEFAULT_MAX_RECORDS = 1000  # quarantine files; beyond, records are dropped (counted)
DEFAULT_MAX_RECORD_BYTES = 8 << 20  # a larger record is written without text and full IDs
_CONTEXT_TOKENS = 8  # tokens either side of the first divergence in a record
_MEMORY_RECORDS = 32  # mismatch records kept in memory (also when the directory is unwritable)


@dataclass
class Sample:
    """One sampled result, as the request path left it."""

    seq: int
    parts: tuple[str, ...]  # the full text, as chunks
    ids: np.ndarray | Callable[[], np.ndarray]  # a callable is resolved in the verifier thread
    path: str
    session: str | None
    enqueued: float


def default_quarantine_dir() -> Path:
    return paths.quarantine_dir()


def check_cpu_share(value, name: str = "cpu_share") -> None:
    """A share of one core: a number in (0, 1]; TypeError / ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{name} must be a number in (0, 1], got {value!r}")
    if not 0.0 < value <= 1.0:  # NaN fails this too
        raise ValueError(f"{name} must be in (0, 1] (1: no pauses), got {value!r}")


def first_divergence(a: np.ndarray, b: np.ndarray) -> int:
    """Index of the first differing ID (``min(len)`` when one is a prefix of the other)."""
    n = min(len(a), len(b))
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if diff.size else n


class ShadowVerifier:
    """Sample emitted results at ``rate`` and verify them against the reference in a thread.

    ``reference``: text -> IDs (defaults to the tokenizer's HF reference via
    ``encode_batch``).  ``on_mismatch(sample)`` runs in the verifier thread.
    """

    def __init__(
        self,
        tokenizer,
        *,
        rate: float = DEFAULT_RATE,
        queue_size: int = DEFAULT_QUEUE,
        quarantine_dir: str | Path | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        max_records: int = DEFAULT_MAX_RECORDS,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        seed: int | None = None,
        reference: Callable[[str], object] | None = None,
        on_mismatch: Callable[[Sample], None] | None = None,
        cpu_share: float = DEFAULT_CPU_SHARE,
    ):
        check_cpu_share(cpu_share)
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"sampling rate must be in [0, 1], got {rate!r}")
        if min(queue_size, max_chars, max_records, max_record_bytes) < 1:
            raise ValueError("queue_size, max_chars, max_records, max_record_bytes must be >= 1")
        self.max_records, self.max_record_bytes = max_records, max_record_bytes
        self.tokenizer = tokenizer
        self.rate = float(rate)
        self.max_chars = max_chars
        self.quarantine_dir = Path(quarantine_dir) if quarantine_dir else default_quarantine_dir()
        self.on_mismatch = on_mismatch
        self._reference = reference or self._hf_reference
        self._rng = random.Random(seed)
        self._queue: queue.Queue[Sample | None] = queue.Queue(maxsize=queue_size)
        self._guard = threading.Lock()
        self._seq = 0
        self._counts = dict.fromkeys(
            ("offered", "sampled", "checked", "mismatches", "dropped", "errors", "skipped_large",
             "quarantine_records", "quarantine_write_errors", "quarantine_dropped",
             "quarantine_truncated", "offered_after_close"), 0,
        )  # fmt: skip
        self._lags: deque[float] = deque(maxlen=4096)
        self.records: deque[dict] = deque(maxlen=_MEMORY_RECORDS)
        self.last_error: str | None = None
        self._idle = threading.Condition(self._guard)
        self._busy = 0  # samples taken off the queue and not yet finished
        self._closed = False
        self.cpu_share = float(cpu_share)
        self._cpu_clock = time.thread_time  # this thread's CPU seconds (the reference runs here)
        self._hurry = threading.Event()  # set: no pauses (a flush or close is waiting)
        self._hurrying = 0  # flushes in progress
        self._paused_s = 0.0
        self._thread = threading.Thread(target=self._run, name="toktier-shadow", daemon=True)
        self._thread.start()

    # --- request path ------------------------------------------------------------------
    def offer(
        self,
        ids: np.ndarray,
        text: Callable[[], str | tuple[str, ...]],
        path: str,
        session: str | None = None,
        *,
        owned: bool = False,
    ) -> bool:
        """Maybe sample one emitted result; ``text()`` is called only if it is sampled.

        ``owned``: ``ids`` will never change (a read-only result array), so a sample
        keeps it instead of copying it.  ``ids`` may also be a callable that returns
        them: it is called in the verifier thread, off the request path.  Never blocks: a
        full queue drops the sample and counts it.  After ``close`` nothing is sampled
        (counted as ``offered_after_close``).  Returns whether the sample was queued.
        """
        if self._closed:
            with self._guard:
                self._counts["offered_after_close"] += 1
            return False
        if self.rate < 1.0 and self._rng.random() >= self.rate:
            with self._guard:
                self._counts["offered"] += 1
            return False
        t = text()
        parts = (t,) if isinstance(t, str) else tuple(t)
        with self._guard:
            self._counts["offered"] += 1
            self._counts["sampled"] += 1
            self._seq += 1
            kept = ids if owned or callable(ids) else np.array(ids, copy=True)
            sample = Sample(self._seq, parts, kept, path, session, time.monotonic())
            try:
                self._queue.put_nowait(sample)
            except queue.Full:
                self._counts["dropped"] += 1
                return False
        return True

    # --- control -----------------------------------------------------------------------
    def flush(self, timeout: float = 60.0) -> bool:
        """Wait until every queued sample is checked (without the CPU-share pauses meanwhile);
        False on timeout."""
        deadline = time.monotonic() + timeout
        with self._idle:
            self._hurrying += 1
            self._hurry.set()
            try:
                while self._queue.qsize() or self._busy:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._idle.wait(min(left, 0.05))
            finally:
                self._hurrying -= 1
                if not self._hurrying and not self._closed:
                    self._hurry.clear()
        return True

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, timeout: float = 60.0) -> None:
        """Check what is queued, then stop the thread; later offers are not sampled."""
        self._closed = True
        self._hurry.set()
        if not self._thread.is_alive():
            return
        self.flush(timeout)
        self._queue.put(None)
        self._thread.join(timeout)

    def stats(self) -> dict:
        """Counters plus backlog, lag (seconds from enqueue to checked), the CPU share and the
        seconds paused to keep it."""
        with self._guard:
            out = dict(self._counts)
            lags = np.asarray(self._lags, dtype=np.float64)
        out["rate"] = self.rate
        out["cpu_share"] = self.cpu_share
        out["paused_s"] = self._paused_s
        out["backlog"] = self._queue.qsize()
        out["lag_p50_s"] = float(np.median(lags)) if lags.size else 0.0
        out["lag_max_s"] = float(lags.max()) if lags.size else 0.0
        out["alive"] = self._thread.is_alive()
        return out

    # --- verifier thread ---------------------------------------------------------------
    def _hf_reference(self, text: str):
        # encode_batch releases the GIL for the Rust work; encode() would stall the requests.
        return self.tokenizer.hf.encode_batch([text], add_special_tokens=False)[0].ids

    def _run(self) -> None:
        while True:
            sample = self._queue.get()
            if sample is None:
                return
            with self._guard:
                self._busy += 1
            cpu0 = self._cpu_clock()
            try:
                self._check(sample)
            except Exception as exc:  # the verifier reports; it never takes the tier down
                self._bump("errors")
                self.last_error = f"{type(exc).__name__}: {exc}"
            finally:
                with self._idle:
                    self._busy -= 1
                    self._lags.append(time.monotonic() - sample.enqueued)
                    self._idle.notify_all()
            self._pause(self._cpu_clock() - cpu0)

    def _pause(self, spent: float) -> None:
        """Rest ``spent * (1/cpu_share - 1)`` seconds after a check that took ``spent`` CPU
        seconds, so the thread's CPU stays within ``cpu_share`` of a core; a flush or
        close cuts the rest short.  Samples offered meanwhile queue (or drop, counted)."""
        if self.cpu_share >= 1.0 or spent <= 0.0:
            return
        t0 = time.monotonic()
        self._hurry.wait(spent * (1.0 / self.cpu_share - 1.0))
        with self._guard:
            self._paused_s += time.monotonic() - t0

    def _bump(self, key: str, n: int = 1) -> None:
        with self._guard:
            self._counts[key] += n

    def _check(self, sample: Sample) -> None:
        n_chars = sum(len(p) for p in sample.parts)
        if n_chars > self.max_chars:
            self._bump("skipped_large")
            return
        text = "".join(sample.parts)
        expected = np.asarray(self._reference(text), dtype=np.int64)
        ids = sample.ids() if callable(sample.ids) else sample.ids
        got = ids.astype(np.int64, copy=False)
        self._bump("checked")
        if got.shape == expected.shape and np.array_equal(got, expected):
            return
        self._bump("mismatches")
        record = self._record(sample, text, got, expected)
        self.records.append(record)
        self._write(record)
        if self.on_mismatch is not None:
            self.on_mismatch(sample)

    def _record(self, sample: Sample, text: str, got: np.ndarray, expected: np.ndarray) -> dict:
        i = first_divergence(got, expected)
        lo, hi = max(0, i - _CONTEXT_TOKENS), i + _CONTEXT_TOKENS
        content_sha = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        # The smallest text the reference must agree on: the characters under the
        # reference tokens around the first divergence (a reproducer to shrink from).
        window = self._divergence_window(text, lo, hi)
        return {
            "content_sha256": content_sha,
            "tokenizer": getattr(self.tokenizer, "name", None),
            "tokenizer_sha256": getattr(self.tokenizer, "sha256", None),
            "path": sample.path,
            "session": sample.session,
            "seq": sample.seq,
            "time": time.time(),
            "n_chars": len(text),
            "first_divergence": i,
            "emitted_len": len(got),
            "reference_len": len(expected),
            "emitted_near": got[lo:hi].tolist(),
            "reference_near": expected[lo:hi].tolist(),
            "divergence_chars": window,
            "reproducer": (
                "import json, toktier; r = json.load(open(RECORD)); "
                "tok = toktier.load(r['tokenizer']); "
                "ref = tok.hf.encode(r['text'], add_special_tokens=False).ids; "
                "print(ref == r['reference_ids'], ref == r['emitted_ids'])"
            ),
            "text": text,
            "emitted_ids": got.tolist(),
            "reference_ids": expected.tolist(),
        }

    def _divergence_window(self, text: str, lo: int, hi: int) -> list[int] | None:
        try:
            enc = self.tokenizer.hf.encode_batch([text], add_special_tokens=False)[0]
        except Exception:
            return None
        offs = enc.offsets[lo:hi]
        return [offs[0][0], offs[-1][1]] if offs else [len(text), len(text)]

    def _write(self, record: dict) -> None:
        """Write one record privately: 0700 folder, 0600 file, exclusive create, no symlinks."""
        d = self.quarantine_dir
        try:
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.lstat(d)
            if not stat.S_ISDIR(st.st_mode):
                raise OSError(f"{d} is not a directory (a symlink or a file)")
            if st.st_mode & 0o077 and st.st_uid == os.getuid():
                os.chmod(d, 0o700)
            with os.scandir(d) as it:
                existing = sum(1 for e in it if e.name.endswith(".json"))
            if existing >= self.max_records:
                self._bump("quarantine_dropped")
                return
            data = json.dumps(record).encode("utf-8")
            if len(data) > self.max_record_bytes:
                slim = {k: v for k, v in record.items()
                        if k not in ("text", "emitted_ids", "reference_ids")}  # fmt: skip
                slim["truncated"] = f"record of {len(data):,} bytes > {self.max_record_bytes:,}"
                data = json.dumps(slim).encode("utf-8")
                self._bump("quarantine_truncated")
            name = f"{record['content_sha256'][:16]}-{os.getpid()}-{record['seq']}.json"
            tmp = d / f".{name}.{secrets.token_hex(8)}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(tmp, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, d / name)  # replaces a link at that name; never writes through it
        except OSError as exc:  # full disk, read-only or missing directory: report, go on
            self._bump("quarantine_write_errors")
            self.last_error = f"quarantine write failed: {exc}"
            return
        self._bump("quarantine_records")
