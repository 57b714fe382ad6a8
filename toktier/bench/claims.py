"""CLAIMS.md computed from a results tree: the paper's value, ours, and a verdict by a stated rule.

Each claim reads the tables (and run files) an experiment wrote and formats *our* value from
them; its verdict comes from a rule written next to it (``Claim.rule``) and evaluated on the
same numbers, so the claims table can never drift from the evidence.  What is typed here is
only what the results cannot say: the paper's value (from the paper's tables and text) and
the claim's wording.  A claim whose table is missing from the tree (a kick-the-tires run
covers fewer experiments) says so instead of guessing.

``write_claims(results_dir, out)`` renders the markdown; ``toktier claims`` and the workflow's
``claims`` rule call it.  The committed ``CLAIMS.md`` is this function applied to the
committed evidence (``results/``), checked by a test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from toktier.bench.gpu_report import short_gpu
from toktier.bench.tail_capacity import capacity


class Missing(Exception):
    """A table or run file the claim needs is not in this results tree."""


class Results:
    """Lazy, cached access to one results tree's tables and run files."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._cache: dict[str, object] = {}

    def table(self, name: str) -> pd.DataFrame:
        if name not in self._cache:
            p = self.root / "tables" / name
            if not p.is_file():
                raise Missing(f"tables/{name}")
            self._cache[name] = pd.read_csv(p)
        return self._cache[name]

    def run(self, name: str) -> dict:
        if name not in self._cache:
            p = self.root / "runs" / name
            if not p.is_file():
                raise Missing(f"runs/{name}")
            self._cache[name] = json.loads(p.read_text())
        return self._cache[name]

    def machines(self, names: tuple[str, ...]) -> list[str]:
        """'cpu × cores @ commit' of each run file present (provenance, never judged)."""
        out = []
        for n in names:
            paths = sorted((self.root / "runs").glob(n))
            for p in paths:
                try:
                    d = json.loads(p.read_text())
                except (OSError, ValueError):
                    continue
                m = d.get("machine") or {} if isinstance(d, dict) else {}
                cpu, cid = m.get("cpu", "?"), m.get("cpu_id") or {}
                if cid.get("family"):  # a VM's model name ("AMD EPYC") names no generation
                    cpu += f" (family {cid['family']} model {cid.get('model', '?')})"
                desc = f"{cpu} × {m.get('cores', '?')}"
                gpu = d.get("gpu") if isinstance(d, dict) else None
                if isinstance(gpu, dict) and gpu.get("gpu"):
                    desc += f" + {gpu['gpu']}"
                commit = m.get("commit")
                if commit:
                    dirty = "+dirty" if str(commit).endswith("dirty") else ""
                    out.append(f"{desc} @ {str(commit)[:7]}{dirty}")
                else:
                    out.append(f"{desc} (commit not recorded)")
        return sorted(set(out))


@dataclass(frozen=True)
class Verdict:
    text: str
    ok: bool | None  # True: reproduced / met; False: missed; None: partial or not judged


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    source: str
    paper: str
    rule: str
    evaluate: Callable[[Results], tuple[str, Verdict]] | None = None
    static: tuple[str, str] | None = None  # (ours, verdict) for claims no run produces
    runs: tuple[str, ...] = field(default_factory=tuple)
    note: str = ""  # why, where to read more: words only, never a result (those are computed)


def _n(x: float, digits: int = 0) -> str:
    """A number with thousands separators."""
    return f"{x:,.{digits}f}"


def _ms(x: float) -> str:
    """Milliseconds with 3 significant figures (no scientific notation)."""
    if x >= 100:
        return _n(x)
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def _join(xs) -> str:
    return "/".join(xs)


def _size(chars: int) -> str:
    return f"{chars / 1e6:g}M" if chars >= 1_000_000 else f"{chars / 1e3:g}K"


# --- the claims ---------------------------------------------------------------------------


def _workload(r: Results):
    s = r.table("workload-summary.csv").set_index("metric")["value"]
    d, n = float(s["delta_chars_median"]), float(s["n_chars_median"])
    ours = (f"{_n(s['sessions'])} sessions, {_n(s['calls'])} calls; median Δ {_n(d)} chars, "
            f"median N {_n(n)} chars (N/Δ {n / d:.0f}); {s['calls_per_session_median']:.0f} "
            f"calls/session; {s['share_no_reusable_prefix']:.1%} of calls without a reusable "
            "prefix")  # fmt: skip
    ok = n / d >= 10
    return ours, Verdict("shape reproduced (Δ ≪ N)" if ok else "not reproduced: Δ is not ≪ N", ok)


def _conversion(r: Results):
    t = r.table("conversion-certification.csv")
    bad = int(t.mismatches.sum() + t.vocab_mismatches.sum())
    ours = (f"{bad} mismatches on {t.characters.min() / 1e6:.2f}M–{t.characters.max() / 1e6:.2f}M "
            f"chars × {len(t)} converted tokenizers ({', '.join(t.tokenizer)}) + "
            f"{_n(t.vocab_entries_checked.sum())} vocabulary entries")  # fmt: skip
    if bad:
        return ours, Verdict(f"**{bad} mismatches**", False)
    if t.characters.min() < 10_000_000:
        return ours, Verdict("certified at a reduced size (full config: ≥ 10M chars)", None)
    return ours, Verdict("certified", True)


def _repair_cert(r: Results):
    t = r.table("repair-certification.csv")
    bad = int(t.oracle_failures.sum() + t.adversarial_mismatches.sum() + t.replay_mismatches.sum())
    scen = t.adversarial_appends + t.adversarial_edits
    planned = (
        int(t.adversarial_plan_comparisons.sum()) if "adversarial_plan_comparisons" in t else 0
    )
    ours = (f"{bad} divergences — oracle {_n(t.oracle_trials.sum())} trials over "
            f"{_n(t.oracle_pairs.sum())} claimed class pairs; {_n(scen.sum())} adversarial "
            f"appends + edits (≥ {_n(scen.min())} per tokenizer), {_n(planned)} of them also "
            "planned by the Python reference plan with the same route, splice points and kept "
            f"prefix; replay of {_join(_n(x) for x in sorted(set(t.replay_calls)))} calls "
            f"({_join(str(x) for x in sorted(set(t.replay_sessions)))} sessions) × {len(t)} "
            f"tokenizers ({', '.join(t.tokenizer)})")  # fmt: skip
    if bad:
        return ours, Verdict(f"**{bad} divergences**", False)
    if planned != int(scen.sum()):
        return ours, Verdict("0 divergences; not every adversarial case was planned twice", None)
    if t.replay_sessions.min() < 500:
        return ours, Verdict("0 divergences at a reduced size (full config: all 500 sessions)",
                             None)  # fmt: skip
    return ours, Verdict("reproduced for repair", True)


_ENGINE_DIV = ("split_divergences", "id_divergences", "ids_only_divergences",
               "parallel_divergences", "parts_divergences", "cut_divergences")  # fmt: skip


def _engine_cert(r: Results):
    t = r.table("engine-certification.csv")
    bad = int(t[[c for c in _ENGINE_DIV if c in t]].sum().sum())
    all_cps = bool((t.codepoints_covered >= 1_112_064).all())
    ours = (f"CPU: {bad} split / ID+span / ids-only / parallel / cut divergences for {len(t)} tokenizers "
            f"({', '.join(t.tokenizer)}), {t.id_chars.min() / 1e6:.1f}M–"
            f"{t.id_chars.max() / 1e6:.1f}M chars each, {_n(t.cuts_checked.min())}–"
            f"{_n(t.cuts_checked.max())} certified cuts, "
            f"{'all 1,112,064 code points' if all_cps else 'a sample of code points'}")  # fmt: skip
    try:
        g = r.table("engine-certification-gpu.csv")
        gbad = int(g.divergences.sum())
        gpus = ", ".join(sorted(set(g.gpu.astype(str))))
        ours += (f"; GPU ({gpus}): {gbad} divergences in {len(g)} campaigns of "
                 f"{g.tokenizer.nunique()} tokenizers, "
                 f"{g.id_chars.min() / 1e6:.1f}M–{g.id_chars.max() / 1e6:.1f}M ID chars and "
                 f"{_n(g.cuts_checked.min())}–{_n(g.cuts_checked.max())} cuts each")  # fmt: skip
    except Missing:
        gbad = 0
        ours += "; GPU: not run in this tree (CUDA simulator tests only)"
    if bad or gbad:
        return ours, Verdict(f"**{bad + gbad} divergences**", False)
    if not all_cps or t.id_chars.min() < 10_000_000:
        return ours, Verdict("0 divergences at a reduced size", None)
    return ours, Verdict("reproduced", True)


def _repair_latency(r: Results):
    t = r.table("repair-latency.csv")
    tk = t[t.method == "toktier repair"].sort_values("context")
    ctx = list(tk.context)
    ours = (f"toktier repair P50 {_join(_ms(x) for x in tk.p50_ms)} ms at "
            f"{_join(_size(c) for c in ctx)} chars")  # fmt: skip
    for m in ("Gigatoken prewarmed", "fastokens full re-encode", "HF full re-encode"):
        p = t[t.method == m].set_index("context").reindex(ctx).p50_ms
        if p.notna().any():
            ours += f"; {m} {_join(_ms(x) for x in p)}"
    paper = tk.set_index("context").paper_p50_ms.dropna()
    flat = float(tk.p50_ms.max() / tk.p50_ms.min())
    ours += f" (max/min of repair over contexts {flat:.1f}×)"
    beat = (
        bool((tk.set_index("context").p50_ms[paper.index] <= paper).all()) if len(paper) else None
    )
    giga = t[t.method == "Gigatoken prewarmed"].set_index("context").p50_ms
    ratio = (giga / tk.set_index("context").p50_ms).dropna()
    if len(ratio):
        ours += f"; {ratio.min():.1f}–{ratio.max():.0f}× faster than Gigatoken prewarmed"
    try:  # the same protocol for the families of issue #16 (beyond the paper)
        fam = r.table("repair-latency-families.csv")
        fam = fam[fam.method == "toktier repair"]
        for name, g in fam.groupby("tokenizer", sort=False):
            ours += (f"; {name} repair {_ms(g.p50_ms.min())}–{_ms(g.p50_ms.max())} ms "
                     f"({g.p50_ms.max() / g.p50_ms.min():.1f}×)")  # fmt: skip
    except Missing:
        pass
    ok = flat <= 2 and bool(beat)
    return ours, Verdict(
        "reproduced and flat in context" if ok else
        ("flat in context" if flat <= 2 else "not flat in context")
        + ("" if beat else "; slower than the paper's P50 somewhere"), ok)  # fmt: skip


def _first_window(r: Results):
    t = r.table("repair-certification.csv")
    cont = t.replay_calls - t.replay_sessions
    ok = bool((t.replay_first_window == cont).all() and (t.replay_fallbacks == 0).all())
    ours = (f"{_join(_n(x) for x in sorted(set(t.replay_first_window)))} / "
            f"{_join(_n(x) for x in sorted(set(cont)))} replayed continuations on the first "
            f"window for {len(t)} tokenizers; {int(t.replay_widened.sum())} widenings, "
            f"{int(t.replay_fallbacks.sum())} fallbacks")  # fmt: skip
    return ours, Verdict("reproduced" if ok else "not every continuation on the first window", ok)


def _delta_sweep(r: Results):
    t = r.table("delta-sweep.csv")
    rep = t[t.method == "toktier repair"].pivot_table(index="delta", columns="context",
                                                      values="p50_ms")  # fmt: skip
    giga = t[t.method == "Gigatoken prewarmed"].pivot_table(index="delta", columns="context",
                                                            values="p50_ms")  # fmt: skip
    parts = []
    for n in rep.columns:
        parts.append(f"N = {_size(n)}: repair {_join(_ms(x) for x in rep[n])} ms")
    ds = _join(_size(d) for d in rep.index)
    mbs = t[(t.method == "toktier repair") & (t.delta >= 10_000)].mb_per_s
    ours = (f"Δ = {ds}: " + "; ".join(parts) +
            (f"; Gigatoken prewarmed {giga.min().min():.2f}–{giga.max().max():.2f} ms"
             if len(giga) else "") +
            (f"; repair {mbs.min():.0f}–{mbs.max():.0f} MB/s at Δ ≥ 10K" if len(mbs) else ""))  # fmt: skip
    lo, hi = rep.columns.min(), rep.columns.max()
    flat = bool((rep[hi] / rep[lo]).between(0.5, 2).all()) if hi != lo else None
    grows = bool(rep.iloc[-1].min() >= 5 * rep.iloc[0].max())
    wins = bool((rep[hi] < giga[hi]).all()) if hi in giga else None
    ok = bool(flat) and grows
    text = ", ".join([
        "flat in N" if flat else ("one N only" if flat is None else "not flat in N"),
        "grows with Δ" if grows else "does not grow with Δ",
        *([f"beats Gigatoken prewarmed at every Δ at N = {_size(hi)}" if wins else
           f"loses to Gigatoken prewarmed at some Δ at N = {_size(hi)}"] if wins is not None else []),
    ])  # fmt: skip
    return ours, Verdict(("shape reproduced: " if ok else "") + text, ok)


def _continuation(r: Results):
    lat = r.table("continuation-latency.csv")
    tg = r.table("continuation-targets.csv")
    ap = lat[lat.method == "tier append"]
    cells = []
    for (tok, corp), g in ap.groupby(["tokenizer", "corpus"]):
        g = g.sort_values("context")
        cells.append(f"{tok} {corp} {_join(_n(x) for x in g.p50_us)}")
    ctx = _join(_size(c) for c in sorted(set(ap.context)))
    ours = (f"1,100-char continuation, `append` P50 µs at N = {ctx}: " + "; ".join(cells) +
            f"; every tier result exact: {bool(lat.exact.dropna().astype(bool).all())}")  # fmt: skip
    kinds = {
        "≤ 50 µs at 12K–200K": tg.target.str.startswith("tier append: P50, contexts"),
        "the full-text API ≤ 50 µs there": tg.target.str.startswith("tier full text: P50, contexts"),
        "flat (8M / 48K ≤ 1.5×)": tg.target.str.contains("/ P50 at 48K"),
        "≥ 5× fastokens and ≥ 3× Gigatoken at 48K": tg.target.str.endswith("at 48,000"),
        "≥ 10× both at 1M": tg.target.str.endswith("at 1,000,000"),
    }
    parts = []
    for label, sel in kinds.items():
        s = tg[sel]
        if len(s):
            text = f"{label}: {int(s.met.sum())} of {len(s)} met"
            if "verdict" in s.columns:  # the run's 95% bootstrap intervals (``targets``)
                counts = s.verdict.value_counts()
                said = [f"{counts[v]} {v}" for v in ("met", "within noise", "missed") if v in counts]
                text += f" ({', '.join(said)} by the interval)"
            parts.append(text)
    ok = bool(tg.met.all())
    return ours, Verdict("; ".join(parts), True if ok else (None if tg.met.any() else False))


def _full_cpu(r: Results):
    t = r.table("full-tokenization.csv")
    tok = "qwen3" if "qwen3" in set(t.tokenizer) else t.tokenizer.iloc[0]
    t = t[t.tokenizer == tok]
    sizes = sorted(set(t.chars))
    parts = []
    for m, g in t.groupby("method", sort=False):
        p = g.set_index("chars").reindex(sizes).p50
        parts.append(f"{m} {_join(_ms(x) if pd.notna(x) else '—' for x in p)}")
    ours = f"{tok}, {_join(_size(s) for s in sizes)} chars, P50 ms: " + "; ".join(parts)
    hf = t[t.method.str.startswith("HF")].set_index("chars").p50
    tt = t[t.method == "toktier CPU, all cores"].set_index("chars").p50
    beats_hf = bool((tt < hf.reindex(tt.index)).all())
    full = r.table("full-tokenization.csv")
    for other in sorted(set(full.tokenizer) - {tok}):
        o = full[(full.tokenizer == other) & (full.chars == 1_000_000)]
        if other.startswith("mistral-sp") and len(o):  # the SentencePiece engine (issue #16)
            cells = ", ".join(f"{m} {_ms(p)}" for m, p in zip(o.method, o.p50, strict=True))
            ours += f"; {other} (SentencePiece) at 1M, P50 ms: {cells}"
    verdict = "toktier CPU faster than HF at every size" if beats_hf else "slower than HF somewhere"
    ok = beats_hf
    try:
        from .engine_targets import TARGETS, judged_cells

        e = r.table("engine-targets.csv")
        goal = {col: g for col, g, _ in TARGETS}
        # the grid's own rule (``judged_cells``): cells without the peer (neither Gigatoken
        # nor fastokens takes WordPiece) do not count, the all-cores targets only at >= 1M
        met = {
            label: judged_cells(d, col)[col] >= goal[col]
            for label, col, d in (
                ("1 thread ≤ Gigatoken empty at ≥ 1M", "1t_vs_gigatoken", e[e.chars >= 1_000_000]),
                ("≥ 20× HF on every text", "1t_vs_hf", e),
                ("all cores ≤ fastokens at ≥ 1M", "all_vs_fastokens", e),
                ("two cores ≥ 1.8× one thread at ≥ 1M", "parallel_speedup", e),
            )
        }
        verdict += "; issue #12's targets (cells met): " + ", ".join(
            f"{k} {int(v.sum())} of {len(v)}" for k, v in met.items())  # fmt: skip
        ok = ok and all(bool(v.all()) for v in met.values())
    except Missing:
        pass
    try:
        g = r.table("full-tokenization-gpu.csv")
        g1 = g[(g.chars == 1_000_000) & (g.method == "toktier GPU, arrays")]
        gg = g[(g.chars == 1_000_000) & (g.method.str.startswith("Gigatoken"))]
        # the paper's GPU row is qwen3: judge on it when it was run, list every tokenizer
        toks = sorted(set(g1.tokenizer) & set(gg.tokenizer), key=lambda t: (t != "qwen3", t))
        if toks:
            parts, judged = [], None
            for tok in toks:
                # one entry per run (GPU and commit); the paper's row judged on its best run,
                # among the runs where every method paid its own UTF-8 conversion when any did
                rows = g1[g1.tokenizer == tok]
                if "fresh_str" not in rows:
                    rows = rows.assign(fresh_str=False)
                rows = rows.assign(cached=~rows.fresh_str.fillna(False).astype(bool))
                for _, tk in rows.sort_values(["cached", "p50"]).iterrows():
                    gr = gg[(gg.tokenizer == tok) & (gg.file == tk.file)]
                    if not len(gr):
                        continue
                    giga = float(gr.p50.iloc[0])
                    cached = ", UTF-8 cached" if tk.cached else ""
                    parts.append(f"{tok} {short_gpu(tk.gpu)} @{tk.commit}{cached} {_ms(tk.p50)} "
                                 f"ms, {giga / tk.p50:.1f}× Gigatoken empty ({_ms(giga)} ms)")  # fmt: skip
                    judged = judged or (tk, giga / tk.p50)
            tk, ratio = judged
            ours += "; GPU (default engine, 1M chars, P50): " + "; ".join(parts)
            gpu_ok = tk.p50 <= 0.87 and ratio >= 7
            verdict += (f"; GPU ({tk.tokenizer}, best run{', UTF-8 cached' if tk.cached else ''}): paper's 0.87 ms at 1M and ≥ 7× "
                        "Gigatoken " + ("met" if gpu_ok else f"missed ({tk.p50 / 0.87:.1f}× "
                                        f"slower, {ratio:.1f}×)"))  # fmt: skip
            ok = ok and gpu_ok
    except Missing:
        pass
    return ours, Verdict(verdict, True if ok else (None if beats_hf else False))


def _gpu_throughput(r: Results):
    t = r.table("gpu-throughput.csv")
    if "repeats" in t:  # best of >= 2 passes (records without the field: their default, 2)
        t = t[t.repeats.fillna(2) >= 2]
    ids, pre = t[t["mode"] == "ids"], t[t["mode"] == "pretokenize"]
    ours = (f"{', '.join(sorted(set(t.gpu.astype(str))))}: IDs {ids.gb_per_s.min():.3f}–"
            f"{ids.gb_per_s.max():.2f} GB/s, pre-tokenization alone {pre.gb_per_s.min():.2f}–"
            f"{pre.gb_per_s.max():.2f} GB/s ({', '.join(sorted(set(t.corpus)))}); exact: "
            f"{bool(t.exact.astype(bool).all())}")  # fmt: skip
    best = float(ids.gb_per_s.max())
    ok = best >= 3.8
    return ours, Verdict("met" if ok else f"**missed**: best {best:.2f} GB/s, {3.8 / best:.0f}× below "
                         "3.8", ok)  # fmt: skip


def _gpu_tail(r: Results):
    t = r.table("gpu-tail.csv")
    parts, misses = [], []
    runs = ["tokenizer", "gpu", "commit"] if {"gpu", "commit"} <= set(t.columns) else ["tokenizer"]
    runs += ["file"] if "file" in t.columns else []  # two records at one commit stay apart
    for key, g in t.groupby(runs, sort=False):  # every run (GPU, commit, record) judged

        def p99(method, busy, g=g):
            s = g[g.method.str.contains(method) & (g.contention.astype(str) == str(busy))]
            return float(s.p99.iloc[0]) if len(s) else float("nan")

        gi, gc, ei, ec = (
            p99("graph", False),
            p99("graph", True),
            p99("eager", False),
            p99("eager", True),
        )
        key = key if isinstance(key, tuple) else (key,)
        reqs = f", {int(g.n.max()):,} requests" if "n" in g else ""
        run = key[0] + (f" ({short_gpu(key[1])} @{key[2]}{reqs})"
                        if len(key) >= 3 else "")  # fmt: skip
        parts.append(f"{run}: graph replay P99 {_ms(gi)} → {_ms(gc)} ms, eager {_ms(ei)} → "
                     f"{_ms(ec)} ms")  # fmt: skip
        misses += [f"{run} {state}" for state, lower in (("idle", gi < ei), ("contended", gc < ec))
                   if not lower]  # fmt: skip
    ok = not misses
    ours = "idle → contended, 50K-char requests: " + "; ".join(parts)
    return ours, Verdict("shape reproduced (graphs lower P99, idle and contended)" if ok
                         else "graphs not lower everywhere: graph replay's P99 is not below eager's for "
                         + ", ".join(misses), ok)  # fmt: skip


def _tail_capacity(r: Results):
    rows = r.table("tail-capacity.csv").to_dict("records")
    c50, c250 = capacity(rows, 50), capacity(rows, 250)
    top: dict[str, float] = {}
    for row in rows:
        top[row["config"]] = max(top.get(row["config"], 0.0), row["offered_rps"])

    def at_top(c, caps):  # met the objective at the ladder's highest step: a lower bound
        return caps[c] > 0 and caps[c] >= top[c]

    def n(c, caps):
        return ("≥ " if at_top(c, caps) else "") + _n(caps[c])

    tier = max((c for c in c50 if c.startswith("toktier")), key=lambda c: c50[c] + c250[c])
    fast = next((c for c in c50 if "fastokens" in c), None)
    refs = [c for c in c50 if "reference" in c]
    ref = max(refs, key=lambda c: c250[c]) if refs else None
    ours = (f"under 50 ms P99: {tier} {n(tier, c50)} req/s" +
            (f", {fast} {n(fast, c50)}" if fast else "") +
            (f", {ref} {n(ref, c50)}" if ref else "") +
            f"; under 250 ms: tier {n(tier, c250)}" +
            (f", fastokens {n(fast, c250)}" if fast else "") +
            (f", reference {n(ref, c250)}" if ref else ""))  # fmt: skip
    parts, ok = [], True
    if ref and c250[ref]:
        x = c250[tier] / c250[ref]
        parts.append(f"tier ≥ 20× the stateless reference under 250 ms: {x:.0f}× "
                     f"({'met' if x >= 20 else 'missed'})")  # fmt: skip
        ok = ok and x >= 20
    if fast and c50[fast]:
        x = c50[tier] / c50[fast]
        # A peer that met the objective at its ladder's top may serve more: the ratio is
        # then an upper bound and cannot show the target met.
        bound = "≤ " if at_top(fast, c50) else "≥ " if at_top(tier, c50) else ""
        met = x >= 4 and not at_top(fast, c50)
        parts.append(f"issue #11's ≥ 4× fastokens under 50 ms: {bound}{x:.1f}× "
                     f"({'met' if met else '**missed**'})")  # fmt: skip
        ok = ok and met
    return ours, Verdict("; ".join(parts) or "not judged", ok if parts else None)


def _frontend_cost(r: Results):
    t = r.table("frontend-cost.csv").set_index("method")
    e = t.E_t_tok_cpu_ms
    ours = (f"{_n(t.requests.iloc[0])} calls of {_n(t.sessions.iloc[0])} trajectories, E[t_tok] CPU ms "
            "per request: " + ", ".join(f"{m} {_ms(v)}" for m, v in e.items()) +
            f"; tier results exact: {bool(t.exact.dropna().astype(bool).all())}")  # fmt: skip
    tier = next(m for m in e.index if "engine" in m and "tier" in m)
    hf = next(m for m in e.index if m.startswith("HF"))
    fast = next((m for m in e.index if m.startswith("fastokens")), None)
    ok = e[tier] < e[hf] and (fast is None or e[tier] < e[fast])
    x = f"; {e[fast] / e[tier]:.1f}× below fastokens" if fast else ""
    return ours, Verdict((f"reproduced in shape: tier over the engine {e[hf] / e[tier]:.0f}× below "
                          f"HF{x}") if ok else "tier not the cheapest front end", ok)  # fmt: skip


def _served_scanned(r: Results):
    from .frontend_cost import crossing

    t = r.table("served-scanned.csv").set_index("method")
    bins = r.table("served-scanned-bins.csv")
    tier = "tier over the engine"
    served = float(t.loc[tier, "served_MB_per_core_s"])
    scanned = float(t.loc[tier, "scanned_MB_per_core_s"])
    ours = (f"tier over the engine, trace-weighted over {_n(t.loc[tier, 'requests'])} calls: "
            f"serves {served / 1e3:.2f} GB/s of context per core while scanning "
            f"{scanned:.1f} MB/s ({served / scanned:.0f}×)")  # fmt: skip
    cross = None
    giga = "Gigatoken prewarmed"
    if giga in t.index:
        g = float(t.loc[giga, "served_MB_per_core_s"])
        cross = crossing(bins.to_dict("records"), tier, giga)
        top = bins[bins.method == giga].served_MB_per_core_s.max()
        ours += (f"; Gigatoken prewarmed {g:.0f} MB/s (served = scanned; best bin {top:.0f}); "
                 + (f"the tier's served account stays above it from {cross / 1e3:,.0f} KB contexts"
                    if cross else "the tier's served account never stays above it"))  # fmt: skip
    ok = served >= 10 * scanned and cross is not None
    verdict = ("shape reproduced: served ≫ scanned, crossing Gigatoken prewarmed"
               if ok else "partial: " + ("no crossing" if cross is None else "served < 10× scanned"))  # fmt: skip
    return ours, Verdict(verdict, True if ok else None)


def _large_appends(r: Results):
    t = r.table("large-appends-routes.csv").sort_values(["delta", "context"])
    tier, repair, giga = "toktier, delta-aware", "toktier repair", "Gigatoken prewarmed"
    parts = []
    for delta, g in t.groupby("delta"):
        cells = "/".join(_n(c / 1e6, 1).rstrip("0").rstrip(".") + "M" for c in g.context)
        parts.append(f"Δ = {delta / 1e3:g}K at {cells}: tier {_ms_list(g[tier])}, repair alone "
                     f"{_ms_list(g[repair])}, Gigatoken prewarmed {_ms_list(g[giga])} ms")  # fmt: skip
    ours = "; ".join(parts)
    if "gpu_export_p50_ms" in t and t.gpu_export_p50_ms.notna().any():
        g = t.dropna(subset=["gpu_export_p50_ms"]).drop_duplicates("context")
        ours += ("; GPU full re-encode with span export (bench-gpu record) "
                 + ", ".join(f"{c / 1e6:g}M {v:.2f}" for c, v in zip(g.context, g.gpu_export_p50_ms,
                                                                   strict=True)) + " ms")  # fmt: skip
    lost = t[t[tier] > t[giga]]
    ok = lost.empty
    verdict = ("reclaimed: the deployed tier at or below Gigatoken prewarmed in every cell "
               f"(up to {(t[giga] / t[tier]).max():.1f}× faster)") if ok else (
        "partial: lost " + ", ".join(f"Δ = {d / 1e3:g}K at {c / 1e6:g}M"
                                     for d, c in zip(lost.delta, lost.context, strict=True)))  # fmt: skip
    return ours, Verdict(verdict, True if ok else None)


def _ms_list(values) -> str:
    return "/".join(f"{v:.2f}" for v in values)


def _state_memory(r: Results):
    m = r.table("state-memory.csv")
    last = m.groupby("session").tail(1)
    used = float(last.used_bytes_per_token.median())
    alloc = float(last.bytes_per_token.median())
    ttl = r.table("ttl-hits.csv").set_index("ttl_s").hit_share
    hour = float(ttl.get(3600.0, np.nan))
    ours = (f"{used:.1f} B/token used ({alloc:.1f} allocated; median session) over "
            f"{int(m.live_sessions.max())} live sessions, {m.store_bytes.iloc[-1] / 1e6:.0f} MB; "
            f"{hour:.1%} of calls on a hit with a 1 h TTL ({ttl.get(300.0, np.nan):.1%} at 5 min)")  # fmt: skip
    hits_ok = hour >= 0.97
    mem_ok = abs(used - 16) <= 0.25 * 16
    return ours, Verdict(", ".join([
        "hit share reproduced" if hits_ok else "hit share below 97%",
        "memory per token within 25% of the paper's" if mem_ok else "memory per token off by > 25%",
    ]), hits_ok and mem_ok)  # fmt: skip


def _verifier(r: Results):
    f = r.table("verifier-faults.csv")
    d = r.table("verifier-delay.csv")
    parts, ok = [], True
    for rate, g in f.groupby("rate", sort=False):
        allf = g[g.kind == "all faults"].iloc[0]
        clean = g[g.kind == "clean"].iloc[0]
        parts.append(f"{rate:.0%}: {int(allf.caught)} of {int(allf.checked)} sampled faults "
                     f"caught, {int(clean.false_positives)} false positives of "
                     f"{int(clean.checked)}")  # fmt: skip
        ok = ok and allf.caught == allf.checked and clean.false_positives == 0
    for row in d.itertuples():
        parts.append(f"delay at {row.rate:.0%}: median / P90 {row.median:g} / {row.p90:g} "
                     f"(geometric {row.geometric_median:g} / {row.geometric_p90:g}; KS "
                     f"{row.ks_distance:.3f} vs DKW 95% band {row.dkw95:.3f})")  # fmt: skip
        ok = ok and row.ks_distance <= row.dkw95
    ours = f"{int(f[f.kind == 'all faults'].requests.iloc[0])} faults injected; " + "; ".join(parts)
    return ours, Verdict("reproduced" if ok else "not reproduced", ok)


def _lopt(r: Results):
    t = r.table("lopt-counterexamples.csv")
    per = t[t.overlap.astype(str) != "all"]
    parts = []
    for tok, g in per.groupby("tokenizer", sort=False):
        parts.append(f"{tok} {_join(str(int(x)) for x in g.divergent)}")
    overlaps = _join(str(x) for x in per.overlap.drop_duplicates())
    seams = int(per.seams.iloc[0]) if len(per) else 0
    div = int(per.divergent.sum())
    refused = int(per.certificate_refuses_divergent.sum())
    ours = (f"clean-room LoPT accepts seams with wrong IDs (of {_n(seams)} seams per overlap "
            f"{overlaps}): " + ", ".join(parts) +
            f"; toktier's certificate refuses {_n(refused)} of those {_n(div)}")  # fmt: skip
    ok = div > 0 and refused == div
    return ours, Verdict("reproduced (counterexamples exist; the certificate refuses all)" if ok
                         else "not reproduced", ok)  # fmt: skip


def _audit(r: Results):
    t = r.table("audit-ladder.csv")
    wrong = t.groupby("method", sort=False).agg(wrong=("wrong", "sum"), cases=("cases", "sum"))
    toks = sorted(set(t.tokenizer))
    parts = [f"{m} {int(v.wrong)} of {_n(v.cases)}" for m, v in wrong.iterrows()]
    seam = t[t.workload == "seam"]
    ours = (f"wrong answers over seam search + replay + rewritten history ({len(toks)} "
            f"tokenizers, {_n(seam.cases.max())} seam cases per method and tokenizer): "
            + "; ".join(parts))  # fmt: skip
    tier = int(wrong.wrong.get("toktier", 0))
    others = wrong.drop(index="toktier", errors="ignore")
    found = int((others.wrong > 0).sum())
    ok = "toktier" in wrong.index and tier == 0
    return ours, Verdict(
        (f"the tier exact on every case; {found} of {len(others)} reproduced methods serve wrong "
         "IDs somewhere") if ok else f"**the tier served {tier} wrong answers**", ok)  # fmt: skip


CLAIMS: list[Claim] = [
    Claim(
        "W1",
        "workload anatomy (§2, Fig. 2/14)",
        "`notebook_workload` → `02-workload` → `tables/workload-summary.csv`",
        "median Δ 1.4K chars interactive, 3.8K public autonomous; 30 calls/trial",
        "shape reproduced when the median context is ≥ 10× the median append",
        _workload,
        runs=("workload.json",),
        note="This corpus (mini-swe-agent, Gemini 3, SWE-bench Verified) appends less per call than the paper's public autonomous traces.",
    ),
    Claim(
        "E0",
        "conversion exactness (prerequisite of E1)",
        "`certify_conversion` → `tables/conversion-certification.csv`",
        "—",
        "certified when every mismatch count is 0 and each tokenizer saw ≥ 10M chars",
        _conversion,
        runs=("conversion-certification.json",),
        note="The converted tokenizers are checked against the originals' own encoders (tiktoken, the source files) on the conversion corpus and every vocabulary entry.",
    ),
    Claim(
        "E1",
        "exactness campaigns (Table 2) — repair",
        "`certify_repair` → `04-repair-behavior` → `tables/repair-certification.csv`",
        "zero divergence at every scale; 15,000 adversarial edits",
        "reproduced when oracle, adversarial and replay divergences are all 0, every "
        "adversarial case was also planned by the Python reference plan, and the replay "
        "covers all 500 sessions",
        _repair_cert,
        runs=("repair/*.json",),
        note="Repair campaigns run on the compiled request path (issue #11); every adversarial case is also planned by the readable Python plan, which must agree on route, splice points and kept prefix.",
    ),
    Claim(
        "E1e",
        "exactness campaigns (Table 2) — engine: split level + ID level",
        "`certify_engine` → `06-full-tokenization` → `tables/engine-certification.csv`, "
        "`engine-certification-gpu.csv`",
        "zero divergence (the split-level campaign found an o200k run-head bug in the paper's "
        "engine)",
        "reproduced when every divergence column is 0 (CPU and GPU), each CPU campaign "
        "covers ≥ 10M chars and all 1,112,064 code points",
        _engine_cert,
        runs=("engine/*.json", "engine-gpu/*.json"),
        note="GPU campaigns run at 1M real characters per tokenizer (the device lease's size), CPU at 10M; the CUDA simulator runs every kernel in CI.",
    ),
    Claim(
        "R1",
        "repair latency vs context (Table 3)",
        "`notebook_repair_latency` → `03-repair-latency` → `tables/repair-latency.csv`",
        "P50 0.52/0.88/1.23/1.57/3.54 ms (100K/500K/1M/2M/4.4M chars); Gigatoken prewarmed "
        "0.14/1.18/2.53/4.76/11.66",
        "reproduced when repair P50 is at or below the paper's at every context and its "
        "max/min over contexts is ≤ 2 (flat)",
        _repair_latency,
        runs=("repair-latency.json",),
        note="Natural appends of the recorded trajectories; every method on the same texts in one run.",
    ),
    Claim(
        "R2",
        "first-window acceptance (Fig. 7a)",
        "`certify_repair` → `04-repair-behavior` → `tables/repair-certification.csv`",
        "56,049 / 56,052 on the first window, 0 fallbacks",
        "reproduced when every replayed continuation splices on the first window with no fallback",
        _first_window,
        runs=("repair/*.json",),
    ),
    Claim(
        "R3",
        "Δ sweep (Table 6)",
        "`notebook_repair_behavior` → `04` → `tables/delta-sweep.csv`",
        "2.9–3.9 MB/s, flat in N; crossover vs a prewarmed cache moves with Δ",
        "shape reproduced when repair P50 at the largest N is within 0.5–2× of the smallest N's "
        "at every Δ, and the largest Δ costs ≥ 5× the smallest",
        _delta_sweep,
        runs=("delta-sweep.json",),
        note="Fixed-length slices of real streams; the delta-aware router encodes the whole text instead when its start-up calibration predicts that faster.",
    ),
    Claim(
        "R4",
        "served vs scanned (Fig. 13)",
        "`notebook_frontend_cost` → `11-frontend-cost` → `tables/served-scanned.csv`, "
        "`served-scanned-bins.csv`, `figures/served-scanned.png`",
        "one repair core serves 0.44 GB/s of context while scanning 3 MB/s (trace-weighted); "
        "served crosses Gigatoken's prewarmed ceiling (355 MB/s) at ~200 KB",
        "shape reproduced when the tier's served account is ≥ 10× its scanned one and rises "
        "above Gigatoken prewarmed's from some context size on",
        _served_scanned,
        runs=("frontend-cost.json",),
        note="Same calls as C1; this corpus's contexts are about ten times smaller than the paper's, so the trace-weighted served rate is lower.",
    ),
    Claim(
        "R5",
        "a continuation's cost follows the append, not the context (§1, §6; issue #11)",
        "`notebook_continuation` → `10-continuation` → `tables/continuation-latency.csv`, "
        "`continuation-targets.csv`",
        "repair P50 0.52 ms at 100K (Table 3; no 12K–48K row)",
        "issue #11's four targets per tokenizer × text, each met or not (`continuation-"
        "targets.csv`)",
        _continuation,
        runs=("continuation.json",),
        note="The compiled request path's own work is small; the engine encoding the window from scratch dominates the continuation (docs/repair.md, issue #12: cold BPE of unseen pieces, the NFC path).",
    ),
    Claim(
        "F1",
        "full tokenization, single request (Table 4)",
        "`notebook_full_tokenization` → `06` → `tables/full-tokenization.csv`, "
        "`engine-targets.csv`, `full-tokenization-gpu.csv`",
        "qwen3 100K/1M/2M/4.4M: Gigatoken empty 0.64/6.05/8.78/19.42; fastokens "
        "2.03/20.5/45.9/111.9; LoPT (28 proc) 7.91/42.2/95.3/198.5; HF 24.8/360/763/1763 ms; "
        "GPU 0.87 ms at 1M",
        "CPU rows reproduced when toktier (all cores) beats HF at every size; issue #12's "
        "targets counted per cell; GPU: ≤ 0.87 ms at 1M and ≥ 7× Gigatoken empty",
        _full_cpu,
        runs=("full-tokenization.json", "engine-targets*.json", "gpu-*.json"),
        note="fastokens is a multi-threaded Rust engine and far faster on this machine than in the paper (pinned to one core, 1.6–1.7× the engine's one-thread speed on fresh code and byte-level multilingual text, docs/engine.md 'fastokens per core'); the GPU rows are fresh texts, judged on qwen3 as the paper's (docs/gpu.md); the CPU tables time every call with the allocator settled (since c578741: Gigatoken's empty-cache column had read up to 5× slow at 48K), the GPU records drawn are settled too (tenth lease, H200, 6d3c94f: Gigatoken empty at 1M 6.5–6.8 ms there, against 23–33 ms in the unsettled records of leases 2–9, whose 5–7× ratios were overstated ~3–4×; those are kept in runs/gpu-unsettled/, docs/gpu.md).",
    ),
    Claim(
        "F2",
        "GPU batch throughput",
        "`toktier bench-gpu` → `06` → `tables/gpu-throughput.csv`",
        "3.8–4.7 GB/s; pre-tokenization alone 30–77 GB/s",
        "met when the best IDs throughput reaches 3.8 GB/s",
        _gpu_throughput,
        runs=("gpu-*.json",),
        note="Batches replay CUDA graphs by default since 2026-11-26 (certified on an H100, byte-level and SentencePiece); that cut 1 MB of stdlib from 7.4 to 5.4 ms (qwen3) but left throughput at 0.1–0.24 GB/s. `toktier profile-gpu` (H100, 1 MB per corpus, eager): 38 launches whose event-timed sum is 3.4–6.5 ms, the largest one-thread-per-piece BPE (1.1–1.6 ms), the scans ~0.8 ms, serial one-thread kernels ~0.3–0.5 ms; host work around a batch 1–9 ms (per-document Python, since cut), and on qwen3 pycountry 68–90 ms of host NFC handoff (since halved). The paper's 3.8 GB/s would be 0.26 ms per MB: the kernels themselves, not launches, are ~15× short.",
    ),
    Claim(
        "F3",
        "CUDA graph under contention (App. E)",
        "`toktier bench-gpu` → `06` → `tables/gpu-tail.csv`",
        "P99 0.38→0.49 ms (graph) vs 0.52→1.05 (eager) at 50K",
        "shape reproduced when graph replay has the lower P99 both idle and contended",
        _gpu_tail,
        runs=("gpu-*.json",),
        note="Absolute P99s differ from the paper's hardware; the shape (graphs below eager, idle and contended) is what carries over. A P99 over 100 requests is about their second-slowest: under contention (16 busy processes on the 16 cores) 1–6 of graph replay's requests take over 4 ms in every run and set it, while its contended median (0.8–1.1 ms) stays 3–5× below eager's (3.0–4.5 ms). On mistral-sp-v3 at e97864c (ninth lease, 100 requests) two such stalls of 9.4–9.5 ms put it above eager's 8.6 ms; the tenth lease ran 1,000 requests each on mistral-sp-v3 and qwen3, and graph replay's P99 was below eager's idle and contended in both (5.20 vs 7.76 ms, 4.78 vs 8.58 contended): that run was two unlucky requests (docs/gpu.md).",
    ),
    Claim(
        "T1",
        "burst tails (Fig. 8), capacity under a P99 objective (Fig. 9)",
        "`notebook_tail_capacity` → `09-tail-capacity` → `tables/tail-capacity.csv`",
        "1,821 req/s (4 repair cores + 1 GPU) vs 33–40 req/s stateless CPU (4–16 cores)",
        "tier ≥ 20× the stateless reference (250 ms P99) and, issue #11, ≥ 4× stateless "
        "fastokens (50 ms P99) on the same cores",
        _tail_capacity,
        runs=("tail-capacity.json",),
        note="Two cores, no GPU: the load generator and result collector (one Python process, ~0.3–0.4 core at the tier's knee) and the shadow verifiers (a quarter core per front end, split over its repair workers) share the cores with the workers; the tier's best worker count is taken (at equal worker counts the ratio is in docs/serving.md); a capacity met at the ladder's top step is marked ≥ (a peer's there makes the ratio an upper bound, which cannot meet the target); near the knees a 20 s point's P99 is set by a few hundred requests, so one run moves by a ladder step. Runs before 27a81b8 (2026-12-02) made the stateless workers convert each answer's ID list to an array (~360 µs a request for fastokens, twice its encode) and read 3.2–5.0×; without it, 1.5× (Intel VM, full config, twice: 27a81b8 and acf3a55), ~1.7–2.0× (AMD VM, finer ladders), ≥ 3.0× on a faster AMD VM (family 26, Zen 5; 6edc496, full config), where the one-worker tier passed the ladder's top step (9,600 req/s) — finer 12 s ladders on that VM the same hour put the tier's knee at 8,000–9,600 and fastokens' at 4,000–5,600 (~1.5–2.4×) — and 2.0× there with the tier's ladder extended to 12,800 req/s (3de5941, full config: 8,000 vs 4,000; the generator itself falls behind at 12,800; docs/serving.md); each worker's serving thread pinned to a core of its own moves neither front end's capacity (docs/serving.md). What bounds the ratio on two cores (docs/serving.md): in one process a request of the mixture costs fastokens ~325 µs and the tier 65–80 µs (3.8–4.2×); in the pool the generator takes ~0.3 core, the tier's verifier a quarter core, and the shared caches slow the tier's work ~1.5× (the harness alone costs a worker 21–33 µs a request and sustains 20,000 req/s): with 458 µs of worker CPU a request for fastokens at its knee and ~150 for the tier, the ratio is at most ~2.6× before queueing. Not an equal-hardware comparison with the paper.",
    ),
    Claim(
        "C1",
        "front-end cost under the measured mixture (§6.9)",
        "`notebook_frontend_cost` → `11-frontend-cost` → `tables/frontend-cost.csv`",
        "E[t_tok] HF 228.1, fastokens 13.4, repair over HF 23.6, over a Rust engine 2.3 ms",
        "reproduced in shape when the tier over the engine is the cheapest and below HF",
        _frontend_cost,
        runs=("frontend-cost.json",),
        note="Absolute values follow the mixture: this corpus's contexts are about ten times smaller than the paper's.",
    ),
    Claim(
        "V1",
        "vLLM TTFT (Fig. 10)",
        "—",
        "−16…−34% median",
        "—",
        static=("needs a GPU serving stack (vLLM)", "not reproducible here"),
    ),
    Claim(
        "M1",
        "state memory and TTL hit rate (Fig. 11)",
        "`notebook_state_memory` → `05-state-memory` → `tables/state-memory.csv`, `ttl-hits.csv`",
        "~16 B/token; 97–98% hits at 1 h TTL",
        "reproduced when ≥ 97% of calls hit at 1 h and bytes/token is within 25% of 16",
        _state_memory,
        runs=("state-memory.json",),
        note="Allocated bytes include the arrays' spare capacity.",
    ),
    Claim(
        "S1",
        "shadow verifier fault injection (§6.8)",
        "`notebook_verifier_faults` → `08-verifier-faults` → `tables/verifier-faults.csv`, "
        "`verifier-delay.csv`",
        "434 faults in 2,999 requests; 10%: 39 of 39 caught, 0 FP of 265; 5%: delay median 13, "
        "P90 42",
        "reproduced when every sampled fault is caught, no clean request is flagged, and the "
        "detection delay's distribution is within the DKW 95% band of the geometric law",
        _verifier,
        runs=("verifier-faults.json",),
    ),
    Claim(
        "L1",
        "LoPT threshold counterexample (§7)",
        "`notebook_lopt_counterexample` → `07` → `tables/lopt-counterexamples.csv`",
        "counterexample inputs exist",
        "reproduced when LoPT accepts some divergent seam and the certificate refuses every one",
        _lopt,
        runs=("lopt-counterexamples.json",),
        note="The LoPT parameters (overlap, two-token threshold) come from a third-party reimplementation: the LoPT paper's method section was not readable here.",
    ),
    Claim(
        "A1",
        "serving stacks' incremental tokenizers audited (issue #15; beyond the paper)",
        "`notebook_audit` → `12-audit` → `tables/audit-ladder.csv`, `audit-divergences.csv`",
        "— (the paper predates these methods; its LoPT rung is L1)",
        "reproduced when the tier serves 0 wrong answers on every workload and tokenizer; the "
        "other methods' counts are findings, not verdicts",
        _audit,
        runs=("audit.json",),
        note="Clean-room reproductions from the stacks' public pull requests (toktier/baselines; "
        "every choice their descriptions leave open is marked [reading]); 0 means exact on "
        "every case of this search, not a proof.",
    ),
    Claim(
        "X1",
        "large-append routes (App. F)",
        "`notebook_large_appends` → `13-large-appends` → `tables/large-appends-routes.csv`, "
        "`figures/large-appends.png`",
        "Δ = 100K, qwen3, 1M/4.4M/8M: shipped repair 32.2/34.7/40.1 ms lost to Gigatoken "
        "prewarmed 2.86/12.1/23.6; routes B (2.66/3.79/5.34) and C (GPU, 1.13/2.82/6.05) "
        "win the cells back",
        "reclaimed when toktier's deployed tier is at or below Gigatoken prewarmed in every "
        "measured cell (Δ ≥ 50K)",
        _large_appends,
        runs=("large-appends.json",),
        note="toktier's shipped window encoder is its compiled engine (46–77 MB/s in the Δ sweep, one core), so its repair path is the paper's route B in kind; route C's GPU cells are the committed bench-gpu records (a full re-encode with span export of a fresh text of that size), shown beside, never mixed into the verdict.",
    ),
]


def evaluate(results_dir: Path) -> list[dict]:
    """One row per claim: id, claim, source, paper, ours, verdict, ok, rule, machines."""
    res = Results(results_dir)
    rows = []
    for c in CLAIMS:
        if c.static is not None:
            ours, v = c.static[0], Verdict(c.static[1], None)
        else:
            try:
                ours, v = c.evaluate(res)
            except Missing as e:
                ours, v = f"not in this results tree ({e})", Verdict("pending: not run", None)
        rows.append({"id": c.id, "claim": c.claim, "source": c.source, "paper": c.paper,
                     "ours": ours, "verdict": v.text, "ok": v.ok, "rule": c.rule, "note": c.note,
                     "machines": "; ".join(res.machines(c.runs))})  # fmt: skip
    return rows


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def render(results_dir: Path, *, label: str | None = None) -> str:
    rows = evaluate(results_dir)
    label = label or str(results_dir)
    met = sum(r["ok"] is True for r in rows)
    missed = sum(r["ok"] is False for r in rows)
    lines = [
        "# Claims: paper vs. this reproduction",
        "",
        f"Generated by `toktier claims {label}` from the results tree `{label}` — do not edit by "
        'hand: every value in the "ours" column is read from that tree\'s tables, and every '
        "verdict is the stated rule applied to the same numbers (`toktier/bench/claims.py`). "
        "Compare methods within one run; never absolute times across machines. The machine "
        "and commit behind each row are listed under it (from the run files).",
        "",
        f"{met} claims reproduced or met, {missed} missed, {len(rows) - met - missed} partial, "
        "pending or not reproducible here.",
        "",
        "| id | claim (paper §) | source → output | paper value | ours | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append("| " + " | ".join(_cell(r[k]) for k in
                                       ("id", "claim", "source", "paper", "ours", "verdict")) + " |")  # fmt: skip
    lines += ["", "## Verdict rules, notes and provenance", ""]
    for r in rows:
        note = f" {r['note']}" if r["note"] else ""
        lines.append(f"- **{r['id']}** — rule: {r['rule']}.{note} Produced on: "
                     f"{r['machines'] or '—'}.")  # fmt: skip
    return "\n".join(lines) + "\n"


def write_claims(results_dir: Path, out: Path, *, label: str | None = None) -> list[dict]:
    """Write the markdown to ``out`` and return the rows."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(results_dir, label=label))
    return evaluate(results_dir)
