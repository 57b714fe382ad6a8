"""One continuation's cost at every context size: the request path against stateless peers.

A session holds about N characters of a real text stream; the next request adds a
fixed Δ (1.1K characters, the workload's median append).  The continuations are the
same texts at every N, held out of everything any engine has seen before them
(``held_out_layout``): the stream's last stretch is cut off and never used as a seed
or as warm-up traffic, and the seeds come from the rest (cycled where a context is
longer than it).  Each cell (context × stream) gets new tier objects, engines and peers,
each of which first encodes the same warm-up text (the opening ``warm_chars`` of each
stream's seed part), as a server that has been running would: the engine's piece
cache lives across calls, as deployed, so an object that had served another cell's
continuations would meet them warm (cold non-Latin pieces cost ~10x warm ones).
Before 2026-11-29 (b2f9ac9 and earlier) each context took continuations from a
stretch of its own, after the largest context; the multilingual stream (4.3M
characters) is shorter than that, so it was cycled and the 1M and 8M sessions' own
seeds held their continuations (warm pieces), and each context met other scripts.
A cell is many short sessions (five timed continuations each, centred on N: the
context stays N ± 2.75K), and every method runs on every session in turn, so all
methods see identical texts in one run.  The order rotates from session to session: the
method that runs first after a session start finds the CPU caches cold (the peers'
tables and the new session's arrays); a fixed order would charge that to one method.

- ``tier append``: ``Tier.append(session, delta)`` (the compiled repair path);
- ``tier full text``: ``Tier.encode(whole text, session)``, as a front end sends it;
- ``tier append, Python plan``: the same protocol through ``repair.plan`` (before the
  compiled path: the reference implementation);
- ``tier append, no cut``: the compiled path with the cut splice off
  (``Tier(cut_splice=False)``): the paper's window-and-run protocol, which encodes
  ``repair.default_window`` characters of old text with every change (318 for llama3);
  what the cut saves;
- ``fastokens full re-encode``: one warm object, as deployed;
- ``Gigatoken prewarmed``: one object per session that has encoded the session text;
- ``engine full encode``: toktier's own stateless engine on the whole text;
- ``reference full re-encode`` (optional, not in ``METHODS``): the reference itself,
  stateless, on the whole text -- the only full path of a family without an engine.

Timing: one timed call per sample, garbage collector off (``timing``); every tier
session is verified against the reference after its last continuation.  Slow methods
take fewer samples at large contexts (``slow_samples``); P99 is reported only with
>= 100 samples.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Callable

import numpy as np
from tqdm.auto import tqdm

from ..baselines import FastokensFull, GigatokenPrewarmed
from ..tier import Tier
from .timing import private_engine, time_ms

TIER_METHODS = (
    "tier append", "tier full text", "tier append, Python plan", "tier append, no cut",
)  # fmt: skip
BASELINES = ("fastokens full re-encode", "Gigatoken prewarmed", "engine full encode")
METHODS = TIER_METHODS + BASELINES
OPTIONAL = ("reference full re-encode",)


def continuation_tails(contexts: list[int], delta: int, per_session: int,
                       sessions: int) -> dict[int, int]:  # fmt: skip
    """Where each context's continuations start: disjoint stretches after the largest
    context (the protocol before ``held_out_layout``; the A/B tools under
    ``tools/append-profile`` still cut their cells this way)."""
    span = delta * (per_session + 1) * sessions
    top = max(contexts)
    return {c: top + k * span for k, c in enumerate(sorted(set(contexts)))}


def held_out_layout(stream: str, top: int, held: int) -> tuple[str, int]:
    """(layout, tail_from): the last ``held`` characters of ``stream`` held out, the rest
    (cycled when shorter) filling ``layout[:top]``, the held-out text after it.  Cells cut
    by ``session_cells(layout, context <= top, ..., tail_from)`` seed from the first part
    only, so no seed and no warm-up taken from ``layout[:top]`` holds a continuation."""
    if len(stream) <= held:
        raise ValueError(f"a stream of {len(stream):,} characters cannot hold out {held:,}")
    seeds, tail = stream[:-held], stream[-held:]
    if len(seeds) < top:
        seeds = seeds * (top // len(seeds) + 1)
    return seeds[:top] + tail, top


def session_cells(stream: str, context: int, delta: int, per_session: int, sessions: int,
                  tail_from: int) -> list[tuple[str, list[str]]]:  # fmt: skip
    """``sessions`` cells (prefix, deltas) whose timed continuations arrive at about ``context``.

    A session starts from the first ``context - (per_session + 1) // 2 * delta``
    characters of ``stream`` and receives ``per_session + 1`` continuations of ``delta``
    characters (the first untimed), so the timed ones see contexts within
    ``per_session / 2 * delta`` of ``context``.  Continuations are cut from
    ``stream[tail_from:]``, session after session (``continuation_tails`` gives each
    context size its own ``tail_from``).  A short stream is cycled.
    """
    k = per_session + 1
    start = max(1, context - (k // 2) * delta)
    need = max(start, tail_from) + delta * k * sessions
    if len(stream) < need:
        stream = stream * (need // max(1, len(stream)) + 1)
    prefix = stream[:start]
    cells = []
    for s in range(sessions):
        base = tail_from + s * k * delta
        cells.append(
            (prefix, [stream[base + j * delta : base + (j + 1) * delta] for j in range(k)])
        )
    return cells


def _tier_samples(tier: Tier, sid: str, prefix: str, deltas: list[str], full_text: bool,
                  reference: Callable[[str], np.ndarray], tags: list | None = None):  # fmt: skip
    """Time ``len(deltas) - 1`` continuations (the first is an untimed warm-up); with
    ``tags`` (a list with a ``ContentionTagger`` first), each timed call's tag is appended."""
    tier.close(sid)
    tier.encode(prefix, session=sid)
    text = prefix + deltas[0]
    if full_text:
        tier.encode(text, session=sid)
    else:
        tier.append(sid, deltas[0])
    out, paths, ctx = [], [], []
    for d in deltas[1:]:
        ctx.append(len(text))
        text += d
        holder = {}
        _tag(tags)
        if full_text:
            ms = time_ms(lambda t=text, h=holder: h.setdefault("r", tier.encode(t, session=sid)))
        else:
            ms = time_ms(lambda d=d, h=holder: h.setdefault("r", tier.append(sid, d)))
        out.append(ms)
        paths.append(holder["r"].path)
    ok = bool(np.array_equal(holder["r"].ids, reference(text)))
    tier.close(sid)
    return out, paths, ok, ctx


def _baseline_samples(fn: Callable[[str], object], prefix, deltas, prewarm=None,
                      tags: list | None = None):  # fmt: skip
    text = prefix + deltas[0]
    (prewarm or fn)(text)  # untimed: warms the object (and a prewarmed cache with the session)
    out, ctx = [], []
    for d in deltas[1:]:
        ctx.append(len(text))
        text += d
        _tag(tags)
        out.append(time_ms(lambda t=text: fn(t)))
    return out, ctx


def _tag(tags: list | None) -> None:
    """Probe the core's state just before a timed call (``bench.contention``): appended to
    ``tags[1:]``, ``tags[0]`` being the tagger.  Untimed: the clock starts after it."""
    if tags is not None:
        tags.append(tags[0].tag())


def continuation_latency(
    tok,
    streams: dict[str, str],
    contexts: list[int],
    *,
    delta: int = 1100,
    samples: int = 200,
    slow_samples: int = 30,
    slow_from: int = 1_000_000,
    per_session: int = 5,
    methods=METHODS,
    progress: bool = True,
    warm_chars: int = 200_000,
    tagger=None,
) -> list[dict]:
    """Rows (tokenizer, corpus, context, method, sample, context_chars, ms, path, exact).

    Each cell is ``ceil(samples / per_session)`` sessions (``session_cells``); every
    method runs on every session in turn, so methods see identical texts and share the
    machine's drift.  From ``slow_from`` characters on, the full re-encodes and the
    Python plan run on the first ``ceil(slow_samples / per_session)`` sessions only.
    ``tagger`` (a calibrated ``contention.ContentionTagger``): each timed call is probed just
    before its clock starts, and its row gets ``probe_us`` and ``contended``.
    """
    unknown = set(methods) - set(METHODS) - set(OPTIONAL)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; known: {METHODS + OPTIONAL}")

    def tier(**kw):  # each tier method its own engine: no method reads another's piece cache
        return Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False, **kw)

    per_session = max(1, min(per_session, samples))
    n_sessions = -(-samples // per_session)
    n_slow = -(-slow_samples // per_session)
    top = max(contexts)
    layouts = {k: held_out_layout(st, top, delta * (per_session + 1) * n_sessions)
               for k, st in streams.items()}  # fmt: skip
    # warm-up traffic: the opening of each stream's seed part (never a continuation)
    warm = [lay[: min(warm_chars, top)] for lay, _ in layouts.values()]

    def objects():
        """One cell's methods: new tiers, engines and peers, each warmed the same way."""
        tiers = {}
        if "tier append" in methods:
            tiers["compiled"] = tier()
        if "tier full text" in methods:
            tiers["full"] = tier()
        if "tier append, Python plan" in methods:
            tiers["python"] = tier(repair_impl="python")
        if "tier append, no cut" in methods:
            tiers["no_cut"] = tier(cut_splice=False)
        fast = giga = None
        with contextlib.suppress(ImportError):
            fast = FastokensFull(tok) if "fastokens full re-encode" in methods else None
        with contextlib.suppress(ImportError):
            giga = GigatokenPrewarmed(tok) if "Gigatoken prewarmed" in methods else None
        engine = private_engine(tok) if "engine full encode" in methods else None
        if engine is not None:
            engine.warmup()
        full = getattr(engine, "encode_full", None)
        for w in warm:
            for t in tiers.values():
                t.engine.encode(w)
            for fn in (full, fast.full if fast is not None else None):
                if fn is not None:
                    fn(w)
        return tiers, fast, giga, full

    # Every tier method of a session ends on the same text: one reference call checks them
    # all (at 8M characters the reference takes seconds; the tier methods take microseconds).
    reference = functools.lru_cache(maxsize=1)(lambda text: tok.reference(text))
    runs = {
        "tier append": lambda o, sid, p, d, g: _tier_samples(o[0]["compiled"], sid, p, d, False, reference, g),
        "tier full text": lambda o, sid, p, d, g: _tier_samples(o[0]["full"], sid, p, d, True, reference, g),
        "tier append, Python plan": lambda o, sid, p, d, g: _tier_samples(o[0]["python"], sid, p, d, False, reference, g),
        "tier append, no cut": lambda o, sid, p, d, g: _tier_samples(o[0]["no_cut"], sid, p, d, False, reference, g),
        "fastokens full re-encode": lambda o, sid, p, d, g: _baseline_samples(o[1].full, p, d, tags=g),
        "Gigatoken prewarmed": lambda o, sid, p, d, g: (o[2].new_session(), _baseline_samples(o[2].full, p, d, tags=g))[1],
        "engine full encode": lambda o, sid, p, d, g: _baseline_samples(o[3], p, d, tags=g),
        "reference full re-encode": lambda o, sid, p, d, g: _baseline_samples(
            lambda text: tok.hf.encode(text, add_special_tokens=False), p, d, tags=g
        ),
    }  # fmt: skip
    first = objects()
    available = [
        m for m in methods
        if not (m.startswith("fastokens") and first[1] is None)
        and not (m.startswith("Gigatoken") and first[2] is None)
        and not (m.startswith("engine") and first[3] is None)
    ]  # fmt: skip
    slow = ("tier append, Python plan", *BASELINES, *OPTIONAL)
    rows: list[dict] = []
    cells = [(c, k) for c in contexts for k in streams]
    for i, (context, corpus) in enumerate(
        tqdm(cells, desc=f"continuations {tok.name}", disable=not progress)
    ):
        objs = first if i == 0 else objects()  # a cell's own objects (see the docstring)
        layout, tail_from = layouts[corpus]
        sessions = session_cells(layout, context, delta, per_session, n_sessions, tail_from)
        for s, (prefix, deltas) in enumerate(sessions):
            k = s % len(available)  # rotate: no method always runs first, on cold caches
            for method in available[k:] + available[:k]:
                if context >= slow_from and method in slow and s >= n_slow:
                    continue
                tags = None if tagger is None else [tagger]
                got = runs[method](objs, f"c-{corpus}-{context}-{s}", prefix, deltas, tags)
                times, ctx = got[0], got[-1]
                paths = got[1] if method.startswith("tier") else None
                exact = got[2] if method.startswith("tier") else None
                for j, ms in enumerate(times):
                    rows.append({
                        "tokenizer": tok.name, "corpus": corpus, "context": context,
                        "delta": delta, "method": method, "session": s, "sample": j,
                        "context_chars": ctx[j], "ms": ms,
                        "path": paths[j] if paths else "full", "exact": exact,
                    })  # fmt: skip
                    if tags is not None:
                        rows[-1]["probe_us"], rows[-1]["contended"] = tags[1 + j]
        del objs
        first = None
        gc.collect()  # the cell's engines and caches go before the next cell's are built
    return rows


def standard_streams(trajs, tokenizer_name: str, chars: int, multilingual: str) -> dict[str, str]:
    """The two corpora of experiment 10: agent transcripts rendered for this tokenizer
    (``chars`` of them, from loaded trajectories) and ``multilingual`` prose (pycountry's
    catalogs, ``corpus.pycountry_documents``), loaded once by the caller for all tokenizers."""
    from .streams import stream_text

    return {"transcripts": stream_text(trajs, tokenizer_name, chars), "multilingual": multilingual}


def summarize(rows: list[dict]) -> list[dict]:
    """P50 / P99 (P99 only with >= 100 samples) per tokenizer, corpus, context and method."""
    import pandas as pd

    df = pd.DataFrame(rows)
    out = []
    for key, g in df.groupby(["tokenizer", "corpus", "context", "method"], sort=True):
        ms = g["ms"].to_numpy()
        out.append({
            "tokenizer": key[0], "corpus": key[1], "context": key[2], "method": key[3],
            "n": len(ms), "p50_us": float(np.percentile(ms, 50) * 1e3),
            "p99_us": float(np.percentile(ms, 99) * 1e3) if len(ms) >= 100 else None,
            "exact": bool(g["exact"].dropna().all()) if g["exact"].notna().any() else None,
            "repaired": float((g["path"] == "repair").mean()),
        })  # fmt: skip
    return out


BOOT_REPLICATES = 2000  # bootstrap replicates per target (``targets``)
CI_LEVEL = 0.95


def _session_samples(df) -> dict[tuple, np.ndarray]:
    """(tokenizer, corpus, context, method) -> a sessions x samples matrix of µs (the
    harness times the same number of continuations in every session of a cell)."""
    out = {}
    for key, g in df.groupby(["tokenizer", "corpus", "context", "method"], sort=True):
        per = g.sort_values(["session", "sample"]).groupby("session")["ms"]
        sizes = per.size()
        k = int(sizes.min())  # equal in the harness; trimmed defensively if not
        out[key] = np.stack([v.to_numpy()[:k] for _, v in per]) * 1e3
    return out


def _boot_p50(m: np.ndarray, rng: np.random.Generator, b: int) -> np.ndarray:
    """P50 of ``b`` bootstrap replicates of a sessions x samples matrix, resampling whole
    sessions (a session's continuations share its text and the machine's state)."""
    idx = rng.integers(0, m.shape[0], size=(b, m.shape[0]))
    return np.percentile(m[idx].reshape(b, -1), 50, axis=1)


def _interval(reps: np.ndarray) -> tuple[float, float]:
    a = (1 - CI_LEVEL) / 2
    return float(np.quantile(reps, a)), float(np.quantile(reps, 1 - a))


def _verdict(lo: float, hi: float, goal: float, at_most: bool) -> str:
    """"met" when the whole interval meets the goal, "missed" when none of it does, else
    "within noise": this run cannot tell."""
    if at_most:
        return "met" if hi <= goal else ("missed" if lo > goal else "within noise")
    return "met" if lo >= goal else ("missed" if hi < goal else "within noise")


def targets(summary: list[dict], rows: list[dict] | None = None, seed: int = 0) -> list[dict]:
    """Issue #11's targets, per tokenizer and corpus: measured value, target, verdict.

    With the per-sample ``rows``, each value also gets a bootstrap interval
    (``CI_LEVEL``; whole sessions resampled, each method and context on its own, so a
    ratio's interval is conservative) and a ``verdict``: "met" or "missed" only when the
    whole interval is on one side of the goal, else "within noise".  ``met`` stays the
    point estimate's verdict.  Why: several cells sit within a few percent of their goal
    and flip from run to run on the same code (docs/repair.md).
    """
    import pandas as pd

    s = pd.DataFrame(summary)
    mats = _session_samples(pd.DataFrame(rows)) if rows else {}
    rng = np.random.default_rng(seed)
    out = []
    for (tok, corpus), g in s.groupby(["tokenizer", "corpus"]):
        p50 = g.pivot_table(index="context", columns="method", values="p50_us")

        def get(ctx, m, p50=p50):
            return p50.at[ctx, m] if ctx in p50.index and m in p50.columns else np.nan

        def reps(ctx, m, tok=tok, corpus=corpus):
            key = (tok, corpus, ctx, m)
            return _boot_p50(mats[key], rng, BOOT_REPLICATES) if key in mats else None

        def row(name, value, target, at_most, unit, boot=None, tok=tok, corpus=corpus):
            ok = value <= target if at_most else value >= target
            r = {"tokenizer": tok, "corpus": corpus, "target": name, "value": value,
                 "goal": target, "unit": unit, "met": bool(ok)}  # fmt: skip
            if mats:
                lo, hi = _interval(boot) if boot is not None else (np.nan, np.nan)
                r.update(ci_low=lo, ci_high=hi,
                         verdict=_verdict(lo, hi, target, at_most) if boot is not None else "")
            out.append(r)

        def combined(parts, fn):
            return None if any(p is None for p in parts) else fn(*parts)

        small = [c for c in p50.index if 12_000 <= c <= 200_000]
        for m in ("tier append", "tier full text"):
            if small and m in p50.columns:
                worst = float(p50.loc[small, m].max())
                boot = combined([reps(c, m) for c in small], lambda *a: np.max(a, axis=0))
                row(f"{m}: P50, contexts 12K–200K (worst)", worst, 50.0, True, "µs", boot)
        big = [c for c in p50.index if c >= 1_000_000]
        if big and 48_000 in p50.index and "tier append" in p50.columns:
            flat = float(p50.loc[max(big), "tier append"] / p50.at[48_000, "tier append"])
            boot = combined([reps(max(big), "tier append"), reps(48_000, "tier append")],
                            np.divide)  # fmt: skip
            row(f"tier append: P50 at {max(big):,} / P50 at 48K", flat, 1.5, True, "×", boot)
        for ctx, want in ((48_000, (5, 3)), (1_000_000, (10, 10))):
            t = get(ctx, "tier append")
            for peer, goal in zip(
                ("fastokens full re-encode", "Gigatoken prewarmed"), want, strict=True
            ):
                ratio = get(ctx, peer) / t
                if not np.isnan(ratio):
                    boot = combined([reps(ctx, peer), reps(ctx, "tier append")], np.divide)
                    row(f"{peer} / tier append at {ctx:,}", float(ratio), goal, False, "×", boot)
    return out
