"""Claim S1: the shadow verifier catches injected faults, passes clean traffic, and detects a
faulty stream after a geometric number of requests (paper §3.6, §6.8).

Two measurements, both with the real :class:`~toktier.verifier.ShadowVerifier` (its sampling
coin, queue, background thread and reference re-encode):

*Fault stream.*  Real sessions (mini-swe-agent trajectories rendered through the tokenizer's
chat template) are replayed through a ``Tier(tok, verify_rate=0)``: the first call seeds the
session, every later call is ``tier.append`` of the messages it adds, so each request's IDs
are the tier's own output for the session's full text.  A session stops once its context
would exceed ``max_context_chars`` (the reference re-checks stay affordable); sessions are
taken in a seeded random order until ``requests`` requests exist.  A fixed share of them
(``fault_rate``; the paper: 434 of 2,999) gets its emitted IDs mutated by
:func:`toktier.campaigns.faults.inject`, the kind drawn uniformly from ``faults.KINDS``.  When a
mutation is impossible for a request (``NoFaultPossible``) the fault moves to the next
request (after three misses it draws a new kind).  One verifier per sampling rate is offered
every request of the same stream (each with its own seeded coin); per rate and fault kind
the result counts sampled, dropped, checked, caught and missed faults, and sampled clean
requests and false positives (a mismatch on a clean request would be a real tier bug).

*Detection delay.*  A faulty campaign is a stream of faulty requests offered one at a time
to a verifier; its delay is the number of faulty requests up to and including the one whose
check reports the first mismatch.  The requests are small (single rendered messages of
``DELAY_TEXT_CHARS``), so a campaign costs milliseconds; each sampled request is checked
(``flush``) before the next one is offered.  With sampling rate ``p`` the delay is geometric:
``P(D <= d) = 1 - (1-p)**d``, median ``ceil(ln 0.5 / ln(1-p))``, P90 ``ceil(ln 0.1 / ln(1-p))``.
The empirical quantiles are reported beside those, with the Kolmogorov distance between the
empirical and the geometric CDF and the DKW 95% band it is to be read against.

``run(tok, archive, ...)`` is the entry point; ``SIZES`` holds the tiny / quick / paper
presets; ``fault_rows``, ``delay_rows`` and ``geometric_cdf`` shape its result for tables and
figures.
"""

from __future__ import annotations

import math
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..tier import Tier
from ..verifier import ShadowVerifier
from ..workload.archives import find_archive
from ..workload.templates import render_segments
from ..workload.trajectories import Trajectory, iter_trajectories
from . import faults

PAPER_RATES = (0.10, 0.05)
PAPER_FAULT_RATE = 434 / 2999
SIZES = {
    "tiny": {"requests": 80, "campaigns": 20, "max_context_chars": 30_000},
    "quick": {"requests": 600, "campaigns": 100, "max_context_chars": 200_000},
    "paper": {"requests": 3000, "campaigns": 1000, "max_context_chars": 200_000},
}
DELAY_TEXT_CHARS = (200, 2000)  # the small requests of the delay campaigns (character range)
DELAY_POOL = 256  # distinct faulty small requests the campaigns cycle through
MAX_CAMPAIGN_REQUESTS = 5000  # a campaign still undetected after this many is censored
_REDRAW_AFTER = 3  # a fault that fits no request this many times in a row draws a new kind
_FLUSH_TIMEOUT_S = 900.0


@dataclass
class Request:
    """One request of the stream: the tier's IDs for the session's text after one call."""

    index: int
    session: str
    call: int
    text: str
    ids: np.ndarray  # as emitted (mutated when ``fault`` is set)
    fault: str | None = None


@dataclass
class _RateTally:
    rate: float
    verifier: ShadowVerifier | None = None
    flagged: list = field(default_factory=list)  # request indices the verifier reported
    by_class: dict = field(default_factory=dict)  # class -> Counter(sampled, dropped)

    def count(self, cls: str, key: str) -> None:
        self.by_class.setdefault(cls, Counter())[key] += 1


def geometric_quantile(p: float, q: float) -> int:
    """Smallest d with ``1 - (1-p)**d >= q``: the geometric (trials until first success) quantile."""
    if p >= 1.0:
        return 1
    return max(1, math.ceil(math.log(1.0 - q) / math.log(1.0 - p) - 1e-12))


def geometric_cdf(p: float, d) -> np.ndarray:
    d = np.asarray(d, dtype=np.float64)
    return np.where(d >= 1, 1.0 - (1.0 - p) ** np.floor(d), 0.0)


def _quantile(x: np.ndarray, q: float) -> int | None:
    """The smallest observed d with ECDF(d) >= q ("half of the campaigns within d")."""
    if x.size == 0:
        return None
    return int(np.quantile(x, q, method="inverted_cdf"))


def load_sessions(archive: Path | None = None) -> list[Trajectory]:
    archive = archive if archive is not None else find_archive("mini-swe-agent")
    if archive is None:
        raise FileNotFoundError(
            "mini-swe-agent trajectory archive not found (set TOKTIER_DATA_MIRROR or pass archive)"
        )
    return list(iter_trajectories(Path(archive)))


def iter_requests(tok, trajectories, n_requests: int, max_context_chars: int, seed: int):
    """Yield up to ``n_requests`` clean :class:`Request` objects from replayed sessions.

    Sessions come in a seeded random order (cycling if the corpus runs out, each pass under
    fresh session ids); a session ends at the call whose context would exceed
    ``max_context_chars``.
    """
    tier = Tier(tok, verify_rate=0)
    order = np.random.default_rng([seed, 1]).permutation(len(trajectories))
    produced, passes = 0, 0
    while produced < n_requests:
        before = produced
        for t in order:
            traj = trajectories[int(t)]
            sid = traj.session if passes == 0 else f"{traj.session}~{passes}"
            segs = render_segments(traj.messages, tok.name)
            text, used = "", 0
            for k, call in enumerate(traj.calls):
                delta = "".join(segs[used : call.prompt_messages])
                if len(text) + len(delta) > max_context_chars:
                    break
                if not delta and k:
                    continue
                r = tier.append(sid, delta) if k else tier.encode(delta, session=sid)
                text += delta
                used = call.prompt_messages
                yield Request(produced, sid, k, text, r.ids)
                produced += 1
                if produced >= n_requests:
                    tier.close(sid)
                    return
            if used:
                tier.close(sid)
        passes += 1
        if produced == before:
            raise ValueError(
                f"no call of any session fits in max_context_chars={max_context_chars}"
            )


class _Injector:
    """Exactly ``n_faults`` faults at seeded positions of an ``n``-request stream (moved on
    when a mutation does not fit a request)."""

    def __init__(self, tok, n: int, fault_rate: float, seed: int):
        self.tok = tok
        self.rng = np.random.default_rng([seed, 2])
        n_faults = round(fault_rate * n)
        self.positions = set(self.rng.choice(n, size=n_faults, replace=False).tolist())
        self.pending: list[list] = []  # [kind, misses]
        self.impossible: Counter = Counter()
        self.injected: Counter = Counter()

    def apply(self, req: Request) -> None:
        if req.index in self.positions:
            self.pending.append([str(self.rng.choice(faults.KINDS)), 0])
        if not self.pending:
            return
        kind = self.pending[0][0]
        try:
            req.ids = faults.inject(kind, req.ids, self.rng, text=req.text, tokenizer=self.tok)
        except faults.NoFaultPossible:
            self.impossible[kind] += 1
            self.pending[0][1] += 1
            if self.pending[0][1] >= _REDRAW_AFTER:
                self.pending[0] = [str(self.rng.choice(faults.KINDS)), 0]
            return
        self.pending.pop(0)
        req.fault = kind
        self.injected[kind] += 1


def fault_stream(
    tok,
    trajectories,
    *,
    requests: int,
    fault_rate: float,
    rates=PAPER_RATES,
    max_context_chars: int = 200_000,
    seed: int = 0,
    quarantine_dir: Path,
    queue_size: int | None = None,
    reference=None,
    progress: bool = True,
) -> dict:
    """Offer one replayed, partly faulty request stream to one verifier per rate."""
    injector = _Injector(tok, requests, fault_rate, seed)
    tallies = []
    for i, rate in enumerate(rates):
        tally = _RateTally(rate)
        kw = {} if queue_size is None else {"queue_size": queue_size}
        tally.verifier = ShadowVerifier(
            tok,
            rate=rate,
            seed=seed * 1000 + i,
            quarantine_dir=Path(quarantine_dir) / f"stream-{i}",
            reference=reference,
            on_mismatch=lambda s, t=tally: t.flagged.append(int(s.session.rsplit("#", 1)[1])),
            cpu_share=1.0,  # an offline campaign: no pauses (they would only add drops)
            **kw,
        )
        tallies.append(tally)
    classes: dict[int, str] = {}
    sessions: set[str] = set()
    chars = Counter()
    for req in tqdm(
        iter_requests(tok, trajectories, requests, max_context_chars, seed),
        total=requests,
        desc="fault stream",
        unit="req",
        disable=not progress or None,
    ):
        injector.apply(req)
        cls = req.fault or "clean"
        classes[req.index] = cls
        sessions.add(req.session)
        chars["characters"] += len(req.text)
        chars["tokens"] += len(req.ids)
        for tally in tallies:
            v = tally.verifier
            before = v.stats()
            v.offer(req.ids, lambda r=req: r.text, "stream", f"{req.session}#{req.index}")
            after = v.stats()
            if after["sampled"] > before["sampled"]:
                tally.count(cls, "sampled")
            if after["dropped"] > before["dropped"]:
                tally.count(cls, "dropped")
    per_rate = []
    for tally in tallies:
        v = tally.verifier
        if not v.flush(_FLUSH_TIMEOUT_S):
            raise TimeoutError(f"verifier at rate {tally.rate} did not drain its queue")
        v.close()
        st = v.stats()
        flagged = Counter(classes[i] for i in tally.flagged)
        by_kind = {}
        for cls in (*faults.KINDS, "clean"):
            c = tally.by_class.get(cls, Counter())
            requests_cls = sum(1 for x in classes.values() if x == cls)
            checked = c["sampled"] - c["dropped"]
            by_kind[cls] = {
                "requests": requests_cls,
                "sampled": c["sampled"],
                "dropped": c["dropped"],
                "checked": checked,
                "flagged": flagged[cls],
            }
        fault_rows = [by_kind[k] for k in faults.KINDS]
        sampled_faults = sum(r["sampled"] for r in fault_rows)
        checked_faults = sum(r["checked"] for r in fault_rows)
        caught = sum(r["flagged"] for r in fault_rows)
        clean = by_kind["clean"]
        per_rate.append(
            {
                "rate": tally.rate,
                "requests": len(classes),
                "faults": sum(r["requests"] for r in fault_rows),
                "sampled": st["sampled"],
                "sampled_faults": sampled_faults,
                "checked_faults": checked_faults,
                "caught": caught,
                "missed": checked_faults - caught,
                "clean_sampled": clean["sampled"],
                "clean_checked": clean["checked"],
                "false_positives": clean["flagged"],
                "dropped": st["dropped"],
                "errors": st["errors"],
                "skipped_large": st["skipped_large"],
                "checked": st["checked"],
                "mismatches": st["mismatches"],
                "quarantine_records": st["quarantine_records"],
                "lag_p50_s": st["lag_p50_s"],
                "lag_max_s": st["lag_max_s"],
                "last_error": v.last_error,
                "by_kind": by_kind,
            }
        )
    return {
        "requests": len(classes),
        "sessions": len(sessions),
        "characters": chars["characters"],
        "tokens": chars["tokens"],
        "faults_planned": len(injector.positions),
        "faults_injected": dict(injector.injected),
        "faults_not_placed": len(injector.pending),
        "no_fault_possible": dict(injector.impossible),
        "rates": per_rate,
    }


def delay_pool(tok, trajectories, size: int, seed: int) -> list[tuple[str, np.ndarray, str]]:
    """``size`` small faulty requests: (text, mutated IDs, kind) from single rendered messages."""
    lo, hi = DELAY_TEXT_CHARS
    texts = []
    for traj in trajectories:
        texts.extend(s for s in render_segments(traj.messages, tok.name) if lo <= len(s) <= hi)
        if len(texts) >= 4 * size:
            break
    if not texts:
        raise ValueError("no message of the delay-campaign size in the corpus")
    rng = np.random.default_rng([seed, 3])
    picks = [texts[int(i)] for i in rng.choice(len(texts), size=size, replace=len(texts) < size)]
    encs = tok.hf.encode_batch(picks, add_special_tokens=False)
    pool = []
    for text, enc in zip(picks, encs, strict=True):
        ids = np.asarray(enc.ids, dtype=np.uint32)
        for kind in rng.permutation(faults.KINDS):
            try:
                pool.append(
                    (text, faults.inject(str(kind), ids, rng, text=text, tokenizer=tok), str(kind))
                )
                break
            except faults.NoFaultPossible:
                continue
    return pool


def detection_delays(
    tok,
    pool,
    *,
    rate: float,
    campaigns: int,
    seed: int,
    quarantine_dir: Path,
    reference=None,
    max_requests: int = MAX_CAMPAIGN_REQUESTS,
    progress: bool = True,
) -> dict:
    """Faulty campaigns against one verifier: the faulty requests until its first mismatch."""
    v = ShadowVerifier(
        tok,
        rate=rate,
        seed=seed * 1000 + 500 + round(rate * 1e4),
        quarantine_dir=quarantine_dir,
        reference=reference,
        cpu_share=1.0,  # an offline campaign: no pauses
    )
    rng = np.random.default_rng([seed, 4, round(rate * 1e4)])
    delays, censored, missed = [], 0, 0
    for _ in tqdm(
        range(campaigns), desc=f"delay @ {rate:g}", unit="campaign", disable=not progress or None
    ):
        start = int(rng.integers(len(pool)))
        for j in range(1, max_requests + 1):
            text, ids, _kind = pool[(start + j) % len(pool)]
            seen = v.stats()["mismatches"]
            if not v.offer(ids, lambda t=text: t, "delay", None):
                continue
            if not v.flush(_FLUSH_TIMEOUT_S):
                raise TimeoutError("verifier did not check a delay-campaign sample")
            if v.stats()["mismatches"] > seen:
                delays.append(j)
                break
            missed += 1  # checked and not flagged: only a broken verifier gets here
        else:
            censored += 1
    v.close()
    st = v.stats()
    x = np.asarray(delays, dtype=np.int64)
    grid = np.arange(1, int(x.max()) + 1) if x.size else np.arange(1, 2)
    ecdf = np.searchsorted(np.sort(x), grid, side="right") / max(campaigns, 1)
    ks = float(np.max(np.abs(ecdf - geometric_cdf(rate, grid)))) if x.size else None
    return {
        "rate": rate,
        "campaigns": campaigns,
        "detected": int(x.size),
        "censored": censored,
        "missed_checks": missed,
        "offered": st["offered"],
        "checked": st["checked"],
        "dropped": st["dropped"],
        "errors": st["errors"],
        "median": _quantile(x, 0.5),
        "p90": _quantile(x, 0.9),
        "mean": float(x.mean()) if x.size else None,
        "geometric_median": geometric_quantile(rate, 0.5),
        "geometric_p90": geometric_quantile(rate, 0.9),
        "geometric_mean": 1.0 / rate if rate > 0 else None,
        "ks_distance": ks,
        "dkw95": math.sqrt(math.log(2 / 0.05) / (2 * campaigns)) if campaigns else None,
        "delays": x.tolist(),
    }


def run(
    tok,
    archive: Path | None = None,
    *,
    requests: int = SIZES["quick"]["requests"],
    fault_rate: float = PAPER_FAULT_RATE,
    rates=PAPER_RATES,
    campaigns: int = SIZES["quick"]["campaigns"],
    max_context_chars: int = SIZES["quick"]["max_context_chars"],
    seed: int = 0,
    quarantine_dir: Path | None = None,
    queue_size: int | None = None,
    reference=None,
    progress: bool = True,
    trajectories: list[Trajectory] | None = None,
) -> dict:
    """Both measurements for one tokenizer (``toktier.load`` name or a loaded Tokenizer).

    ``reference`` overrides the verifiers' reference (text -> IDs; tests break it on purpose);
    ``quarantine_dir`` keeps the mismatch records (default: a temporary folder, removed).
    """
    if isinstance(tok, str):
        from .. import load

        tok = load(tok)
    if not 0.0 <= fault_rate <= 1.0:
        raise ValueError(f"fault_rate must be in [0, 1], got {fault_rate!r}")
    rates = tuple(float(r) for r in rates)
    if trajectories is None:
        trajectories = load_sessions(archive)
    with tempfile.TemporaryDirectory(prefix="toktier-verifier-faults-") as tmp:
        qdir = Path(quarantine_dir) if quarantine_dir is not None else Path(tmp)
        stream = fault_stream(
            tok,
            trajectories,
            requests=requests,
            fault_rate=fault_rate,
            rates=rates,
            max_context_chars=max_context_chars,
            seed=seed,
            quarantine_dir=qdir,
            queue_size=queue_size,
            reference=reference,
            progress=progress,
        )
        delay = []
        if campaigns:
            pool = delay_pool(tok, trajectories, DELAY_POOL, seed)
            delay = [
                detection_delays(
                    tok,
                    pool,
                    rate=r,
                    campaigns=campaigns,
                    seed=seed,
                    quarantine_dir=qdir / f"delay-{i}",
                    reference=reference,
                    progress=progress,
                )
                for i, r in enumerate(rates)
            ]
    return {
        "claim": "S1",
        "config": {
            "tokenizer": tok.name,
            "requests": requests,
            "fault_rate": fault_rate,
            "rates": list(rates),
            "campaigns": campaigns,
            "max_context_chars": max_context_chars,
            "seed": seed,
            "kinds": list(faults.KINDS),
            "delay_text_chars": list(DELAY_TEXT_CHARS),
            "delay_pool": DELAY_POOL,
            "max_campaign_requests": MAX_CAMPAIGN_REQUESTS,
        },
        "stream": stream,
        "delay": delay,
        # a dropped sample is sampled but never checked, so it counts against this
        "all_sampled_faults_caught": all(
            r["caught"] == r["sampled_faults"] for r in stream["rates"]
        ),
        "false_positives": sum(r["false_positives"] for r in stream["rates"]),
    }


def fault_rows(result: dict) -> list[dict]:
    """Per rate: one row per fault kind, an ``all faults`` row and a ``clean`` row."""
    rows = []
    for r in result["stream"]["rates"]:
        for kind in (*faults.KINDS, "all faults", "clean"):
            if kind == "all faults":
                parts = [r["by_kind"][k] for k in faults.KINDS]
                c = {k: sum(p[k] for p in parts) for k in parts[0]}
            else:
                c = r["by_kind"][kind]
            is_clean = kind == "clean"
            rows.append(
                {
                    "rate": r["rate"],
                    "kind": kind,
                    "requests": c["requests"],
                    "sampled": c["sampled"],
                    "dropped": c["dropped"],
                    "checked": c["checked"],
                    "caught": None if is_clean else c["flagged"],
                    "missed": None if is_clean else c["checked"] - c["flagged"],
                    "false_positives": c["flagged"] if is_clean else None,
                }
            )
    return rows


def delay_rows(result: dict) -> list[dict]:
    """Per rate: empirical detection-delay quantiles beside the geometric expectation."""
    return [{k: v for k, v in d.items() if k != "delays"} for d in result["delay"]]
