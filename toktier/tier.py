"""Tier: the service facade -- session store + router + repair + engines + shadow verifier.

Thread-safe per session: one session's requests are serialized by a striped lock.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import numpy as np

from . import diff, repair
from .engine import ReferenceEngine, default_engine
from .engine.protocol import Engine, OffloadEngine
from .engine.slots import (
    OK,
    R_APPLIED,
    R_B_LEFT,
    R_CUT,
    R_KEEP,
    R_NEW_N,
    REASON_FIRST_WINDOW,
    REASON_WHOLE_TEXT,
)
from .errors import SessionTokenizerMismatchError, UnknownSessionError
from .registry import Tokenizer, load
from .router import Route, Router
from .store import DEFAULT_MAX_BYTES, SessionState, SessionStore
from .textcheck import check_text, utf8_array, utf8_bytes
from .verifier import DEFAULT_CPU_SHARE, DEFAULT_RATE, ShadowVerifier, check_cpu_share


class Result:
    """One request's answer.  ``ids`` always equals the reference IDs of the full text.

    A consumer that holds the session's previous IDs (an engine's prefix cache, a
    client) reads the change alone: the first ``keep`` IDs equal the previous
    result's, and ``new_ids`` are the rest (O(Δ) for an append).  ``ids`` is the
    whole sequence, read-only and never changed by later requests; it is assembled
    on first access (O(N), paid only by a reader who asks), never on the request path.
    """

    __slots__ = (
        "_ids", "_snapshot", "boundaries", "keep", "new_ids", "path", "reason", "session",
        "widenings", "window_chars",
    )  # fmt: skip

    def __init__(
        self, ids, path, reason, session=None, widenings=0, window_chars=0,
        boundaries=(None, None), *, keep=0, new_ids=None, snapshot=None,
    ):  # fmt: skip
        self._ids = ids  # an owned read-only array, or None while ``_snapshot`` holds them
        self._snapshot = snapshot
        self.path = path  # the route: "repair", "cpu" (numba engine), "gpu" or "reference"
        self.reason = reason  # why the router chose it
        self.session = session
        self.widenings = widenings
        self.window_chars = window_chars
        self.boundaries = boundaries  # certified splice points (characters)
        self.keep = keep  # leading IDs equal to this session's previous result
        self.new_ids = new_ids if new_ids is not None else ids[keep:]  # uint32, read-only

    @property
    def ids(self) -> np.ndarray:
        """All IDs (uint32, read-only), exactly as they were when this result was returned."""
        if self._ids is None:
            self._ids = self._snapshot.materialize()
            self._snapshot = None
        return self._ids

    def __len__(self) -> int:
        """Number of IDs (without assembling them)."""
        return self.keep + len(self.new_ids)

    def __bool__(self) -> bool:  # a result with no IDs is still a result
        return True

    def __repr__(self) -> str:
        return (
            f"Result(path={self.path!r}, reason={self.reason!r}, session={self.session!r}, "
            f"tokens={len(self)}, keep={self.keep}, new={len(self.new_ids)})"
        )


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix, read in place at memory speed."""
    return diff.common_prefix((a,), b)


def common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    return diff.common_suffix((a,), b, limit)


_LOCK_STRIPES = 64
# the counters a first-window append raises (``Tier._count``'s key for it)
_FIRST_WINDOW_APPEND = ("requests", "hits", "appends", "first_window")
_CALIBRATION_TEXT = (
    "Coding agents resend a growing transcript on every call.\n"
    "    def f(x):\n        return [x ** 2 for x in range(10)]  # squares\n"
    "$ pytest -q tests/test_tier.py::test_append -x\r\n12 passed in 0.31s\n\n"
)


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _check_options(window, max_widenings, ttl_s, max_bytes, repair_impl, gpu, gpu_min_chars,
                   delta_aware, verify_rate, quarantine_sessions, verify_cpu_share) -> None:  # fmt: skip
    """Reject bad constructor arguments here, with their names, not in a later request."""
    if window is not None and (not _is_int(window) or window < 1):
        raise (ValueError if _is_int(window) else TypeError)(
            f"window must be None or an int >= 1 (characters of old text), got {window!r}"
        )
    if not _is_int(max_widenings) or max_widenings < 0:
        raise (ValueError if _is_int(max_widenings) else TypeError)(
            f"max_widenings must be an int >= 0, got {max_widenings!r}"
        )
    if ttl_s is not None:
        if isinstance(ttl_s, bool) or not isinstance(ttl_s, (int, float, np.number)):
            raise TypeError(f"ttl_s must be a number of seconds or None, got {ttl_s!r}")
        if not np.isfinite(ttl_s) or ttl_s <= 0:
            raise ValueError(f"ttl_s must be finite and > 0 (or None: never expire), got {ttl_s!r}")
    if max_bytes is not None and (not _is_int(max_bytes) or max_bytes < 1):
        raise (ValueError if _is_int(max_bytes) else TypeError)(
            f"max_bytes must be an int >= 1 or None, got {max_bytes!r}"
        )
    if repair_impl not in ("compiled", "python"):
        raise ValueError(f"repair_impl must be 'compiled' or 'python', got {repair_impl!r}")
    if not (
        gpu is None or isinstance(gpu, OffloadEngine) or (isinstance(gpu, str) and gpu == "auto")
    ):
        raise TypeError(
            f"gpu must be 'auto', None (no GPU) or a GPU engine such as GpuEngine(tokenizer) "
            f"(engine.protocol.OffloadEngine: name, encode, encode_full, encode_ids, warmup, busy), got {gpu!r}"
        )
    if gpu_min_chars is not None and (not _is_int(gpu_min_chars) or gpu_min_chars < 0):
        raise (ValueError if _is_int(gpu_min_chars) else TypeError)(
            f"gpu_min_chars must be an int >= 0 or None, got {gpu_min_chars!r}"
        )
    for name, flag in (("delta_aware", delta_aware), ("quarantine_sessions", quarantine_sessions)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be a bool, got {flag!r}")
    if isinstance(verify_rate, bool) or not isinstance(verify_rate, (int, float, np.number)):
        raise TypeError(f"verify_rate must be a number in [0, 1], got {verify_rate!r}")
    if not 0.0 <= verify_rate <= 1.0:  # NaN fails this too
        raise ValueError(f"verify_rate must be in [0, 1] (0: no verifier), got {verify_rate!r}")
    check_cpu_share(verify_cpu_share, "verify_cpu_share")


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
    ``repair_impl``: ``"compiled"`` (``engine.splice``, the default) or ``"python"``
    (``repair.plan``, the readable reference implementation of the same protocol).
    ``verify_rate``: the shadow verifier's sampling rate (0 switches it off);
    ``verify_cpu_share``: the most of one core the verifier's checks take, averaged (it
    pauses between checks to keep it; 1: no pauses);
    ``quarantine_sessions``: a verified mismatch also drops the session's state, so
    its next request is encoded in full.
    ``ttl_s``: a session idle this long is dropped (no caller needed; None: never);
    ``window``: characters of old text a change may reach back into: the cut is searched
    there, and without one they are encoded with the change (None: the tokenizer's
    ``repair.default_window``, the certificate's minimum plus a little play; 318 for
    llama3); a window that does not certify is widened, at most ``max_widenings`` steps
    (0: never); a step doubles it, or with cut splices jumps to the first doubling that
    holds a cut (``repair.widen_left``, ``repair.widen_right``).
    ``cut_splice``: take the cut splice where the old text offers one (``repair.find_cut``,
    and an edit's right cut, ``repair.find_right_cut``; the default); False runs the
    paper's window-and-run protocol alone (for comparisons).
    ``max_bytes``: the memory budget of session state, 2 GiB by default (least recently
    used sessions are evicted beyond it; ``stats()`` counts them; None: no budget).
    Bad arguments raise ``TypeError`` / ``ValueError`` here, not in a later request.
    """

    def __init__(
        self,
        tokenizer: Tokenizer | str,
        *,
        engine=None,
        store: SessionStore | None = None,
        window: int | None = None,
        max_widenings: int = repair.DEFAULT_MAX_WIDENINGS,
        ttl_s: float | None = 3600.0,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        repair_impl: str = "compiled",
        gpu="auto",
        gpu_min_chars: int | None = None,
        delta_aware: bool = True,
        verify_rate: float = DEFAULT_RATE,
        verify_cpu_share: float = DEFAULT_CPU_SHARE,
        verifier: ShadowVerifier | None = None,
        quarantine_dir=None,
        quarantine_sessions: bool = False,
        cut_splice: bool = True,
    ):
        _check_options(window, max_widenings, ttl_s, max_bytes, repair_impl, gpu, gpu_min_chars,
                       delta_aware, verify_rate, quarantine_sessions, verify_cpu_share)  # fmt: skip
        if not isinstance(cut_splice, bool):
            raise TypeError(f"cut_splice must be True or False, got {cut_splice!r}")
        if engine is not None and not isinstance(engine, Engine):
            raise TypeError(
                "engine must be an exact engine (engine.protocol.Engine: name, encode, "
                f"encode_full, encode_ids, warmup), got {engine!r}"
            )
        self.tokenizer = tokenizer if isinstance(tokenizer, Tokenizer) else load(tokenizer)
        # The window engine (repair) and the full path: the certified numba engine where the
        # family has one, else the reference.  Compiling happens here, never in a request.
        self.engine = engine if engine is not None else default_engine(self.tokenizer)
        self.engine_warmup_s = self.engine.warmup()
        reference = (
            self.engine
            if isinstance(self.engine, ReferenceEngine)
            else ReferenceEngine(self.tokenizer)
        )
        self._supported = self.engine is not reference
        gpu_engine = _auto_gpu(self.tokenizer) if gpu == "auto" else gpu
        if gpu_engine is not None:
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
                cpu_share=verify_cpu_share,
                quarantine_dir=quarantine_dir,
                on_mismatch=self._on_mismatch if quarantine_sessions else None,
            )
        self.verifier = verifier
        self._quarantined: set[str] = set()
        self.store = store if store is not None else SessionStore(ttl_s=ttl_s, max_bytes=max_bytes)
        self.window = window if window is not None else repair.default_window(self.tokenizer)
        self.max_widenings = max_widenings
        self._rules = repair.rules_for(self.tokenizer)
        self.repair_impl = repair_impl
        self.cut_splice = cut_splice
        self._planner = None
        if self._rules is not None and repair_impl == "compiled":
            from .engine.splice import Planner

            self._planner = Planner(self.tokenizer, self._rules, self.engine, cut=cut_splice)
            self.engine_warmup_s += self._warm_repair()
        # Striped locks: one session always maps to the same lock (its requests are
        # serialized), memory stays bounded however many session ids come and go.
        self._stripes = tuple(threading.Lock() for _ in range(_LOCK_STRIPES))
        # One count per event (the tuple of counters it raises): a request adds 1 to one
        # key instead of 1 to each of its four counters; ``stats`` sums them up.
        self._counts: Counter[tuple[str, ...]] = Counter()
        self._counts_guard = threading.Lock()
        self._sha256 = self.tokenizer.sha256

    # --- public API --------------------------------------------------------------------
    def encode(self, text: str, session: str | None = None) -> Result:
        # Validation is O(new text): a stored prefix was validated when it arrived.
        if not isinstance(text, str):
            check_text(text)
        if session is None:
            check_text(text)
            route = self.router.miss(len(text), supported=self._supported)
            ids = self._full(route, text, ids_only=True)
            ids.flags.writeable = False
            self._count("requests", "full", "stateless")
            self._offer(ids, lambda: text, route.name, None)
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
                    previous=state,
                )
            old_len = state.text_length
            if state.is_prefix_of(text):
                if len(text) == old_len:
                    state.keep_text(text)
                    self._count("requests", "hits", "unchanged")
                    return self._unchanged(state, "unchanged text", session)
                delta = text[old_len:]
                delta_u8 = None if delta.isascii() else utf8_bytes(delta)
                return self._append(state, session, delta, text, delta_u8)
            parts = state.text_parts()
            prefix = diff.common_prefix(parts, text)
            suffix = diff.common_suffix(parts, text, min(old_len, len(text)) - prefix)
            if not text.isascii():  # only the changed middle can hold what the stored text cannot
                utf8_array(text, "text", prefix, len(text) - suffix)
            return self._repair(state, session, old_len, len(text), prefix, suffix, text, None)

    def append(self, session: str, delta: str) -> Result:
        # A non-ASCII delta's check is its UTF-8 encode: the bytes are kept for the window
        # (which would otherwise encode the delta a second time).
        delta_u8 = None if type(delta) is str and delta.isascii() else utf8_bytes(delta, "delta")
        if type(session) is not str or not session:
            self._check_session_id(session)
        with self._stripes[hash(session) % _LOCK_STRIPES]:
            state = self.store.get(session)
            if state is None:
                raise UnknownSessionError(session)
            if state.tokenizer_sha256 != self._sha256:
                self._check_binding(state)
            if self._quarantined and self._release_quarantine(session):
                return self._seed(
                    session, state.text() + delta, "session quarantined by the shadow verifier"
                )
            if not delta:
                self._count("requests", "hits", "unchanged")
                return self._unchanged(state, "empty append", session)
            if self._rules is None:
                return self._seed(
                    session,
                    state.text() + delta,
                    f"family {self.tokenizer.family!r} is never repaired: full encode",
                    previous=state,
                )
            return self._append(state, session, delta, None, delta_u8)

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
        out = dict.fromkeys(self.COUNTERS, 0)
        with self._counts_guard:
            events = list(self._counts.items())
        for keys, v in events:
            for k in keys:
                if k in out:
                    out[k] += v
        st = self.store.stats()
        out.update(
            sessions=st.sessions,
            bytes=st.bytes,
            tokens=st.tokens,
            bytes_per_token=st.bytes_per_token,
            expired=st.expired,
            evicted=st.evicted,
            closed=st.closed,
            max_bytes=st.max_bytes,
        )
        if self.verifier is not None:
            out["verifier"] = self.verifier.stats()
        return out

    def shutdown(self, timeout: float = 60.0) -> None:
        """Let the shadow verifier finish its queue and stop.

        The tier still serves afterwards, unverified: nothing more is sampled or queued
        (``stats()["verifier"]["offered_after_close"]`` counts those requests).
        """
        if self.verifier is not None:
            self.verifier.close(timeout)

    def session_records(self, session: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies of a live session's (ids, starts, ends) -- for inspection and campaigns."""
        self._check_session_id(session)
        state = self.store.get(session)
        if state is None:
            raise UnknownSessionError(session)
        return tuple(a.copy() for a in state.records())

    # --- internals ---------------------------------------------------------------------
    def _warm_repair(self) -> float:
        """Compile (or load) the repair path's kernels at construction, never in a request."""
        t0 = time.perf_counter()
        diff.warmup()
        state = SessionState("warmup", self.tokenizer.sha256)
        text = _CALIBRATION_TEXT * 3
        ids, starts, ends = self.engine.encode(text)
        state.commit_full(ids, starts, ends, text)
        # "cafe\u0301": NFC changes it, so an NFC tokenizer's window takes the path whose
        # records are encoded outside (``plan_records``), compiled here and not in the first
        # request that needs it (24.6 ms from the on-disk cache, seconds without it).
        for delta in ("Ok.", " 12\r\n", "é\u0301", " cafe\u0301."):
            new = text + delta
            plan = self._planner.plan(
                state, len(text), len(new), len(text), 0, _PlainText(new).window,
                window=64, max_widenings=2,
            )  # fmt: skip
            if plan.ok:
                state.commit_splice(plan, len(delta), text=new)
                text = new
        self._planner.warm_grow_and_apply(state)
        # The router's fixed repair cost: a small append with the default window, timed.
        times = []
        for k in range(15):
            delta = f" step {k}: ok.\n"
            new = text + delta
            t1 = time.perf_counter()
            plan = self._planner.plan(
                state, len(text), len(new), len(text), 0, _PlainText(new).window,
                window=self.window, max_widenings=self.max_widenings,
            )  # fmt: skip
            if plan.ok:
                state.commit_splice(plan, len(delta), text=new)
                text = new
            times.append(time.perf_counter() - t1)
        self.router.repair_overhead_s = float(np.median(times))
        return time.perf_counter() - t0

    def _append(self, state, session, delta, full_text, delta_u8=None) -> Result:
        """An append to a live session: repair, or a full encode when the router predicts it faster.

        The common append is flat: one compiled call finds and (usually) writes the splice
        of the first window, and its answer is written out here from the call's slots,
        with no ``Planned``, no further Python call and no helper frames between: each
        Python call on this path costs 1-5 us after the engine's call has evicted the
        interpreter's caches (``tools/append-profile/fast_path_ab.py``, ``flat_append_ab.py``).
        Otherwise nothing changed, and ``_repair`` runs the whole protocol.  ``delta_u8``:
        the delta's UTF-8 bytes when its check produced them (non-ASCII), so only the old
        part is encoded here.
        """
        old_len = state.text_length
        route = self.router.hit(old_len, len(delta))
        if route.name != "repair":
            self._count("requests", "hits", "appends", "delta_full")
            text = full_text if full_text is not None else state.text() + delta
            return self._seed(session, text, route.reason, count=False, route=route, previous=state)
        new_len = old_len + len(delta)
        planner = self._planner
        if planner is None or new_len >= 2**31 - 1:
            return self._repair_append(state, session, delta, full_text, old_len, new_len, None)
        ws = old_len - self.window if old_len > self.window else 0
        if full_text is None:
            old_part = state.tail(old_len - ws)
            window_text = old_part + delta
            text_state = state.appended_text(delta)
        else:
            old_part = None
            window_text = full_text[ws:]
            text_state = state.next_text(text=full_text)
        u8 = None
        if delta_u8 is not None:  # stored text is valid UTF-8: its encode cannot fail
            if old_part is None:
                old_part = full_text[ws:old_len]
            u8 = old_part.encode("utf-8") + delta_u8
        apply_now = not state.readers()
        if planner.ea is not None:  # ``Planner.first_window``, its call made here
            u8 = np.frombuffer(window_text.encode("utf-8") if u8 is None else u8, dtype=np.uint8)
            ctx, wk = planner.window_context(u8.size)
            status = planner.first_window_call(state, u8, ws, new_len, ctx, apply_now)
            res = wk.res.tolist()
            if status != OK or res[R_APPLIED] != 1:
                res, fresh = planner.first_window_finish(state, window_text, u8, ws, new_len,
                                                         apply_now, status, wk)  # fmt: skip
            else:
                fresh = True  # written by the call: its records are not needed
        else:
            found = planner.first_window(state, window_text, ws, new_len, apply_now=apply_now,
                                         u8=u8)  # fmt: skip
            if found is None:  # no compiled window encode (WordPiece: reference windows)
                return self._repair_append(state, session, delta, full_text, old_len, new_len,
                                           None)  # fmt: skip
            res, fresh = found
        if fresh is None:  # encoded, no certified splice: ``_repair`` widens from its slots
            return self._repair_append(state, session, delta, full_text, old_len, new_len, res)
        if res[R_APPLIED] != 1:
            plan = planner.first_window_plan(res, fresh, ws, new_len)
            return self._commit_plan(state, session, plan, new_len - old_len, text_state, "appends")
        # Written by the compiled call already: publish and answer from its slots.  Written
        # out here rather than through ``Planner.written_splice``, ``_answer_splice`` and
        # ``_snapshot_result`` (see the docstring).
        new_n, keep, b_left = res[R_NEW_N], res[R_KEEP], res[R_B_LEFT]
        reason = REASON_FIRST_WINDOW if ws else REASON_WHOLE_TEXT  # ``splice._ok_reason``
        window_chars = new_len - (b_left if res[R_CUT] >= 0 else ws)  # ``splice._encoded_from``
        boundaries = (b_left if b_left >= 0 else None, None)
        state.publish(new_n, new_len - old_len, text_state)
        self.store.refresh(state)
        with self._counts_guard:
            self._counts[_FIRST_WINDOW_APPEND] += 1
        new_ids = state.ids[keep:new_n].copy()
        new_ids.flags.writeable = False
        result = Result(None, "repair", reason, session, 0, window_chars, boundaries, keep=keep,
                        new_ids=new_ids, snapshot=state.snapshot())  # fmt: skip
        if self.verifier is not None:
            self._offer(lambda: result.ids, state.text_parts, "repair", session)
        return result

    def _repair_append(self, state, session, delta, full_text, old_len, new_len,
                       failed_first) -> Result:  # fmt: skip
        """The whole protocol for an append (``_repair``), after the first window when tried."""
        source = _PlainText(full_text) if full_text is not None else _AppendText(state, delta)
        return self._repair(state, session, old_len, new_len, old_len, 0, source, delta,
                            failed_first)  # fmt: skip

    def _commit_plan(self, state, session, plan, shift, text_state, kind) -> Result:
        """Publish a certified compiled splice (written already, or written now) and answer."""
        if plan.applied:
            state.publish(plan.new_n, shift, text_state)
        else:
            state.commit_splice(plan, shift, text_state=text_state)
        return self._answer_splice(state, session, kind, plan.keep, plan.widenings, plan.reason,
                                   plan.window_chars, plan.boundaries)  # fmt: skip

    def _answer_splice(self, state, session, kind, keep, widenings, reason, window_chars,
                       boundaries) -> Result:  # fmt: skip
        """A published splice's bookkeeping and answer: store, counters, the new IDs."""
        self.store.refresh(state)
        self._count("requests", "hits", kind, "widened" if widenings else "first_window",
                    widenings=widenings)  # fmt: skip
        new_ids = state.ids[keep : state.n].copy()
        new_ids.flags.writeable = False
        return self._snapshot_result(state, "repair", reason, session, widenings, window_chars,
                                     boundaries, keep, new_ids)  # fmt: skip

    def _full(self, route: Route, text: str, ids_only: bool = False):
        """(ids, starts, ends) on the route's full path; the IDs alone with ``ids_only``."""
        engine = self.router.engine(route)
        self._count(f"route_{route.name}")
        if route.reason.startswith("GPU busy"):
            self._count("spills")
        return engine.encode_ids(text) if ids_only else engine.encode_full(text)

    def _offer(self, ids, text, path, session) -> None:
        """``ids``: a read-only array, or a callable returning one (resolved if sampled)."""
        if self.verifier is not None:
            self.verifier.offer(ids, text, path, session, owned=True)

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
            self._counts[("quarantined",)] += 1
        self.store.close(session)
        return True

    def _repair(self, state, session, old_len, new_len, prefix, suffix, source, delta,
                failed_first: list | None = None) -> Result:  # fmt: skip
        """Repair a live session (``delta`` given for an append, None for an edit);
        ``failed_first``: the compiled first window's slots, tried already (``_append``).

        The request path of every hit: a few attribute reads around one compiled call
        (``engine.splice.Planner``); nothing here is O(context).
        """
        if isinstance(source, str):
            source = _PlainText(source)
        if new_len >= 2**31 - 1:
            raise OverflowError("session text exceeds 2**31 characters")
        text = source.text if type(source) is _PlainText else None
        shift = new_len - old_len
        planner = self._planner
        if planner is not None:
            # The new text's chunks are prepared first: once the compiled call has written
            # the splice, publishing it is assignments only (no half-updated session).
            text_state = state.next_text(appended=delta if text is None else None, text=text)
            plan = planner.plan(
                state, old_len, new_len, prefix, suffix, source.window,
                window=self.window, max_widenings=self.max_widenings,
                apply_now=not state.readers(), failed_first=failed_first,
            )  # fmt: skip
            ok, widenings, reason = plan.ok, plan.widenings, plan.reason
        else:
            attempt = repair.plan(
                self._rules, self.engine, state.records(), old_len, new_len, prefix, suffix,
                source.window, window=self.window, max_widenings=self.max_widenings,
                cut=self.cut_splice,
            )  # fmt: skip
            ok, widenings, reason = attempt.splice is not None, attempt.widenings, attempt.reason
        kind = "appends" if delta is not None else "edits"
        if not ok:
            self._count("requests", "hits", kind, "fallbacks", widenings=widenings)
            return self._seed(
                session, source.full(), f"repair fallback: {reason}", count=False, previous=state
            )
        if planner is not None:
            return self._commit_plan(state, session, plan, shift, text_state, kind)
        keep, window_chars, boundaries = self._commit_python(
            state, attempt, delta, text, source, shift
        )
        self.store.refresh(state)
        self._count("requests", "hits", kind, "first_window" if widenings == 0 else "widened",
                    widenings=widenings)  # fmt: skip
        new_ids = state.ids[keep : state.n].copy()
        new_ids.flags.writeable = False
        return self._snapshot_result(
            state, "repair", reason, session, widenings, window_chars, boundaries, keep, new_ids
        )

    def _commit_python(self, state, attempt, delta, text, source, shift):
        """Commit a ``repair.plan`` splice; returns (keep, window chars, boundaries)."""
        sp = attempt.splice
        f_ids, f_s, f_e = attempt.fresh
        mid = slice(sp.fresh_from, sp.fresh_to)
        old_ids = state.ids[: state.n].copy()
        if delta is not None and text is None:
            state.commit_replace_tail(sp.keep_left, f_ids[mid], f_s[mid], f_e[mid], delta)
        else:
            keep_right = sp.keep_right_from if sp.keep_right_from is not None else state.n
            state.commit_edit(
                sp.keep_left, f_ids[mid], f_s[mid], f_e[mid], keep_right, shift, source.full()
            )
        keep = diff.common_ids(old_ids, state.ids[: state.n])
        return keep, attempt.window_chars, (sp.boundary_left, sp.boundary_right)

    def _seed(self, session, text, reason, *, count=True, route: Route | None = None,
              previous: SessionState | None = None) -> Result:  # fmt: skip
        """Encode ``text`` in full and start the session's state from it."""
        if route is None:
            route = self.router.miss(len(text), supported=self._supported)
        ids, starts, ends = self._full(route, text)
        new = SessionState(session, self.tokenizer.sha256)
        new.commit_full(ids, starts, ends, text)
        keep = 0
        if previous is not None:  # the session's last result: how much of it still holds
            keep = diff.common_ids(previous.ids[: previous.n], ids)
        self.store.put(new)
        if count:
            self._count("requests", "misses")
        self._count("full")
        ids.flags.writeable = False  # the state holds its own copy; this one is the caller's
        self._offer(ids, lambda: text, route.name, session)
        return Result(
            ids,
            route.name,
            reason if reason == route.reason else f"{reason}; {route.reason}",
            session,
            0,
            len(text),
            keep=keep,
        )

    def _unchanged(self, state, reason, session) -> Result:
        new_ids = np.zeros(0, dtype=state.ids.dtype)
        new_ids.flags.writeable = False
        return self._snapshot_result(state, "repair", reason, session, keep=state.n,
                                     new_ids=new_ids)  # fmt: skip

    def _snapshot_result(self, state, path, reason, session, widenings=0, window_chars=0,
                         boundaries=(None, None), keep=0, new_ids=None) -> Result:  # fmt: skip
        result = Result(
            None, path, reason, session, widenings, window_chars, boundaries,
            keep=keep, new_ids=new_ids, snapshot=state.snapshot(),
        )  # fmt: skip
        if self.verifier is not None:
            # The verifier, if it samples this one, assembles the IDs in its own thread.
            self._offer(lambda: result.ids, state.text_parts, path, session)
        return result

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

    def _count(self, *keys: str, widenings: int = 0) -> None:
        """One request's event: +1 to each of ``keys`` (and ``widenings`` to "widenings")."""
        with self._counts_guard:
            self._counts[keys] += 1
            if widenings:
                self._counts[("widenings",)] += widenings


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
