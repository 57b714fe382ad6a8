"""An NFC tokenizer's appends whose window NFC changes (the records path), before and after
e32e0f6: two tiers over private engines take the same appends to one session of
pycountry's catalogs in turn (order alternated per append); tier "old" runs BASE's
``cpu.reference_spans`` (read from git) and BASE's ``nfc_stretch_changes`` (the same
compiled steps as three calls, re-stated here), tier "new" the working tree's.  Both
sessions' IDs are checked against the reference at the end.

Usage: ``.venv/bin/python tools/append-profile/nfc_window_ab.py [NAME] [START] [BASE]``
(qwen3, 300000 -- Bengali and Cyrillic catalogs --, 2a147d3).
"""

import subprocess
import sys
import time

import numpy as np

from toktier import Tier, load
from toktier.bench.timing import private_engine
from toktier.campaigns import corpus
from toktier.engine import cpu

DELTA = 1100
APPENDS = 380


def base_reference_spans(base: str):
    """``reference_spans`` (and the helpers after it) as they were at ``base``."""
    src = subprocess.run(["git", "show", f"{base}:toktier/engine/cpu.py"], capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    a = src.index("def reference_spans(")
    ns = {"np": np, "REF_MEMO_ENTRIES": cpu.REF_MEMO_ENTRIES,
          "REF_MEMO_MAX_CHARS": cpu.REF_MEMO_MAX_CHARS}  # fmt: skip
    exec(src[a : src.index("@numba.njit", a)], ns)
    return ns["reference_spans"]


def base_nfc_stretch_changes(normalize, cps, fl):
    """BASE's ``nfc_stretch_changes``: stretches, distinct contents and join as three calls."""
    sa, sb = cpu._nfc_stretches(cps.size, fl)
    if len(sa) == 0:
        return sa, sb, np.zeros(0, dtype=bool)
    first, which = cpu._distinct_stretches(cps, sa, sb)
    ra, rb = sa[first], sb[first]
    changed = cpu._nfc_changes_distinct(normalize, cps, ra, rb, *cpu._join_stretches(cps, ra, rb))
    return sa, sb, changed[which] if first.size < sa.size else changed


def main(name: str = "qwen3", start: int = 300_000, base: str = "2a147d3"):
    """Run the A/B and print it; returns (old us, new us, on the records path) per append."""
    variants = {
        "old": (base_reference_spans(base), base_nfc_stretch_changes),
        "new": (cpu.reference_spans, cpu.nfc_stretch_changes),
    }
    text = "".join(corpus.pycountry_documents())
    tok = load(name)
    tiers, records_calls = {}, [0]
    for label in variants:
        tier = Tier(tok, engine=private_engine(tok), verify_rate=0, delta_aware=False)
        tier.engine.encode(text[:200_000])  # warm-up traffic, as experiment 10's engines
        inner = tier._planner._records_status

        def counted(*a, _inner=inner, **k):
            records_calls[0] += 1
            return _inner(*a, **k)

        tier._planner._records_status = counted
        tier.encode(text[start : start + 48_000], session="s")
        tiers[label] = tier
    times = {label: [] for label in variants}
    on_records = []
    pos = start + 48_000
    for k in range(APPENDS):
        delta = text[pos : pos + DELTA]
        pos += DELTA
        before = records_calls[0]
        for label in (("old", "new") if k % 2 else ("new", "old")):
            cpu.reference_spans, cpu.nfc_stretch_changes = variants[label]
            t0 = time.perf_counter_ns()
            tiers[label].append("s", delta)
            times[label].append((time.perf_counter_ns() - t0) / 1e3)
        on_records.append(records_calls[0] > before)
    cpu.reference_spans, cpu.nfc_stretch_changes = variants["new"]
    want = tok.hf.encode(text[start:pos], add_special_tokens=False).ids
    exact = all(t.session_records("s")[0].tolist() == want for t in tiers.values())
    old, new, rec = np.array(times["old"]), np.array(times["new"]), np.array(on_records)
    print(f"{name}, catalogs from {start:,}, {APPENDS} appends of {DELTA} chars to a 48K session, "
          f"base {base}; {rec.sum()} on the records path; both sessions exact: {exact}")  # fmt: skip
    for label, m in (("records path", rec), ("other appends", ~rec)):
        print(f"  {label:14s} P50 old {np.median(old[m]):7.0f} us  new {np.median(new[m]):7.0f} us"
              f"  paired old/new P50 {np.median(old[m] / new[m]):.2f}x")  # fmt: skip
    for q in (50, 90, 99):
        print(f"  all appends P{q}: old {np.percentile(old, q):7.0f} us  new {np.percentile(new, q):7.0f} us")
    return old, new, rec


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0] if a else "qwen3", int(a[1]) if len(a) > 1 else 300_000, a[2] if len(a) > 2 else "2a147d3")
