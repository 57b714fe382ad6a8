"""SessionStore: per-session text and token records, updated in place, with TTL and a byte cap.

Each session keeps its text (as chunks, merged four at a time by size level up to
``TEXT_CHUNK_FROZEN`` characters, so an append copies O(Δ log) characters
amortized and a bounded number at worst, never the whole context; a full-text
request simply keeps the caller's string) and its token records -- id,
character start, character end -- in growable numpy arrays with amortized
doubling.  The state is bound to the sha256 of the tokenizer that produced it.
Sessions expire after ``ttl_s`` of inactivity and the least recently used ones
are evicted when the total exceeds ``max_bytes`` (default ``DEFAULT_MAX_BYTES``, 2 GiB);
an evicted session is simply gone (a later request is a miss, not an error).
Expiry needs no caller: sessions are kept in order of last use, so every ``get`` and
``put`` drops the stale ones at the front (a few per call: amortized O(1)), and one
shared background thread sweeps every live store (``ttl_s / 4``, 1 s to 60 s apart)
so an idle store also lets go of its memory.

Results read the live arrays without copying them: a ``Snapshot`` is O(1) to
take and, before a later request overwrites records it still reads, it saves
just those records (O(window) per request, and only while someone holds an
unread result).  So a result's IDs never change under its holder, and no
request pays an O(context) copy.
"""

from __future__ import annotations

import mmap
import sys
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

ID_DTYPE = np.uint32
DEFAULT_MAX_BYTES = 2 << 30  # a default Tier's memory budget for session state
_SWEEP_PER_CALL = 8  # stale sessions a get/put drops at most (amortized expiry)
TEXT_CHUNK_FROZEN = 1 << 16  # characters: a text chunk this long is never merged again
_FROZEN_LEVEL = 8  # ``_chunk_level(TEXT_CHUNK_FROZEN)``: 4 ** 8 characters
_MAX_OPEN_CHUNKS = 3 * _FROZEN_LEVEL  # chunks below TEXT_CHUNK_FROZEN after an append, at most
SPAN_DTYPE = np.int32  # character offsets; sessions stay below 2**31 characters
_MIN_CAPACITY = 256
# A seeded session's arrays get this much room past its records (1/16 of them + 256), so
# its first appends write in place: with exact-size arrays the first append after every
# full encode copied all records into new, never-touched memory (at 48K characters
# 7-10% of the mean append and 13% of its P90: results/runs/append-path/).
_SEED_HEADROOM_SHIFT = 4
_SEED_HEADROOM_MIN = 256
# A record array of this many bytes or more lives in an anonymous memory map of its own, so
# that growing it is a remap (``mmap.resize``: the kernel moves its pages, no record is
# copied) instead of a copy of every record into new memory: at 1M characters a growing
# append cost ~500 us against ~45-75 for the others, ~190 at 200K
# (``tools/append-profile/growth_large.py``).  A remap costs ~20-25 us an array on the
# 2-vCPU VMs whatever its size, about what copying 256 KiB of records costs, hence the bound.
# (Linux only: CPython resizes an anonymous map with mremap where the platform has it.)
REMAP_MIN_BYTES = 1 << 19 if sys.platform.startswith("linux") else 1 << 62


def record_array(cap: int, dtype) -> np.ndarray:
    """An uninitialized record array of ``cap`` entries: a numpy buffer, or from
    ``REMAP_MIN_BYTES`` on, a view of an anonymous map of its own
    (``SessionState._remapped`` grows it without copying)."""
    nbytes = cap * np.dtype(dtype).itemsize
    if nbytes < REMAP_MIN_BYTES:
        return np.empty(cap, dtype=dtype)
    # private: a shared anonymous map keeps its first size, and its pages past it fault (SIGBUS)
    return np.frombuffer(mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE), dtype=dtype)


def _mapped(arr: np.ndarray) -> mmap.mmap | None:
    """The anonymous map a ``record_array`` view reads, or None (a numpy buffer)."""
    base = arr.base
    return base.obj if type(base) is memoryview and type(base.obj) is mmap.mmap else None


def _chunk_level(n: int) -> int:
    """A text chunk's merge level: floor(log4(n)) (n >= 1)."""
    return (n.bit_length() - 1) >> 1


def seed_capacity(n: int) -> int:
    """Record capacity of a session seeded with ``n`` records (``SessionState.commit_full``)."""
    return n + (n >> _SEED_HEADROOM_SHIFT) + _SEED_HEADROOM_MIN


class Snapshot:
    """The IDs a session held when a result was returned, kept exact without a copy up front.

    ``buf[:shared]`` is still the session's own (unchanged) array; ``saved`` holds the
    records ``[shared, n)`` that later requests overwrote, copied just before they did.
    """

    __slots__ = ("__weakref__", "_buf", "_guard", "_n", "_saved", "_shared")

    def __init__(self, buf: np.ndarray, n: int, guard: threading.Lock):
        self._buf, self._n, self._shared, self._saved, self._guard = buf, n, n, None, guard

    def detach(self, at: int) -> None:
        """Save the records from ``at`` on (the caller is about to overwrite them; guard held)."""
        if at < self._shared:
            part = self._buf[at : self._shared].copy()
            self._saved = part if self._saved is None else np.concatenate((part, self._saved))
            self._shared = at

    def materialize(self) -> np.ndarray:
        """The IDs as an owned, read-only array (O(n), paid only by a reader who asks)."""
        with self._guard:
            out = np.empty(self._n, dtype=ID_DTYPE)
            out[: self._shared] = self._buf[: self._shared]
            if self._saved is not None:
                out[self._shared :] = self._saved
        out.flags.writeable = False
        return out


class SessionState:
    """One session's text and token records.  Mutated only through ``commit_*`` methods."""

    __slots__ = (
        "_chunks",
        "_guard",
        "_length",
        "_record_nbytes",
        "_snapshots",
        "_text_nbytes",
        "ends",
        "ids",
        "last_use",
        "n",
        "session",
        "starts",
        "tokenizer_sha256",
    )

    def __init__(self, session: str, tokenizer_sha256: str):
        self.session = session
        self.tokenizer_sha256 = tokenizer_sha256
        self._chunks: list[str] = []
        self._length = 0
        self.ids = np.empty(_MIN_CAPACITY, dtype=ID_DTYPE)
        self.starts = np.empty(_MIN_CAPACITY, dtype=SPAN_DTYPE)
        self.ends = np.empty(_MIN_CAPACITY, dtype=SPAN_DTYPE)
        self._record_nbytes = self.ids.nbytes + self.starts.nbytes + self.ends.nbytes
        self.n = 0
        self.last_use = time.monotonic()
        self._guard = threading.Lock()  # orders record writes against snapshot reads
        self._snapshots: list[weakref.ref[Snapshot]] = []
        self._text_nbytes = 0  # sys.getsizeof of the chunks, kept current (O(1) nbytes)

    # --- text ---------------------------------------------------------------------------
    @property
    def text_length(self) -> int:
        return self._length

    def text(self) -> str:
        """The whole text (O(N) once; for fallbacks and checks, never on the repair path)."""
        if len(self._chunks) > 1:
            self._set_chunks(["".join(self._chunks)])
        return self._chunks[0] if self._chunks else ""

    def text_parts(self) -> tuple[str, ...]:
        """The text as its immutable chunks: an O(chunks) snapshot, joined off the request path."""
        return tuple(self._chunks)

    def tail(self, n: int) -> str:
        """The last ``n`` characters, touching only the chunks that hold them."""
        if n <= 0:
            return ""
        if self._chunks and len(self._chunks[-1]) >= n:  # the common case: one slice
            return self._chunks[-1][-n:]
        parts, need = [], n
        for chunk in reversed(self._chunks):
            if need <= 0:
                break
            parts.append(chunk[-need:] if len(chunk) > need else chunk)
            need -= len(chunk)
        return "".join(reversed(parts))

    def is_prefix_of(self, text: str) -> bool:
        """Whether the stored text is a prefix of ``text`` (C-speed compares, no copies)."""
        if len(text) < self._length:
            return False
        pos = 0
        for chunk in self._chunks:
            if not text.startswith(chunk, pos):
                return False
            pos += len(chunk)
        return True

    # --- records ------------------------------------------------------------------------
    def records(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Views of the live records (valid until the next commit)."""
        return self.ids[: self.n], self.starts[: self.n], self.ends[: self.n]

    def snapshot(self) -> Snapshot:
        """The current IDs as a snapshot (O(1)); it stays exact whatever happens next."""
        snap = Snapshot(self.ids, self.n, self._guard)
        if len(self._snapshots) > 8:
            self._snapshots = [r for r in self._snapshots if r() is not None]
        self._snapshots.append(weakref.ref(snap))
        return snap

    def readers(self) -> bool:
        """Does any result snapshot still read the record arrays?  (Every append asks, and
        usually finds the one dead reference its previous result left: a plain loop, no
        comprehension's frame.)"""
        refs = self._snapshots
        if not refs:
            return False
        for ref in refs:
            if ref() is not None:
                self._snapshots = [r for r in refs if r() is not None]
                return True
        self._snapshots = []
        return False

    def _set_chunks(self, chunks: list[str]) -> None:
        self._chunks = chunks
        self._text_nbytes = sum(sys.getsizeof(c) for c in chunks)

    def _before_write(self, at: int) -> None:
        """Records from ``at`` on are about to change: snapshots still reading them save them."""
        if not self._snapshots:
            return
        live = []
        for ref in self._snapshots:
            snap = ref()
            if snap is not None and snap._buf is self.ids:
                snap.detach(at)
                live.append(ref)
        self._snapshots = live

    def reserve(self, need: int) -> None:
        """Capacity for ``need`` records (amortized doubling; allocates before anything changes).

        Arrays in maps of their own (``record_array``) are remapped in place when nothing
        but this state holds them; otherwise (and for numpy buffers) the records are copied
        into new arrays, and snapshots keep the old ones, which nothing writes again.
        """
        cap = len(self.ids)
        if need <= cap:
            return
        new_cap = max(need, cap * 2, _MIN_CAPACITY)
        maps = (_mapped(self.ids), _mapped(self.starts), _mapped(self.ends))
        if None in maps:
            grown = [self._copied(a, new_cap) for a in (self.ids, self.starts, self.ends)]
        else:
            grown = self._remapped(maps, cap, new_cap)
        self.ids, self.starts, self.ends = grown
        self._record_nbytes = sum(a.nbytes for a in grown)
        self._snapshots = []

    def _copied(self, old: np.ndarray, new_cap: int) -> np.ndarray:
        arr = record_array(new_cap, old.dtype)
        arr[: self.n] = old[: self.n]
        return arr

    def _remapped(self, maps: tuple, cap: int, new_cap: int) -> list[np.ndarray]:
        """The three mapped arrays grown to ``new_cap``: each map resized where this state
        held the only view of it (CPython refuses to resize a map while any other view of
        its buffer lives -- a snapshot's, a caller's -- so no reader ever sees memory move),
        copied where not.  On any failure the state keeps arrays of its old capacity."""
        dtypes = (self.ids.dtype, self.starts.dtype, self.ends.dtype)
        self.ids = self.starts = self.ends = None  # this state's own views, released
        grown = []
        try:
            for m, dt in zip(maps, dtypes, strict=True):
                try:
                    m.resize(new_cap * dt.itemsize)
                    grown.append(np.frombuffer(m, dtype=dt))
                except (BufferError, OSError):  # another view lives, or the kernel refused
                    grown.append(self._copied(np.frombuffer(m, dtype=dt), new_cap))
        except BaseException:
            # the old records are intact in every map, resized or not
            self.ids, self.starts, self.ends = (np.frombuffer(m, dtype=dt, count=cap)
                                                for m, dt in zip(maps, dtypes, strict=True))  # fmt: skip
            raise
        return grown

    @property
    def used_nbytes(self) -> int:
        """Bytes the live records and text occupy (without the arrays' spare capacity)."""
        per_record = self.ids.itemsize + self.starts.itemsize + self.ends.itemsize
        return self.n * per_record + self._text_nbytes

    @property
    def nbytes(self) -> int:
        """Resident bytes: record arrays at capacity plus the text chunks."""
        return self._record_nbytes + self._text_nbytes  # kept by ``reserve``: O(1), no numpy

    # --- commits (the only mutations; validated inputs, no partial updates) -------------
    def appended_text(self, appended: str) -> tuple[list[str], int]:
        """The chunk list after appending and its byte size (nothing assigned yet)."""
        if not appended:
            return self._chunks, self._text_nbytes
        chunks = [*self._chunks, appended]
        size = self._text_nbytes + sys.getsizeof(appended)
        # Chunks merge by size level (``_chunk_level``: powers of 4 characters), as a
        # counter in base 4: four trailing chunks of one level become one chunk of the
        # next, and a chunk is never left before a longer-level one (it joins it).  So
        # each character is copied about once per level it climbs (two or three times
        # for the workload's ~1.1K-character appends), three appends in four copy
        # nothing, and at most 3 chunks per level stay below TEXT_CHUNK_FROZEN
        # (``_MAX_OPEN_CHUNKS``).  The merge-two-while-the-last-is-half-the-previous rule
        # before it copied each character ~7 times and merged on most appends (~10% of
        # the mean append at 48K: results/runs/append-path/chunk-levels-2026-11-29.md).
        # A chunk of TEXT_CHUNK_FROZEN (4 ** 8) characters or more is never merged again,
        # so no append copies more than a few of them (without the bound, one append in a
        # while copied the whole context: 2.8M characters, ~1 ms, at 1M + 2,000 appends);
        # the cost is N / TEXT_CHUNK_FROZEN more chunks.
        while len(chunks) > 1:
            level = _chunk_level(len(chunks[-1]))
            prev = len(chunks[-2])
            if prev < TEXT_CHUNK_FROZEN and _chunk_level(prev) < level:
                k = 2
            elif (level < _FROZEN_LEVEL and len(chunks) >= 4 and _chunk_level(prev) == level
                  and _chunk_level(len(chunks[-3])) == level
                  and _chunk_level(len(chunks[-4])) == level):  # fmt: skip
                k = 4
            else:
                break
            merged = "".join(chunks[-k:])
            size += sys.getsizeof(merged) - sum(sys.getsizeof(c) for c in chunks[-k:])
            chunks[-k:] = [merged]
        return chunks, size

    def next_text(self, *, appended: str | None = None, text: str | None = None):
        """(chunks, byte size) of the text after a request: ``text`` kept as is, or + ``appended``."""
        if text is not None:
            return ([text] if text else []), sys.getsizeof(text) if text else 0
        return self.appended_text(appended or "")

    def publish(self, n: int, shift: int, text_state) -> None:
        """Make a splice that the compiled call already wrote visible: count and text."""
        self.n = n
        self._chunks, self._text_nbytes = text_state
        self._length += shift
        self.last_use = time.monotonic()

    def commit_splice(self, plan, shift: int, *, appended=None, text=None,
                      text_state=None) -> None:  # fmt: skip
        """Apply a compiled splice plan (``engine.splice.Planned``) and the new text.

        ``appended``: the text grew by this delta (``append``); ``text``: the whole new
        text (a full-text request: its string is kept as is, no copy); ``text_state``:
        ``next_text``'s answer for them, when the caller already has it.
        """
        new_len = self._length + shift
        if new_len >= 2**31 - 1:
            raise OverflowError("session text exceeds 2**31 characters")
        if text_state is None:
            text_state = self.next_text(appended=appended, text=text)
        with self._guard:
            self.reserve(max(plan.new_n, self.n))
            self._before_write(plan.keep)
            n = plan.apply(self.ids, self.starts, self.ends, self.n, shift)
        self.publish(n, shift, text_state)

    def keep_text(self, text: str) -> None:
        """Hold ``text`` (equal to the stored text) as the only chunk: later compares are memcmp."""
        self._set_chunks([text] if text else [])

    def commit_replace_tail(
        self, keep: int, ids: np.ndarray, starts: np.ndarray, ends: np.ndarray, appended: str
    ) -> None:
        """Keep records [0, keep), append new ones, and append ``appended`` to the text."""
        new_n = keep + len(ids)
        if self._length + len(appended) >= 2**31 - 1:
            raise OverflowError("session text exceeds 2**31 characters")
        chunks, size = self.appended_text(appended)
        with self._guard:
            self.reserve(new_n)
            self._before_write(keep)
            self.ids[keep:new_n] = ids
            self.starts[keep:new_n] = starts
            self.ends[keep:new_n] = ends
            self.n = new_n
        self._chunks, self._text_nbytes = chunks, size
        self._length += len(appended)
        self.last_use = time.monotonic()

    def commit_edit(
        self,
        keep_left: int,
        mid_ids: np.ndarray,
        mid_starts: np.ndarray,
        mid_ends: np.ndarray,
        keep_right_from: int,
        shift: int,
        new_text: str,
    ) -> None:
        """Records [0, keep_left) + middle + old records [keep_right_from, n) shifted by ``shift``."""
        if len(new_text) >= 2**31 - 1:
            raise OverflowError("session text exceeds 2**31 characters")
        right_ids = self.ids[keep_right_from : self.n].copy()
        right_starts = self.starts[keep_right_from : self.n] + shift
        right_ends = self.ends[keep_right_from : self.n] + shift
        mid_end = keep_left + len(mid_ids)
        new_n = mid_end + len(right_ids)
        with self._guard:
            self.reserve(new_n)
            self._before_write(keep_left)
            self.ids[keep_left:mid_end] = mid_ids
            self.starts[keep_left:mid_end] = mid_starts
            self.ends[keep_left:mid_end] = mid_ends
            self.ids[mid_end:new_n] = right_ids
            self.starts[mid_end:new_n] = right_starts
            self.ends[mid_end:new_n] = right_ends
            self.n = new_n
        self._set_chunks([new_text] if new_text else [])
        self._length = len(new_text)
        self.last_use = time.monotonic()

    def commit_full(self, ids: np.ndarray, starts: np.ndarray, ends: np.ndarray, text: str) -> None:
        """A fresh state's first records (called on a new ``SessionState`` only), with room
        for the appends that follow (``seed_capacity``)."""
        self._chunks, self._length, self.n, self._text_nbytes = [], 0, 0, 0
        self.reserve(seed_capacity(len(ids)))
        self.commit_replace_tail(0, ids, starts, ends, text)


@dataclass
class StoreStats:
    sessions: int
    bytes: int
    tokens: int
    bytes_per_token: float
    expired: int
    evicted: int
    closed: int
    max_bytes: int | None = None


class SessionStore:
    """Live sessions, least recently used first; thread-safe.

    ``max_bytes=None`` means no byte cap; ``ttl_s=None`` means no expiry.
    """

    def __init__(self, ttl_s: float | None = 3600.0, max_bytes: int | None = DEFAULT_MAX_BYTES):
        if ttl_s is not None and not ttl_s > 0:
            raise ValueError("ttl_s must be positive (or None for no expiry)")
        if max_bytes is not None and max_bytes <= 0:
            raise ValueError("max_bytes must be positive (or None for no cap)")
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes
        self._sessions: OrderedDict[str, SessionState] = OrderedDict()
        self._bytes: dict[str, int] = {}
        self._touched: dict[str, float] = {}  # the store's clock at last get/put
        self._total = 0
        self._lock = threading.Lock()
        self.expired = self.evicted = self.closed = 0
        self._clock = time.monotonic
        if ttl_s is not None:
            _Sweeper.register(self)

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session: str) -> bool:
        return self.get(session) is not None

    def _sweep(self, now: float, limit: int | None) -> int:
        """Drop stale sessions from the front (oldest use first); caller holds the lock."""
        if self.ttl_s is None:
            return 0
        n = 0
        touched = self._touched
        while self._sessions and (limit is None or n < limit):
            oldest = next(iter(self._sessions))
            if now - touched[oldest] <= self.ttl_s:
                break
            self._drop(oldest)
            n += 1
        self.expired += n
        return n

    def get(self, session: str) -> SessionState | None:
        """The live state, or None (unknown, expired or evicted)."""
        with self._lock:
            now = self._clock()
            sessions = self._sessions
            # the sweep's first test, here: most requests find nothing stale (no call)
            if (sessions and self.ttl_s is not None
                    and now - self._touched[next(iter(sessions))] > self.ttl_s):  # fmt: skip
                self._sweep(now, _SWEEP_PER_CALL)
            st = sessions.get(session)
            if st is None:
                return None
            if self.ttl_s is not None and now - self._touched[session] > self.ttl_s:
                self._drop(session)
                self.expired += 1
                return None
            self._sessions.move_to_end(session)
            self._touched[session] = now
            return st

    def put(self, state: SessionState) -> None:
        """Insert or refresh a session after a commit; enforces the byte cap."""
        size = state.nbytes
        with self._lock:
            now = self._clock()
            key = state.session
            old = self._bytes.get(key)
            if old is not None:
                self._total -= old
            self._sessions[key] = state
            self._sessions.move_to_end(key)
            self._touched[key] = now
            self._bytes[key] = size
            self._total += size
            self._sweep(now, _SWEEP_PER_CALL)
            if self.max_bytes is not None:
                while self._total > self.max_bytes and len(self._sessions) > 1:
                    victim = next(iter(self._sessions))
                    if victim == key:
                        break
                    self._drop(victim)
                    self.evicted += 1

    def refresh(self, state: SessionState) -> None:
        """A live session changed in place (a repair): settle its byte count, mark it used.

        ``get`` has just swept and moved it to the back, so this is ``put`` without the
        re-insert and the second sweep; a session dropped in between (closed or evicted
        by another thread), or one that pushed the total past the cap, goes through ``put``.
        """
        size = state.nbytes
        with self._lock:
            key = state.session
            old = self._bytes.get(key)
            done = old is not None and self._sessions.get(key) is state
            if done:
                self._total += size - old
                self._bytes[key] = size
                self._touched[key] = self._clock()
                done = self.max_bytes is None or self._total <= self.max_bytes
        if not done:
            self.put(state)

    def close(self, session: str) -> bool:
        """Free a session now.  Returns whether it was live."""
        with self._lock:
            if session in self._sessions:
                self._drop(session)
                self.closed += 1
                return True
            return False

    def expire(self) -> int:
        """Drop every session idle longer than the TTL; returns how many (O(expired))."""
        with self._lock:
            return self._sweep(self._clock(), None)

    def _drop(self, session: str) -> None:
        self._sessions.pop(session, None)
        self._touched.pop(session, None)
        self._total -= self._bytes.pop(session, 0)

    def stats(self) -> StoreStats:
        with self._lock:
            tokens = sum(st.n for st in self._sessions.values())
            return StoreStats(
                sessions=len(self._sessions),
                bytes=self._total,
                tokens=tokens,
                bytes_per_token=self._total / tokens if tokens else 0.0,
                expired=self.expired,
                evicted=self.evicted,
                closed=self.closed,
                max_bytes=self.max_bytes,
            )


class _Sweeper:
    """One daemon thread for the process: expires every live store now and then.

    Stores are held weakly, so a store nobody uses is freed as usual.
    """

    _stores: ClassVar[weakref.WeakSet] = weakref.WeakSet()
    _next: ClassVar[weakref.WeakKeyDictionary] = weakref.WeakKeyDictionary()
    _lock: ClassVar[threading.Lock] = threading.Lock()
    _thread: ClassVar[threading.Thread | None] = None

    @classmethod
    def register(cls, store: SessionStore) -> None:
        with cls._lock:
            cls._stores.add(store)
            cls._next[store] = time.monotonic() + cls.interval(store)
            if cls._thread is None or not cls._thread.is_alive():
                cls._thread = threading.Thread(target=cls._run, name="toktier-ttl", daemon=True)
                cls._thread.start()

    @staticmethod
    def interval(store: SessionStore) -> float:
        return min(60.0, max(1.0, (store.ttl_s or 60.0) / 4))

    @classmethod
    def _run(cls) -> None:
        while True:
            time.sleep(1.0)
            now = time.monotonic()
            with cls._lock:
                due = [s for s in list(cls._stores) if cls._next.get(s, 0.0) <= now]
                for s in due:
                    cls._next[s] = now + cls.interval(s)
            for s in due:
                s.expire()
