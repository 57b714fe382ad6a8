"""Tier: the service facade -- session store + router + repair + engines + shadow verifier.

Thread-safe per session: one session's requests are serialized by a striped lock.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

import numpy as np

from . import repair
from .engine import ReferenceEngine, default_engine
from .errors import SessionTokenizerMismatchError, UnknownSessionError
from .registry import Tokenizer, load
from .router import Route, Router
from .store import SessionState, SessionStore
from .textcheck import check_text
from .verifier import DEFAULT_RATE, ShadowVerifier


@dataclass(frozen=True)
class Result:
    """One request's answer.  ``ids`` always equals the reference IDs of the full text."""

    ids: np.ndarray  # uint32, read-only (the shadow verifier may still be checking it)
    path: str  # the route: "repair", "cpu" (numba engine), "gpu" or "reference"
    reason: str  # why the router chose it
    session: str | None = None
    widenings: int = 0
    window_chars: int = 0
    boundaries: tuple[int | None, int | None] = (None, None)  # certified splice points (characters)


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix, by C-speed block compares."""
    n = min(len(a), len(b))
    lo, step = 0, 1 << 15
    while lo < n:
        hi = min(n, lo + step)
        if a[lo:hi] != b[lo:hi]:
            while hi - lo > 1:  # invariant: a[:lo] == b[:lo], mismatch in [lo, hi)
                mid = (lo + hi) // 2
                if a[lo:mid] == b[lo:mid]:
                    lo = mid
                else:
                    hi = mid
            return lo
        lo = hi
    return n


def common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    la, lb = len(a), len(b)
    n = min(limit, la, lb)
    lo, step = 0, 1 << 15
    while lo < n:
        hi = min(n, lo + step)
        if a[la - hi : la - lo] != b[lb - hi : lb - lo]:
            while hi - lo > 1:  # invariant: last lo chars equal, mismatch among the last (lo, hi]
                mid = (lo + hi) // 2
                if a[la - mid : la - lo] == b[lb - mid : lb - lo]:
                    lo = mid
                else:
                    hi = mid
            return lo
        lo = hi
    return n


_LOCK_STRIPES = 64
_CALIBRATION_TEXT = (
    "Coding agents resend a growing transcript on every call.\n"
    "    def f(x):\n        return [x ** 2 for x in range(10)]  # squares\n"
    "$ pytest -q tests/test_tier.py::test_append -x\r\n12 passed in 0.31s\n\n"
)


def _auto_gpu(tokenizer):
    """The GPU engine when a real GPU and CuPy are present (never the simulator), else None."""
    try:
        from .engine.gpu import SIMULATOR, GpuEngine
    except ImportError:
        return None
    try:
        if SIMULATOR or not GpuEngine.available():
            return None  # the simulator is for certification, never for serving
        return GpuEngine(tokenizer)
    except Exception:  # unsupported family, driver trouble: the CPU serves
        return None


class Tier:
    """Exact, stateful tokenization for one tokenizer.

    ``encode(text, session=...)`` takes the full request text as a front end receives
    it; ``append(session, delta)`` takes only the new text.  Both return the reference
    IDs of the session's full text, repairing stored state where it can.

    ``gpu``: a GPU engine, ``"auto"`` (a real GPU when present) or None.
    ``verify_rate``: the shadow verifier's sampling rate (0 switches it off);
    ``quarantine_sessions``: a verified mismatch also drops the session's state, so
    its next request is encoded in full.
    """

    def __init__(
        self,
        tokenizer: Tokenizer | str,
        *,
        engine=None,
        store: SessionStore | None = None,
        window: int = repair.DEFAULT_WINDOW,
        max_widenings: int = repair.DEFAULT_MAX_WIDENINGS,
        ttl_s: float | None = 3600.0,
        max_bytes: int | None = None,
        copy_ids: bool = True,
        gpu="auto",
        gpu_min_chars: int | None = None,
        delta_aware: bool = True,
        verify_rate: float = DEFAULT_RATE,
        verifier: ShadowVerifier | None = None,
        quarantine_dir=None,
        quarantine_sessions: bool = False,
    ):
        self.tokenizer = tokenizer if isinstance(tokenizer, Tokenizer) else load(tokenizer)
        if window < 1 or max_widenings < 0:
            raise ValueError("window must be >= 1 and max_widenings >= 0")
        # The window engine (repair) and the full path: the certified numba engine where the
        # family has one, else the reference.  Compiling happens here, never in a request.
        self.engine = engine if engine is not None else default_engine(self.tokenizer)
        self.engine_warmup_s = self.engine.warmup() if hasattr(self.engine, "warmup") else 0.0
        reference = (
            self.engine
            if isinstance(self.engine, ReferenceEngine)
            else ReferenceEngine(self.tokenizer)
        )
        self._supported = self.engine is not reference
        gpu_engine = _auto_gpu(self.tokenizer) if gpu == "auto" else gpu
        if gpu_engine is not None and hasattr(gpu_engine, "warmup"):
            self.engine_warmup_s += gpu_engine.warmup()
        router_kw = {} if gpu_min_chars is None else {"gpu_min_chars": gpu_min_chars}
        self.router = Router(
            self.engine if self._supported else None,
            gpu=gpu_engine if self._supported else None,
            reference=reference,
            delta_aware=delta_aware,
            **router_kw,
        )
        if delta_aware and self._supported:
            self.router.calibrate(_CALIBRATION_TEXT)
        if verifier is None and verify_rate > 0:
            verifier = ShadowVerifier(
                self.tokenizer,
                rate=verify_rate,
                quarantine_dir=quarantine_dir,
                on_mismatch=self._on_mismatch if quarantine_sessions else None,
            )
        self.verifier = verifier
        self._quarantined: set[str] = set()
        self.store = store if store is not None else SessionStore(ttl_s=ttl_s, max_bytes=max_bytes)
        self.window = window
        self.max_widenings = max_widenings
        self.copy_ids = copy_ids
        self._rules = repair.rules_for(self.tokenizer)
        # Striped locks: one session always maps to the same lock (its requests are
        # serialized), memory stays bounded however many session ids come and go.
        self._stripes = tuple(threading.Lock() for _ in range(_LOCK_STRIPES))
        self._counts: Counter[str] = Counter()
        self._counts_guard = threading.Lock()

    # --- public API --------------------------------------------------------------------
    def encode(self, text: str, session: str | None = None) -> Result:
        # Validation is O(new text): a stored prefix was validated when it arrived.
        if not isinstance(text, str):
            check_text(text)
        if session is None:
            check_text(text)
            route = self.router.miss(len(text), supported=self._supported)
            ids, _, _ = self._full(route, text)
            ids.flags.writeable = False
            self._count("requests", "full", "stateless")
            self._offer(ids, lambda: text, route.name, None, owned=True)
            return Result(ids, route.name, f"no session id: {route.reason}")
        self._check_session_id(session)
        with self._lock(session):
            state = self.store.get(session)
            if state is not None and self._release_quarantine(session):
                check_text(text)
                return self._seed(session, text, "session quarantined by the shadow verifier")
            if state is None:
                check_text(text)
                return self._seed(
                    session, text, "session miss: no live state (new, closed, expired or evicted)"
                )
            self._check_binding(state)
            if self._rules is None:
                check_text(text)
                return self._seed(
                    session,
                    text,
                    f"family {self.tokenizer.family!r} is never repaired: full encode",
                )
            old_len = state.text_length
            if state.is_prefix_of(text):
                if len(text) == old_len:
                    self._count("requests", "hits", "unchanged")
                    return self._result(state, "repair", "unchanged text", session)
                delta = check_text(text[old_len:])
                return self._append(state, session, delta, lambda: text)
            check_text(text)
            old = state.text()
            prefix = common_prefix(old, text)
            suffix = common_suffix(old, text, min(len(old), len(text)) - prefix)
            return self._repair(
                state, session, old_len, len(text), prefix, suffix, _PlainText(text), None
            )

    def append(self, session: str, delta: str) -> Result:
        check_text(delta, "delta")
        self._check_session_id(session)
        with self._lock(session):
            state = self.store.get(session)
            if state is None:
                raise UnknownSessionError(session)
            self._check_binding(state)
            if self._release_quarantine(session):
                return self._seed(
                    session, state.text() + delta, "session quarantined by the shadow verifier"
                )
            if not delta:
                self._count("requests", "hits", "unchanged")
                return self._result(state, "repair", "empty append", session)
            if self._rules is None:
                return self._seed(
                    session,
                    state.text() + delta,
                    f"family {self.tokenizer.family!r} is never repaired: full encode",
                )
            return self._append(state, session, delta, lambda: state.text() + delta)

    def close(self, session: str) -> bool:
        """Free a session's state now; returns whether it was live."""
        self._check_session_id(session)
        with self._lock(session):
            return self.store.close(session)

    COUNTERS = (
        "requests", "hits", "misses", "stateless", "appends", "edits", "unchanged",
        "first_window", "widened", "widenings", "fallbacks", "full", "delta_full",
        "quarantined", "route_gpu", "route_cpu", "route_reference", "spills",
    )  # fmt: skip

    def stats(self) -> dict:
        """Request counters (see COUNTERS) plus the store's sessions, bytes and evictions."""
        with self._counts_guard:
            out = {k: self._counts.get(k, 0) for k in self.COUNTERS}
        st = self.store.stats()
        out.update(
            sessions=st.sessions,
            bytes=st.bytes,
            tokens=st.tokens,
            bytes_per_token=st.bytes_per_token,
            expired=st.expired,
            evicted=st.evicted,
            closed=st.closed,
        )
        if self.verifier is not None:
            out["verifier"] = self.verifier.stats()
        return out

    def shutdown(self, timeout: float = 60.0) -> None:
        """Let the shadow verifier finish its queue and stop (the tier still serves)."""
        if self.verifier is not None:
            self.verifier.close(timeout)

    def session_records(self, session: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies of a live session's (ids, starts, ends) -- for inspection and campaigns."""
        state = self.store.get(session)
        if state is None:
            raise UnknownSessionError(session)
        return tuple(a.copy() for a in state.records())

    # --- internals ---------------------------------------------------------------------
    def _append(self, state, session, delta, full_text) -> Result:
        """An append to a live session: repair, or a full encode when the router predicts it faster."""
        old_len = state.text_length
        route = self.router.hit(old_len, len(delta))
        if route.name != "repair":
            self._count("requests", "hits", "appends", "delta_full")
            return self._seed(session, full_text(), route.reason, count=False, route=route)
        return self._repair(
            state,
            session,
            old_len,
            old_len + len(delta),
            old_len,
            0,
            _AppendText(state, delta),
            delta,
        )

    def _full(self, route: Route, text: str):
        engine = self.router.engine(route)
        self._count(f"route_{route.name}")
        if route.reason.startswith("GPU busy"):
            self._count("spills")
        return getattr(engine, "encode_full", engine.encode)(text)

    def _offer(self, ids, text, path, session, *, owned=False) -> None:
        if self.verifier is not None:
            self.verifier.offer(ids, text, path, session, owned=owned)

    def _on_mismatch(self, sample) -> None:
        # Runs in the verifier thread: mark only; the session's own request drops the state.
        if sample.session is not None:
            with self._counts_guard:
                self._quarantined.add(sample.session)

    def _release_quarantine(self, session: str) -> bool:
        """Whether ``session`` was quarantined (it is dropped from the store now if so)."""
        if not self._quarantined:
            return False
        with self._counts_guard:
            if session not in self._quarantined:
                return False
            self._quarantined.discard(session)
            self._counts["quarantined"] += 1
        self.store.close(session)
        return True

    def _repair(self, state, session, old_len, new_len, prefix, suffix, source, delta) -> Result:
        attempt = repair.plan(
            self._rules,
            self.engine,
            state.records(),
            old_len,
            new_len,
            prefix,
            suffix,
            source.window,
            window=self.window,
            max_widenings=self.max_widenings,
        )
        kind = "appends" if delta is not None else "edits"
        if attempt.splice is None:
            self._count("requests", "hits", kind, "fallbacks")
            self._count_n("widenings", attempt.widenings)
            return self._seed(
                session,
                source.full(),
                f"repair fallback: {attempt.reason}",
                count=False,
            )
        sp = attempt.splice
        f_ids, f_s, f_e = attempt.fresh
        mid = slice(sp.fresh_from, sp.fresh_to)
        if delta is not None:
            state.commit_replace_tail(sp.keep_left, f_ids[mid], f_s[mid], f_e[mid], delta)
        else:
            keep_right = sp.keep_right_from if sp.keep_right_from is not None else state.n
            state.commit_edit(
                sp.keep_left,
                f_ids[mid],
                f_s[mid],
                f_e[mid],
                keep_right,
                new_len - old_len,
                source.full(),
            )
        self.store.put(state)
        self._count(
            "requests", "hits", kind, "first_window" if attempt.widenings == 0 else "widened"
        )
        self._count_n("widenings", attempt.widenings)
        return self._result(
            state,
            "repair",
            attempt.reason,
            session,
            attempt.widenings,
            attempt.window_chars,
            (sp.boundary_left, sp.boundary_right),
        )

    def _seed(self, session, text, reason, *, count=True, route: Route | None = None) -> Result:
        if route is None:
            route = self.router.miss(len(text), supported=self._supported)
        ids, starts, ends = self._full(route, text)
        new = SessionState(session, self.tokenizer.sha256)
        new.commit_full(ids, starts, ends, text)
        self.store.put(new)
        if count:
            self._count("requests", "misses")
        self._count("full")
        ids.flags.writeable = False  # the state holds its own copy; this one is the caller's
        self._offer(ids, lambda: text, route.name, session, owned=True)
        return Result(
            ids,
            route.name,
            reason if reason == route.reason else f"{reason}; {route.reason}",
            session,
            0,
            len(text),
        )

    def _result(
        self, state, path, reason, session, widenings=0, window_chars=0, boundaries=(None, None)
    ) -> Result:
        ids = state.ids[: state.n]
        ids = ids.copy() if self.copy_ids else ids.view()
        ids.flags.writeable = False
        # a view of the live state is copied if sampled; a copy is the caller's, read-only
        self._offer(ids, state.text_parts, path, session, owned=self.copy_ids)
        return Result(ids, path, reason, session, widenings, window_chars, boundaries)

    def _check_binding(self, state: SessionState) -> None:
        if state.tokenizer_sha256 != self.tokenizer.sha256:
            raise SessionTokenizerMismatchError(
                f"session {state.session!r} holds tokens of tokenizer {state.tokenizer_sha256[:12]}…, "
                f"not of {self.tokenizer.name} ({self.tokenizer.sha256[:12]}…); it is never repaired "
                "with another tokenizer. Close it or use another session id."
            )

    @staticmethod
    def _check_session_id(session) -> None:
        if not isinstance(session, str) or not session:
            raise TypeError(f"session id must be a non-empty str, got {session!r}")

    def _lock(self, session: str) -> threading.Lock:
        return self._stripes[hash(session) % len(self._stripes)]

    def _count(self, *keys: str) -> None:
        with self._counts_guard:
            for k in keys:
                self._counts[k] += 1

    def _count_n(self, key: str, n: int) -> None:
        if n:
            with self._counts_guard:
                self._counts[key] += n


class _AppendText:
    """The new text as stored tail + delta, without materializing the whole context."""

    def __init__(self, state: SessionState, delta: str):
        self.state, self.delta, self.old_len = state, delta, state.text_length

    def window(self, ws: int, we: int) -> str:
        # we is always the end of the new text for appends
        return self.state.tail(self.old_len - ws) + self.delta[: we - self.old_len]

    def full(self) -> str:
        return self.state.text() + self.delta


class _PlainText:
    def __init__(self, text: str):
        self.text = text

    def window(self, ws: int, we: int) -> str:
        return self.text[ws:we]

    def full(self) -> str:
        return self.text
