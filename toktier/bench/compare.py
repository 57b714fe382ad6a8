"""Your run vs ours: a results tree checked against the committed evidence, table by table.

Two kinds of check, each with a stated rule:

- **exactness** (``EXACT``): a column that must be zero (divergences, mismatches, false
  positives) or true (``exact``) on every row it applies to (empty cells: peers that are
  not checked).  The verdict of each tree is pass/fail;
  the trees *agree* when their verdicts are equal.
- **ordering** (``ORDER``): timing tables compare methods within one run, so what should
  carry over between machines is which method is faster, not the milliseconds.  For every
  group of rows (same size, tokenizer, ...) and every pair of methods present in both
  trees, the faster one must be the same; the trees *agree* when at least ``ORDER_AGREE``
  of those pairs do (pairs within ``TIE`` of each other in either tree count as ties and
  are skipped).  The median ratio run/evidence of the values is reported as the machine
  factor, never judged.

A table missing from either tree is reported as such (kick-the-tires runs a subset of
sizes: only rows present in both are compared).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

ORDER_AGREE = 0.8  # share of method pairs whose order must agree
TIE = 0.10  # values within 10% of each other are a tie (timing noise on shared VMs)


@dataclass(frozen=True)
class Exact:
    table: str
    column: str
    must: str  # "zero" or "true"


@dataclass(frozen=True)
class Order:
    table: str
    keys: tuple[str, ...]  # columns that define a group (besides the method)
    method: str
    value: str
    lower_is_better: bool = True


EXACT = [
    *(Exact("conversion-certification.csv", c, "zero") for c in ("mismatches", "vocab_mismatches")),
    *(
        Exact("engine-certification.csv", c, "zero")
        for c in (
            "split_divergences",
            "id_divergences",
            "parallel_divergences",
            "parts_divergences",
            "cut_divergences",
            "divergences",
        )
    ),
    *(Exact("engine-certification-gpu.csv", c, "zero") for c in ("divergences",)),
    *(
        Exact("repair-certification.csv", c, "zero")
        for c in ("oracle_failures", "adversarial_mismatches", "replay_mismatches")
    ),
    Exact("user-files-certification.csv", "divergences", "zero"),
    Exact("verifier-faults.csv", "false_positives", "zero"),
    Exact("continuation-latency.csv", "exact", "true"),
    Exact("frontend-cost.csv", "exact", "true"),
    Exact("gpu-throughput.csv", "exact", "true"),
]

ORDER = [
    Order("repair-latency.csv", ("context",), "method", "p50_ms"),
    Order("delta-sweep.csv", ("context", "delta"), "method", "p50_ms"),
    Order("full-tokenization.csv", ("tokenizer", "chars"), "method", "p50"),
    Order("bulk-throughput.csv", ("tokenizer", "corpus"), "method", "mb_per_s", False),
    Order("continuation-latency.csv", ("tokenizer", "corpus", "context"), "method", "p50_us"),
    Order("frontend-cost.csv", (), "method", "E_t_tok_cpu_ms"),
    Order("served-scanned.csv", (), "method", "served_MB_per_core_s", False),
    Order("large-appends.csv", ("context", "delta"), "method", "p50_ms"),
    Order("engine-targets.csv", (), "", ""),  # one column per method: ``WIDE``
]
# engine-targets.csv holds one column per method: compared as an ordering of these columns.
WIDE = {
    "engine-targets.csv": (
        ("tokenizer", "text", "chars"),
        ("toktier_1t_ms", "toktier_all_ms", "gigatoken_empty_ms", "fastokens_ms", "hf_ms"),
    ),
}


def _read(tree: Path, table: str) -> pd.DataFrame | None:
    p = Path(tree) / "tables" / table
    return pd.read_csv(p) if p.is_file() else None


def _exact_verdict(df: pd.DataFrame, chk: Exact) -> bool | None:
    if df is None or chk.column not in df:
        return None
    col = df[chk.column].dropna()  # empty cells: rows the check does not apply to (peers)
    if col.empty:
        return None
    if chk.must == "zero":
        return bool((pd.to_numeric(col, errors="coerce").fillna(1) == 0).all())
    return bool(col.astype(str).str.lower().isin(["true", "1", "1.0"]).all())


def _long(df: pd.DataFrame, chk: Order) -> pd.DataFrame:
    """Rows (group keys..., method, value) whatever the table's layout."""
    if chk.table in WIDE:
        keys, methods = WIDE[chk.table]
        have = [m for m in methods if m in df]
        out = df.melt(id_vars=list(keys), value_vars=have, var_name="method", value_name="value")
        return out.dropna(subset=["value"])
    out = df[[*chk.keys, chk.method, chk.value]].rename(
        columns={chk.method: "method", chk.value: "value"}
    )
    return out.dropna(subset=["value"])


def _pair_orders(long: pd.DataFrame, keys: tuple[str, ...], lower: bool) -> dict:
    """{(group, a, b): sign} for every method pair of every group (0: a tie within TIE)."""
    out = {}
    groups = long.groupby(list(keys)) if keys else [((), long)]
    for g, rows in groups:
        vals = rows.groupby("method")["value"].median()
        for a, b in combinations(sorted(vals.index), 2):
            va, vb = float(vals[a]), float(vals[b])
            if max(va, vb) <= 0 or abs(va - vb) <= TIE * max(abs(va), abs(vb)):
                sign = 0
            else:
                sign = 1 if (va < vb) == lower else -1
            out[(g if isinstance(g, tuple) else (g,), a, b)] = sign
    return out


def compare(run: Path, evidence: Path) -> pd.DataFrame:
    """One row per check: the evidence's and the run's result and whether they agree."""
    rows = []
    for chk in EXACT:
        ev, rn = _read(evidence, chk.table), _read(run, chk.table)
        e, r = _exact_verdict(ev, chk), _exact_verdict(rn, chk)
        rows.append({
            "table": chk.table, "check": f"{chk.column} {chk.must} on every row",
            "kind": "exactness",
            "evidence": "missing" if e is None else ("pass" if e else "FAIL"),
            "run": "missing" if r is None else ("pass" if r else "FAIL"),
            "agree": None if e is None or r is None else (e == r),
            "note": "" if r is None else f"{len(rn)} rows in the run",
        })  # fmt: skip
    for chk in ORDER:
        ev, rn = _read(evidence, chk.table), _read(run, chk.table)
        keys = WIDE[chk.table][0] if chk.table in WIDE else chk.keys
        label = f"which method is faster, per {', '.join(keys) or 'run'}"
        if ev is None or rn is None:
            rows.append({"table": chk.table, "check": label, "kind": "ordering",
                         "evidence": "missing" if ev is None else "present",
                         "run": "missing" if rn is None else "present", "agree": None,
                         "note": ""})  # fmt: skip
            continue
        le, lr = _long(ev, chk), _long(rn, chk)
        pe = _pair_orders(le, keys, chk.lower_is_better)
        pr = _pair_orders(lr, keys, chk.lower_is_better)
        common = [k for k in pe if k in pr and pe[k] != 0 and pr[k] != 0]
        same = sum(pe[k] == pr[k] for k in common)
        share = same / len(common) if common else float("nan")
        merged = le.merge(lr, on=[*keys, "method"], suffixes=("_ev", "_run"))
        ratio = float(np.median(merged.value_run / merged.value_ev)) if len(merged) else np.nan
        rows.append({
            "table": chk.table, "check": label, "kind": "ordering",
            "evidence": f"{len(pe)} method pairs", "run": f"{len(pr)} method pairs",
            "agree": None if not common else bool(share >= ORDER_AGREE),
            "note": (f"{same}/{len(common)} non-tied pairs in the same order; "
                     f"median value ratio run/evidence {ratio:.2f}"),
        })  # fmt: skip
    return pd.DataFrame(rows)


def write_comparison(run: Path, evidence: Path) -> pd.DataFrame:
    """``<run>/comparison.csv`` and ``comparison.md``: the checks and a one-line summary."""
    run = Path(run)
    df = compare(run, evidence)
    run.mkdir(parents=True, exist_ok=True)
    df.to_csv(run / "comparison.csv", index=False)
    judged = df[df.agree.notna()]
    lines = [
        f"# Your run ({run}) vs the committed evidence ({evidence})",
        "",
        f"{int(judged.agree.sum())} of {len(judged)} comparable checks agree; "
        f"{len(df) - len(judged)} checks have a table missing from one tree "
        "(the default config runs a subset of the experiments' sizes).",
        "",
        "Rules: exactness columns must be zero/true on every row in both trees; timing tables "
        f"agree when at least {ORDER_AGREE:.0%} of method pairs (ties within {TIE:.0%} "
        "skipped) are ordered the same way. Milliseconds are never compared across machines.",
        "",
        "| table | check | evidence | your run | agree | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in df.itertuples():
        agree = "—" if r.agree is None or pd.isna(r.agree) else ("yes" if r.agree else "**no**")
        lines.append(f"| {r.table} | {r.check} | {r.evidence} | {r.run} | {agree} | {r.note} |")
    (run / "comparison.md").write_text("\n".join(lines) + "\n")
    return df
