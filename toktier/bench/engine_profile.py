"""Where a single-thread CPU engine encode spends its time, stage by stage.

Each stage runs as its own compiled call on the same text, best of ``repeats``:

- ``decode``: UTF-8 decode and class bits (``cpu._prepare``) -- for an all-ASCII text the
  engine reads as bytes (``cpu.ascii_reads_bytes``), only its ASCII check;
- ``literals``: added-token extraction (``cpu._find_literals``; on such a text the scan that
  path runs, ``cpu._ascii_literal_scan`` where the literals allow it);
- ``pretokenize``: the pre-tokenizer the piece loop runs (``rules.pretokenize_range``: the
  cl100k lineage's automaton, the other families' matchers; on such an all-ASCII text the
  bit-parallel ``ascii_pretok`` where the tokenizer has it) over the whole text;
- ``pieces``: the rest of ``CpuEngine.encode``: short-piece map and piece-cache
  lookups, BPE merges of the misses, token spans, buffers and output copies
  (the whole encode minus the three stages above).

The engine is warm (compiled, its piece caches holding this text's pieces, as a warm
tier's would after meeting them once); ``total_empty_cache`` is the whole encode again
with the caches emptied first, so every piece is met for the first time (merged and
stored).  ``toktier profile-engine`` writes the table; the README quotes it.
"""

from __future__ import annotations

import itertools
import time
from types import SimpleNamespace

import numba
import numpy as np

from ..campaigns import corpus
from ..engine import ascii_pretok, cpu, rules


@numba.njit(cache=True, nogil=True)
def _pretokenize_all(cps, fl, fold, family, n, ends, bt):
    return cpu.pretokenize_range(cps, fl, fold, 0, n, family, bt, ends, 0)


def _best_ms(fn, repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out) * 1e3


def profile_texts(chars: int) -> dict[str, str]:
    """The three texts of the engine targets, ``chars`` characters each (code, prose in
    500+ languages, and both interleaved)."""
    code = "".join(itertools.islice(corpus.stdlib_documents(), 4000))
    multi = "".join(corpus.pycountry_documents())
    step = 2000
    mixed = "".join(code[i : i + step] + multi[i : i + step] for i in range(0, chars, step))
    return {
        "code": code[:chars],
        "multilingual": multi[:chars],
        "code + multilingual": mixed[:chars],
    }


def stage_profile(tok, texts: dict[str, str], *, repeats: int = 5) -> list[dict]:
    """One row per text: milliseconds per stage, the total, and MB/s."""
    eng = cpu.engine_for(tok)
    if eng is None:
        raise ValueError(f"{tok.name} has no CPU engine (family {tok.family})")
    eng.warmup()
    return [_profile_one(eng, label, text, repeats) for label, text in texts.items()]


def _profile_one(eng, label: str, text: str, repeats: int) -> dict:
    tok, t = eng.tokenizer, eng.tables
    if t.nfc:
        text = tok.hf.normalizer.normalize_str(text)  # the engine's fast path: NFC-stable
    u8 = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    nb = u8.size  # buffers of their own (this module also profiles older engine versions)
    wk = SimpleNamespace(cps=np.empty(nb, np.uint32), char_start=np.empty(nb + 1, np.int64),
                         fl=np.empty(nb, np.uint16))  # fmt: skip
    n = cpu._prepare(u8, t.bits, wk.cps, wk.char_start, wk.fl)
    ends = np.empty(n + 1, dtype=np.int64)
    lit = (*eng._trie_args, *(np.empty(n, np.int64) for _ in range(3)))
    eng.encode(text)  # the caches hold this text's pieces once, as a warm tier's would
    if eng._ascii_direct and text.isascii():
        scratch = np.empty(ascii_pretok.scratch_words(nb), dtype=np.int64)  # as ``wk.heap``
        # The engine reads an all-ASCII text as it stands (``cpu._encode_text``'s
        # ``ascii_direct``): no decode, only the ASCII check; the literals found as that
        # path finds them; its pre-tokenizer over the bytes.
        r = {
            "decode": _best_ms(lambda: cpu._all_ascii(u8), repeats),
            "literals": _best_ms(lambda: _ascii_literals(eng, u8, lit), repeats),
            "pretokenize": _best_ms(lambda: _ascii_pretokenize(eng, u8, wk.fl, ends, scratch),
                                    repeats),
        }
    else:
        scratch = np.empty(ascii_pretok.scratch_words_cps(n), dtype=np.int64)  # as ``wk.heap``
        r = {
            "decode": _best_ms(
                lambda: cpu._prepare(u8, t.bits, wk.cps, wk.char_start, wk.fl), repeats
            ),
            "literals": _best_ms(lambda: cpu._find_literals(wk.cps, n, *lit), repeats),
            "pretokenize": _best_ms(lambda: _decoded_pretokenize(eng, wk, n, ends, scratch),
                                    repeats),
        }
    r["total"] = _best_ms(lambda: eng.encode(text), repeats)
    r["pieces"] = max(r["total"] - r["decode"] - r["literals"] - r["pretokenize"], 0.0)
    r["total_empty_cache"] = _empty_cache_ms(eng, text, repeats)
    return {
        "tokenizer": tok.name, "text": label, "chars": len(text), "mb": u8.size / 1e6,
        **{f"{k}_ms": v for k, v in r.items()},
        "mb_per_s": u8.size / 1e6 / (r["total"] / 1e3),
    }  # fmt: skip


def _ascii_literals(eng, u8, lit: tuple) -> int:
    """The literal scan ``cpu._encode_text`` runs on an all-ASCII text (its ``lit_mode``)."""
    return cpu.ascii_literals(u8, *eng._trie_args, *eng._ascii_literals, *lit[-3:])


def _decoded_pretokenize(eng, wk, n: int, ends, scratch) -> int:
    """The pre-tokenizer ``rules.encode_range`` runs over decoded text: deepseek's bit-parallel
    one where ``BpeTables.ascii_pre`` is deepseek's (``scratch``: at least
    ``ascii_pretok.scratch_words_cps(n)`` words, allocated once as the engine's workspace is),
    else the automaton or the matcher."""
    t, bt = eng.tables, eng.bpe
    if bt.ascii_pre >> 2 == rules.ASCII_DEEPSEEK and n >= rules.ASCII_PRETOK_MIN:
        return ascii_pretok.pretokenize_deepseek_cps(wk.cps, wk.fl, 0, n, scratch, ends, 0)
    return _pretokenize_all(wk.cps, wk.fl, t.fold, t.family_code, n, ends, bt)


def _ascii_pretokenize(eng, u8, fl, ends, scratch) -> int:
    """The pre-tokenizer ``rules.encode_range`` runs over an all-ASCII text read as bytes:
    the bit-parallel one where ``BpeTables.ascii_pre`` says so, else the automaton."""
    t, bt, n = eng.tables, eng.bpe, u8.size
    if bt.ascii_pre > 0 and (n >= rules.ASCII_PRETOK_MIN or bt.ascii_pre >> 2 == rules.ASCII_DEEPSEEK):
        return ascii_pretok.pretokenize_ascii(u8, 0, n, t.fold, bt.ascii_pre, scratch, ends, 0)
    return _pretokenize_all(u8, fl, t.fold, t.family_code, n, ends, bt)


def _empty_cache_ms(eng, text: str, repeats: int) -> float:
    """The whole encode with the engine's piece caches emptied first (best of ``repeats``):
    every piece met for the first time is merged and stored.  The caches are refilled
    afterwards, as the warm rows of the other texts expect."""
    out = []
    for _ in range(repeats):
        eng.clear_piece_caches()
        t0 = time.perf_counter()
        eng.encode(text)
        out.append(time.perf_counter() - t0)
    return min(out) * 1e3


STAGES = ("decode", "literals", "pretokenize", "pieces")
STAGE_LABELS = {
    "decode": "UTF-8 decode + classes", "literals": "added-token literals",
    "pretokenize": "pre-tokenization", "pieces": "pieces: lookups, merges, spans, copies",
}  # fmt: skip
STAGE_COLORS = {  # Okabe-Ito, as bench.palette; stages are not methods, so their own map
    "decode": "#56B4E9", "literals": "#F0E442", "pretokenize": "#009E73", "pieces": "#E69F00",
}  # fmt: skip


def plot_stages(after: list[dict], path, before: list[dict] | None = None) -> None:
    """Stacked bars of ms per stage, one group per tokenizer x text (before | after)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def key(r):
        return (r["tokenizer"], r["text"])

    old = {key(r): r for r in (before or [])}
    groups = [key(r) for r in after]
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(groups)), 4.8))
    width = 0.38 if before else 0.6
    for gi, g in enumerate(groups):
        cols = [("after", {r_k: r for r_k, r in ((key(r), r) for r in after)}[g], 0.0)]
        if g in old:
            cols = [("before", old[g], -width / 2 - 0.01), ("after", cols[0][1], width / 2 + 0.01)]
        for label, row, dx in cols:
            bottom = 0.0
            for st in STAGES:
                v = float(row[f"{st}_ms"])
                ax.bar(gi + dx, v, width, bottom=bottom, color=STAGE_COLORS[st],
                       edgecolor="black" if label == "after" else "#777777",
                       hatch="//" if label == "before" else None, linewidth=0.6,
                       label=STAGE_LABELS[st] if gi == 0 and label == "after" else None)  # fmt: skip
                bottom += v
            ax.text(gi + dx, bottom, f"{bottom:.0f}", ha="center", va="bottom", fontsize=7)
            empty = row.get("total_empty_cache_ms")
            if label == "after" and empty not in (None, "") and np.isfinite(float(empty)):
                ax.plot([gi + dx - width / 2, gi + dx + width / 2], [float(empty)] * 2,
                        color="black", linewidth=1.6, linestyle=(0, (2, 1)),
                        label="total with empty piece caches" if gi == 0 else None)  # fmt: skip
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{t}\n{x}" for t, x in groups], fontsize=8)
    ax.set_ylabel("ms per 1M-character encode (one thread, best of 5)")
    title = "CPU engine: where a single-thread encode spends its time"
    if before:
        title += " (hatched: before issue #12's changes)"
    ax.set_title(title, fontsize=10)
    top = max(
        max(sum(float(r[f"{st}_ms"]) for st in STAGES), float(r.get("total_empty_cache_ms") or 0))
        for r in [*after, *(before or [])]
    )
    ax.set_ylim(0, top * 1.3)  # room for the legend above the tallest bar
    ax.legend(title="stage (caches holding the text's pieces)", fontsize=8, loc="upper center",
              ncol=5)  # fmt: skip
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
