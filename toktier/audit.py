"""Audit any incremental tokenizer: how often does it serve IDs that are not the reference's?

Serving stacks now re-tokenize only the tail of a multi-turn prompt, each with its own
heuristic check.  ``audit`` runs such a method — any callable
``method(prev_text, prev_ids, new_text) -> ids`` or ``-> (ids, reused)`` (see
``toktier.baselines.incremental``) — through three workloads and compares every answer
with ``tok.reference(new_text)``:

- ``seam``: adversarial appends.  Each case is a long context plus a text built around a
  tokenizer pitfall (NFC composition across a run of marks, ``ignore_merges`` words, digit
  and whitespace runs, contractions, letter + punctuation, long pre-tokens, the repair
  campaign's fragments); the previous prompt ends at a random point inside the hot region
  and the new prompt continues it.
- ``replay``: real sessions, every call's prompt (the recorded trajectories through the
  tokenizer's chat template) — the latency and reuse figures come from here.
- ``rewrite``: the same sessions through a thinking template whose generation prefix
  (``<think>\\n`` after the assistant header) is replaced by the actual answer on the next
  turn, as NVIDIA/TensorRT-LLM PR #17462 documents: the previous prompt is no longer a
  literal prefix of the next.
- ``reasoning``: the rewrite, and the template shows the model's reasoning (recorded with
  the trajectories) only in the latest assistant turn, as templates that drop earlier
  reasoning do: each request removes the previous turn's ``<think>`` block from the middle
  of the prompt and appends the next turn with its own.  (The recorded Gemini summaries
  are sparse -- about 4% of assistant turns, mostly a session's first -- so most requests
  of this workload are the rewrite's; the rest are mid-prompt edits.)

Every divergence is kept with a shrunk reproducer (characters removed from the shared
context while the method still diverges).  A maintainer audits their own method with::

    import toktier
    from toktier.audit import audit

    def my_method(prev_text, prev_ids, new_text):
        ...  # your incremental encode
        return ids

    report = audit(my_method, toktier.load("qwen3"), seams=500)
    print(report.summary())
    for d in report.divergences[:3]:
        print(repr(d.prev_text), repr(d.new_text), d.first_diff)
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from .tier import Tier

Method = Callable[[str, np.ndarray, str], object]

# The seam generators of the LoPT counterexample search: each builds (text, hot_lo, hot_hi)
# around one pitfall, or None where the tokenizer has no such case.
_SEAM_SCALES = (8, 32, 128, 512)  # hot-region lengths (chars): 512 reaches 64-token back-offs


@dataclass
class Divergence:
    workload: str
    generator: str
    prev_text: str
    new_text: str
    first_diff: int  # index of the first differing ID
    expected: list[int]  # reference IDs around the first difference
    got: list[int]

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in
                ("workload", "generator", "prev_text", "new_text", "first_diff", "expected", "got")}  # fmt: skip


@dataclass
class AuditReport:
    method: str
    tokenizer: str
    cases: Counter = field(default_factory=Counter)  # per workload
    reused: Counter = field(default_factory=Counter)  # incremental path taken, per workload
    kept_ids: Counter = field(default_factory=Counter)  # IDs taken from the cache, per workload
    total_ids: Counter = field(default_factory=Counter)  # IDs served, per workload
    wrong: Counter = field(default_factory=Counter)  # divergent answers, per workload
    by_generator: Counter = field(default_factory=Counter)  # divergent seam cases per pitfall
    divergences: list[Divergence] = field(default_factory=list)  # shrunk, first few per kind
    latency_us: list[float] = field(default_factory=list)  # replay calls

    def summary(self) -> list[dict]:
        """One row per workload: cases, reuse rate, wrong answers, latency (replay)."""
        rows = []
        for w in sorted(self.cases):
            n = self.cases[w]
            row = {"method": self.method, "tokenizer": self.tokenizer, "workload": w,
                   "cases": n, "reused": self.reused[w], "reuse_rate": self.reused[w] / n,
                   "kept_id_share": self.kept_ids[w] / max(1, self.total_ids[w]),
                   "wrong": self.wrong[w], "wrong_rate": self.wrong[w] / n}  # fmt: skip
            if w == "replay" and self.latency_us:
                row["p50_us"] = statistics.median(self.latency_us)
                row["p99_us"] = float(np.percentile(self.latency_us, 99))
            rows.append(row)
        return rows


def _answer(out) -> tuple[np.ndarray, bool | None, int | None]:
    """(ids, took the incremental path, IDs kept from the cache) of a method's answer."""
    if isinstance(out, tuple) and len(out) == 2:
        ids, kept = out
        ids = np.asarray(ids, dtype=np.int64)
        if isinstance(kept, (bool, np.bool_)):
            return ids, bool(kept), None
        return ids, int(kept) > 0, int(kept)
    return np.asarray(out, dtype=np.int64), None, None


def _first_diff(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    neq = np.flatnonzero(a[:n] != b[:n])
    return int(neq[0]) if len(neq) else n


def _reset(method) -> None:
    r = getattr(method, "reset", None)
    if callable(r):
        r()


class TierMethod:
    """The tier itself as an incremental method (``Tier.encode`` on the full text, with a
    session): what the audit's other methods are compared with.  Kept IDs: the leading IDs
    equal to the session's previous result (``Result.keep``) when it repaired."""

    name = "toktier (certified repair)"

    def __init__(self, tok):
        self._tier = Tier(tok, verify_rate=0, delta_aware=False)
        self._text: str | None = None

    def reset(self) -> None:
        self._tier.close("audit")
        self._text = None

    def __call__(self, prev_text: str, prev_ids, new_text: str):
        if self._text != prev_text:
            self._tier.close("audit")
            self._tier.encode(prev_text, session="audit")
        r = self._tier.encode(new_text, session="audit")
        self._text = new_text
        return r.ids, (r.keep if r.path == "repair" else 0)


class ReferenceMemo:
    """``tok.reference`` as int64 arrays, remembered by text (at most ``limit`` texts).

    Every method of a ladder meets the same seam cases, so the reference IDs of a case
    are computed once per tokenizer instead of once per method.  A remembered answer is
    the reference's own answer for exactly that text: it cannot change a verdict.
    """

    def __init__(self, tok, limit: int = 4096):
        self.tok = tok
        self.limit = limit
        self._ids: dict[str, np.ndarray] = {}

    def __call__(self, text: str) -> np.ndarray:
        ids = self._ids.get(text)
        if ids is None:
            ids = np.asarray(self.tok.reference(text), dtype=np.int64)
            ids.setflags(write=False)  # shared by every method's check
            if len(self._ids) < self.limit:
                self._ids[text] = ids
        return ids


def _reference_of(tok, ref):
    return ref if ref is not None else (lambda text: np.asarray(tok.reference(text), np.int64))


def _check(method, tok, prev: str, new: str, prev_ids=None, ref=None):
    """(reused, ok, expected, got) for one call of ``method``."""
    ref = _reference_of(tok, ref)
    if prev_ids is None:
        prev_ids = ref(prev)
    got, reused, kept = _answer(method(prev, prev_ids, new))
    want = ref(new)
    return (reused, kept), bool(np.array_equal(got, want)), want, got


def shrink(method, tok, prev: str, new: str, *, budget: int = 200,
           ref=None) -> tuple[str, str]:  # fmt: skip
    """A smaller (prev, new) on which ``method`` still diverges: drop leading characters of
    the shared context (halving chunks, then single characters) while it still fails."""
    if not new.startswith(prev):
        return prev, new  # only appends shrink (cuts inside the shared context keep it shared)
    tries = 0
    chunk = max(1, len(prev) // 2)
    while chunk >= 1 and tries < budget:
        cut = 0
        progressed = False
        while cut + chunk <= len(prev) and tries < budget:
            p2 = prev[:cut] + prev[cut + chunk :]
            n2 = new[:cut] + new[cut + chunk :]
            if not p2:
                cut += chunk
                continue
            _reset(method)
            tries += 1
            _, ok, _, _ = _check(method, tok, p2, n2, ref=ref)
            if not ok:
                prev, new, progressed = p2, n2, True
            else:
                cut += chunk
        if not progressed:
            chunk //= 2
    _reset(method)
    return prev, new


def _record(report: AuditReport, method, tok, workload, gen, prev, new, want, got, *,
            shrink_it: bool, keep: int) -> None:  # fmt: skip
    report.wrong[workload] += 1
    if workload == "seam":
        report.by_generator[gen] += 1
    if sum(d.workload == workload and d.generator == gen for d in report.divergences) >= keep:
        return
    if shrink_it:
        prev, new = shrink(method, tok, prev, new)  # its texts are its own: not memoized
        _, _, want, got = _check(method, tok, prev, new)
        _reset(method)
    i = _first_diff(want, got)
    report.divergences.append(Divergence(workload, gen, prev, new, i,
                                         want[max(0, i - 2): i + 4].tolist(),
                                         got[max(0, i - 2): i + 4].tolist()))  # fmt: skip


SEAM_CONTEXT_CHARS = 5000


def seam_context_chars(method) -> int:
    """The seam search's context length for ``method``: 5,000 characters, or more for a
    method that only splices prompts of at least ``method.min_chars`` characters."""
    floor = int(getattr(method, "min_chars", 0) or 0)
    return SEAM_CONTEXT_CHARS if floor < SEAM_CONTEXT_CHARS else floor + 1000


def seam_cases(
    tok, n: int, seed: int = 0, context_chars: int = SEAM_CONTEXT_CHARS
) -> Iterable[tuple]:
    """``n`` adversarial (generator, prev, new): a context of ``context_chars`` characters
    (above the method's minimum prompt size), then a pitfall text cut inside its hot
    region, continued by a few words.  The pitfall texts and cuts depend on ``seed`` only,
    not on ``context_chars``: every method meets the same pitfalls."""
    from .campaigns import lopt_search as ls

    rng = random.Random(seed)
    gens = dict(ls._GEN)  # the pitfall generators of the LoPT search (one source)
    words = ("alpha", "The", "value", "résumé", "def", "Über", "self", "word", "x", "na")
    header = _user_header(tok.name)  # real prompts open with the template's special tokens
    context = [header]
    ctx_rng = random.Random(f"context-{seed}")
    while sum(map(len, context)) < context_chars:
        context.append(ctx_rng.choice(words) + ctx_rng.choice((" ", " ", "\n", ", ")))
    context = "".join(context)
    names = sorted(gens)
    made = 0
    attempts = 0
    while made < n and attempts < 20 * n:
        attempts += 1
        name = names[attempts % len(names)]
        got = gens[name](rng, tok, rng.choice(_SEAM_SCALES))
        if got is None:
            continue
        text, lo, hi = got
        cut = rng.randint(max(1, lo), max(1, min(hi, len(text) - 1)))
        tail = " " + rng.choice(words)
        yield name, context + text[:cut], context + text + tail
        made += 1


def _user_header(tok_name: str) -> str:
    from .workload.templates import template_for

    return template_for(tok_name)("user", "\x00").split("\x00")[0]


def _thinking_prefix(tok_name: str) -> tuple[str, str]:
    """(assistant header, generation prefix) of a thinking template for this tokenizer."""
    from .workload.templates import template_for

    header = template_for(tok_name)("assistant", "\x00").split("\x00")[0]
    return header, header + "<think>\n"


WORKLOADS = ("replay", "rewrite", "reasoning")  # session workloads (after the seam search)


def session_prompts(tok, trajectories, *, rewrite: bool = False,
                    reasoning: bool = False) -> Iterable[list[str]]:  # fmt: skip
    """Per session, every call's prompt; with ``rewrite`` each prompt ends with a thinking
    template's generation prefix, which the next prompt replaces by the actual answer; with
    ``reasoning`` (implies ``rewrite``) the latest assistant turn also shows its reasoning
    as ``<think>\n…\n</think>\n\n`` before its answer, and earlier turns drop theirs."""
    from .workload.templates import render_segments, template_for

    _, gen = _thinking_prefix(tok.name)
    tpl = template_for(tok.name)
    for traj in trajectories:
        msgs = traj.messages
        segs = render_segments(msgs, tok.name)
        out = []
        for call in traj.calls:
            p = "".join(segs[: call.prompt_messages])
            if reasoning:
                last = max((i for i in range(call.prompt_messages)
                            if msgs[i].role == "assistant"), default=-1)  # fmt: skip
                if last >= 0 and msgs[last].reasoning:
                    m = msgs[last]
                    shown = tpl(m.role, f"<think>\n{m.reasoning}\n</think>\n\n{m.content}")
                    p = (
                        "".join(segs[:last])
                        + shown
                        + "".join(segs[last + 1 : call.prompt_messages])
                    )
            out.append(p + gen if (rewrite or reasoning) else p)
        yield out


@dataclass
class SessionInputs:
    """Every session workload's prompts and their reference IDs for one tokenizer and one
    set of trajectories: the same for every audited method, so a ladder builds them once
    per tokenizer (``session_inputs``) instead of once per method."""

    tokenizer: str
    workloads: dict[str, list[tuple[list[str], list[np.ndarray]]]]  # per session


def _workload_kwargs(rewrite: bool, reasoning: bool) -> list[tuple[str, dict]]:
    return (
        [("replay", {})]
        + ([("rewrite", {"rewrite": True})] if rewrite else [])
        + ([("reasoning", {"reasoning": True})] if reasoning else [])
    )


def session_inputs(tok, trajectories, *, rewrite: bool = True,
                   reasoning: bool = True) -> SessionInputs:  # fmt: skip
    """The prompts of every session workload and the reference's IDs for each (read-only
    arrays: every method's check reads the same ones)."""
    out = {}
    for workload, kw in _workload_kwargs(rewrite, reasoning):
        sessions = []
        for prompts in session_prompts(tok, trajectories, **kw):
            wants = [np.asarray(e.ids, dtype=np.int64)
                     for e in tok.hf.encode_batch(prompts, add_special_tokens=False)]  # fmt: skip
            for w in wants:
                w.setflags(write=False)
            sessions.append((prompts, wants))
        out[workload] = sessions
    return SessionInputs(tok.name, out)


def audit(method: Method, tok, *, seams: int = 200, trajectories=(), rewrite: bool = True,
          reasoning: bool = True, seed: int = 0, shrink_divergences: bool = True,
          keep: int = 3, progress: bool = False, name: str | None = None,
          inputs: SessionInputs | None = None,
          reference: ReferenceMemo | None = None) -> AuditReport:  # fmt: skip
    """Run ``method`` through the seam search, the replay of ``trajectories`` and (with
    ``rewrite``, ``reasoning``) their rewritten-history renderings; every answer is checked.

    ``inputs`` (``session_inputs`` of the same tokenizer, trajectories and workloads) and
    ``reference`` (a ``ReferenceMemo`` of the same tokenizer) let several audits share the
    reference's work; the answers are the same without them.
    """
    report = AuditReport(name or getattr(method, "name", getattr(method, "__name__", "method")),
                         tok.name)  # fmt: skip
    if inputs is None:
        inputs = session_inputs(tok, trajectories, rewrite=rewrite, reasoning=reasoning)
    elif inputs.tokenizer != tok.name:
        raise ValueError(f"session inputs of {inputs.tokenizer!r} given for {tok.name!r}")
    if reference is not None and reference.tok is not tok:
        raise ValueError("the reference memo belongs to another tokenizer")
    cases = list(seam_cases(tok, seams, seed, seam_context_chars(method)))
    for gen, prev, new in tqdm(cases, desc=f"seams {report.method}", disable=not progress or None):
        _reset(method)
        (reused, kept), ok, want, got = _check(method, tok, prev, new, ref=reference)
        report.cases["seam"] += 1
        report.reused["seam"] += bool(reused)
        report.kept_ids["seam"] += kept or 0
        report.total_ids["seam"] += len(want)
        if not ok:
            _record(report, method, tok, "seam", gen, prev, new, want, got,
                    shrink_it=shrink_divergences, keep=keep)  # fmt: skip
    for workload, _ in _workload_kwargs(rewrite, reasoning):
        if workload not in inputs.workloads:
            raise ValueError(f"the session inputs lack the {workload!r} workload")
        for prompts, wants in tqdm(inputs.workloads[workload], desc=f"{workload} {report.method}",
                                   disable=not progress or None):  # fmt: skip
            _reset(method)
            prev, prev_ids = "", np.empty(0, np.int64)
            for p, want in zip(prompts, wants, strict=True):
                t0 = time.perf_counter_ns()
                got, reused, kept = _answer(method(prev, prev_ids, p))
                dt = (time.perf_counter_ns() - t0) / 1e3
                if prev:  # the first call of a session has nothing to reuse
                    report.cases[workload] += 1
                    report.reused[workload] += bool(reused)
                    report.kept_ids[workload] += kept or 0
                    report.total_ids[workload] += len(want)
                    if workload == "replay":
                        report.latency_us.append(dt)
                    if not np.array_equal(got, want):
                        _record(report, method, tok, workload, "session", prev, p, want, got,
                                shrink_it=False, keep=keep)  # fmt: skip
                prev, prev_ids = p, want
    return report


SWEEP = {  # each method's main parameter: published default first
    "trtllm-prefix-cache": (64, 8, 16, 32, 128),  # overlap tokens (resync = overlap / 2)
    "trtllm-boundary": (1, 0, 2, 4, 8),  # rollback tokens
    "vllm-incremental": (96, 0, 8, 32),  # margin characters (seam and overlap check)
}
PUBLISHED = ("special-boundary", "trtllm-exact-prefix", "trtllm-prefix-cache", "trtllm-boundary",
             "vllm-incremental", "toktier")  # fmt: skip


def method_names(sweep: bool) -> list[str]:
    """The methods of the ladder: published defaults, plus the parameter sweeps."""
    out = list(PUBLISHED)
    if sweep:
        out += [f"{m}@{v}" for m, vals in SWEEP.items() for v in vals[1:]]
    return out


def parse_method_name(n: str) -> tuple[str, int | None]:
    """(base name, parameter or None) of a built-in method's ``name[@value]``; ValueError
    for a name the ladder does not know."""
    base, _, val = n.partition("@")
    if base not in PUBLISHED or (val and base not in SWEEP):
        raise ValueError(f"unknown method {n!r}; known: {sorted(PUBLISHED)} "
                         f"(name@value for {sorted(SWEEP)})")  # fmt: skip
    try:
        return base, (int(val) if val else None)
    except ValueError:
        raise ValueError(f"{n!r}: the value after @ must be an integer") from None


def methods(tok, names: Iterable[str] | None = None) -> dict[str, Method]:
    """The clean-room reproductions (``toktier.baselines``) and the tier, by short name;
    ``name@value`` sets the method's main parameter (``SWEEP``); ``module:factory`` is a
    user's own method (``factory(tok)`` returns the callable)."""
    from .baselines.special_boundary import SpecialTokenBoundary
    from .baselines.trtllm_boundary import BoundaryRollback, ExactPrefixSuffix
    from .baselines.trtllm_prefix_cache import TrtllmPrefixCache
    from .baselines.vllm_incremental import VllmIncremental

    makers = {
        "special-boundary": lambda v: SpecialTokenBoundary(tok),
        "trtllm-prefix-cache": lambda v: (TrtllmPrefixCache(tok) if v is None else
                                          TrtllmPrefixCache(tok, overlap=v, resync=max(1, v // 2))),
        "trtllm-exact-prefix": lambda v: ExactPrefixSuffix(tok),
        "trtllm-boundary": lambda v: BoundaryRollback(tok, *(() if v is None else (v,))),
        "vllm-incremental": lambda v: (VllmIncremental(tok) if v is None else
                                       VllmIncremental(tok, margin_chars=v)),
        "toktier": lambda v: TierMethod(tok),
    }  # fmt: skip
    names = list(PUBLISHED) if names is None else list(names)
    out = {}
    for n in names:
        if ":" in n:  # a user's own method: module:factory, factory(tok) -> method
            import importlib

            mod, _, attr = n.partition(":")
            try:
                factory = getattr(importlib.import_module(mod), attr)
            except (ImportError, AttributeError) as e:
                raise ValueError(f"cannot import {n!r}: {e}") from None
            out[n] = factory(tok)
            continue
        base, v = parse_method_name(n)
        out[n] = makers[base](v)
    return out


class _LadderJobs:
    """Runs ladder jobs (tokenizer, method) in one process, sharing the reference's work
    across the methods of the tokenizer met last (its session inputs and seam answers)."""

    def __init__(self, trajectories, seams: int, seed: int):
        self.trajectories = trajectories
        self.seams = seams
        self.seed = seed
        self._name: str | None = None

    def _shared(self, name: str):
        if self._name != name:
            from .registry import load

            tok = load(name)
            self._tok, self._ref = tok, ReferenceMemo(tok)
            self._inputs = session_inputs(tok, self.trajectories)
            self._name = name
        return self._tok, self._inputs, self._ref

    def __call__(self, t: str, m: str) -> tuple[list, list, list]:
        tok, inputs, ref = self._shared(t)
        method = methods(tok, [m])[m]
        rep = audit(method, tok, seams=self.seams, trajectories=self.trajectories,
                    seed=self.seed, name=m, inputs=inputs, reference=ref)  # fmt: skip
        rows = [dict(r, label=getattr(method, "name", m)) for r in rep.summary()]
        generators = [{"method": m, "tokenizer": t, "generator": g, "wrong": k}
                      for g, k in sorted(rep.by_generator.items())]  # fmt: skip
        divergences = [dict(d.to_dict(), method=m, tokenizer=t) for d in rep.divergences]
        return rows, generators, divergences


_WORKER_JOBS: _LadderJobs | None = None  # a ladder worker process's job runner


def _worker_init(trajectories, seams: int, seed: int) -> None:
    global _WORKER_JOBS
    _WORKER_JOBS = _LadderJobs(trajectories, seams, seed)


def _worker_job(t: str, m: str):
    return _WORKER_JOBS(t, m)


def ladder(tok_names, method_list, *, seams: int, trajectories, seed: int = 0,
           progress: bool = True, workers: int = 1) -> dict:  # fmt: skip
    """The guarantee ladder: every method on every tokenizer, the same inputs for all.

    ``workers`` > 1 runs the (tokenizer, method) jobs in that many processes (spawned:
    no fork after the tokenizers' and numba's threads).  Every count, reproducer and
    verdict is the same for any ``workers`` (each job is deterministic given its seed);
    only the replay latencies are measured beside the other workers' jobs.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    for m in method_list:  # unknown names fail here, before any worker starts
        if ":" not in m:
            parse_method_name(m)
    jobs = [(t, m) for t in tok_names for m in method_list]
    bar = tqdm(total=len(jobs), desc="audit", unit="method", disable=not progress or None)
    results: list = [None] * len(jobs)
    if workers == 1 or len(jobs) <= 1:
        run = _LadderJobs(trajectories, seams, seed)
        for k, (t, m) in enumerate(jobs):
            bar.set_postfix_str(f"{t} {m}")
            results[k] = run(t, m)
            bar.update()
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed
        from multiprocessing import get_context

        with ProcessPoolExecutor(max_workers=min(workers, len(jobs)),
                                 mp_context=get_context("spawn"), initializer=_worker_init,
                                 initargs=(list(trajectories), seams, seed)) as pool:  # fmt: skip
            futures = {pool.submit(_worker_job, t, m): k for k, (t, m) in enumerate(jobs)}
            try:
                for f in as_completed(futures):
                    k = futures[f]
                    results[k] = f.result()
                    bar.set_postfix_str(" ".join(jobs[k]))
                    bar.update()
            except BaseException:
                pool.shutdown(cancel_futures=True)  # a failed job fails the ladder now
                raise
    bar.close()
    rows, generators, divergences = [], [], []
    for r, g, d in results:
        rows += r
        generators += g
        divergences += d
    return {"rows": rows, "generators": generators, "divergences": divergences,
            "seams": seams, "seed": seed,
            "sessions": len(trajectories)}  # fmt: skip


def tables(result: dict):
    """The ladder's tables: per (tokenizer, method, workload) rows, per-pitfall wrong
    counts, and the shrunk reproducers (text escaped as ``ascii`` so CSVs stay readable)."""
    import pandas as pd

    rows = pd.DataFrame(result["rows"])
    gens = pd.DataFrame(result["generators"], columns=["method", "tokenizer", "generator", "wrong"])
    div = pd.DataFrame(result["divergences"])
    if len(div):
        div["prev_chars"] = div.prev_text.str.len()
        div["new_chars"] = div.new_text.str.len()
        for c in ("prev_text", "new_text"):
            div[c] = div[c].map(lambda s: ascii(s)[1:-1])
    return rows, gens, div


def summary_table(rows, tokenizers):
    """The ladder in one table (the README's): per method, wrong answers in the seam search
    per tokenizer, wrong answers on the session workloads (all tokenizers), the median share
    of IDs reused on the replay and under a rewritten history, and the median replay P50 (ms)
    over tokenizers."""

    order = list(dict.fromkeys(rows.method))
    seam = rows[rows.workload == "seam"].pivot(index="method", columns="tokenizer", values="wrong")
    out = seam.reindex(order)[list(tokenizers)].fillna(0).astype(int)
    sessions = rows[rows.workload != "seam"].groupby("method").wrong.sum()
    out["session workloads wrong"] = sessions.reindex(order).fillna(0).astype(int)
    for workload, col in (("replay", "IDs reused, replay"),
                          ("rewrite", "IDs reused, rewritten history")):  # fmt: skip
        kept = rows[rows.workload == workload].groupby("method").kept_id_share.median()
        out[col] = kept.reindex(order)
    lat = rows[rows.workload == "replay"].groupby("method").p50_us.median() / 1000
    out["replay P50 (ms)"] = lat.reindex(order)
    out.index.name, out.columns.name = "method", None
    return out.reset_index()


def verdicts(rows) -> list[dict]:
    """Per method: wrong answers on every workload and tokenizer, and where it was exact —
    what a serving engineer should conclude (exact in this search is not a proof)."""
    out = []
    for m, g in rows.groupby("method", sort=False):
        wrong = g.groupby("tokenizer").wrong.sum()
        out.append({
            "method": m,
            "wrong answers": int(wrong.sum()),
            "cases": int(g.cases.sum()),
            "tokenizers with a wrong answer": ", ".join(wrong[wrong > 0].index) or "none",
            "exact in this search on": ", ".join(wrong[wrong == 0].index) or "none",
        })  # fmt: skip
    return out
