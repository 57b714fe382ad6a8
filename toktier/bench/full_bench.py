"""Full tokenization of one fresh request (paper Table 4, claim F1) and bulk throughput.

Every method encodes the identical texts.  A sample is a real session stream
(trajectories rendered and concatenated, ``streams``) cut to N characters,
starting at a different trajectory each time, encoded once and timed once.
Methods (each an ``encode(text)`` callable):

- toktier CPU engine, one thread and all cores (compile time excluded: warmed up
  before timing and reported separately);
- Gigatoken with an empty cache: a new object per sample, construction not timed;
- fastokens (one object, as deployed);
- tiktoken where the vocabulary is a tiktoken one (its encoding built from the same
  pinned ranks, ``campaigns.conversion``), on NFC-stable text;
- HF tokenizers serial (the reference);
- a clean-room LoPT reproduction (``baselines.lopt``), when present.

Each call is timed on its own copy of the text with the allocator settled first
(``timing.time_method``).  The toktier rows are checked against the reference on every
sample (not timed).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap

import numpy as np
from tqdm.auto import tqdm

from ..engine.cpu import new_engine
from .streams import _segments
from .timing import sample_order, time_method

# The paper's Table 4 (qwen3, P50 ms at 100K / 1M / 2M / 4.4M characters, its AMD EPYC 9115 host).
PAPER_TABLE4_SIZES = (100_000, 1_000_000, 2_000_000, 4_400_000)
PAPER_TABLE4 = {
    "Gigatoken, empty cache": (0.64, 6.05, 8.78, 19.42),
    "fastokens": (2.03, 20.5, 45.9, 111.9),
    "LoPT repro.": (7.91, 42.2, 95.3, 198.5),
    "HF serial": (24.8, 360.3, 762.9, 1762.8),
}


def paper_table4_rows() -> list[dict]:
    """The paper's Table 4 as rows (method, chars, paper_p50) to plot beside ours."""
    return [
        {"method": m, "chars": c, "paper_p50": v}
        for m, vs in PAPER_TABLE4.items()
        for c, v in zip(PAPER_TABLE4_SIZES, vs, strict=True)
    ]


def fresh_texts(trajs, tokenizer_name: str, chars: int, n: int, stride: int = 7) -> list[str]:
    """``n`` real texts of exactly ``chars`` characters, each from a different starting trajectory."""
    out = []
    for k in range(n):
        parts, size = [], 0
        for seg in _segments(trajs, (k * stride) % len(trajs), tokenizer_name):
            parts.append(seg)
            size += len(seg)
            if size >= chars:
                break
        out.append("".join(parts)[:chars])
    return out


def methods(tok, *, lopt_workers: int | None = None, lopt: bool = True,
            only: tuple[str, ...] | None = None) -> dict:
    """name -> (prepare(text) -> callable timed once). Optional baselines that are missing or
    cannot load this tokenizer are skipped (neither Gigatoken nor fastokens takes WordPiece);
    ``lopt=False`` leaves out the LoPT reproduction (its worker processes); ``only``: build
    just these peers (a GPU host cannot fetch tiktoken's source files, say)."""

    def want(name: str) -> bool:
        return only is None or name in only

    # Two engine objects: the methods time the same text one after the other, and a shared
    # engine's piece caches would hand the second method the first one's pieces.
    eng, eng_all = new_engine(tok), new_engine(tok)
    eng.warmup()
    eng_all.warmup()
    # IDs alone, as every peer returns (``encode_ids``; with character spans, ``encode``,
    # the warm path costs 6-12% more: the README's A/B of 2026-11-25).
    out = {
        "toktier CPU, 1 thread": lambda t: lambda: eng.encode_ids(t, threads=1),
        "toktier CPU, all cores": lambda t: lambda: eng_all.encode_ids(t),
    }
    if want("Gigatoken, empty cache"):
        with contextlib.suppress(ImportError):
            import gigatoken

            path = tok.checked_path()
            try:
                gigatoken.Tokenizer(path)
            except (RuntimeError, ValueError):  # a model Gigatoken does not implement (WordPiece)
                path = None

            def giga(t):
                g = gigatoken.Tokenizer(path)  # empty cache; construction is not timed
                return lambda: g.encode(t)

            if path is not None:
                out["Gigatoken, empty cache"] = giga
    if want("fastokens"):
        with contextlib.suppress(ImportError, ValueError):  # ValueError: a model it does not take
            import fastokens

            f = fastokens.Tokenizer.from_file(tok.checked_path())
            out["fastokens"] = lambda t: lambda: f.encode(t, add_special_tokens=False).ids
    if want("tiktoken"):
        with contextlib.suppress(Exception):
            from .. import artifacts
            from ..campaigns.conversion import tiktoken_encoding

            if artifacts.entry(tok.name)["recipe"]["kind"] in ("tiktoken", "tekken"):
                enc = tiktoken_encoding(tok.name)
                out["tiktoken"] = lambda t: lambda: enc.encode(t, allowed_special="all")
    hf = tok.hf
    if want("HF serial"):
        out["HF serial"] = lambda t: lambda: hf.encode(t, add_special_tokens=False).ids
    if lopt and want("LoPT repro."):
        with contextlib.suppress(ImportError):
            from ..baselines.lopt import LoptFull

            lo = LoptFull(tok, workers=lopt_workers)
            lo.start()  # worker start-up is not part of a request
            out["LoPT repro."] = lambda t: lambda: lo.full(t)
    return out


def full_latency(tok, trajs, contexts: list[int], samples: int, *, progress: bool = True):
    """Rows (method, chars, sample, ms) plus a per-sample exactness check of the toktier rows."""
    ms = methods(tok)
    rows = []
    for chars in contexts:
        texts = fresh_texts(trajs, tok.name, chars, samples)
        for i, text in enumerate(tqdm(texts, desc=f"{chars:,} chars", disable=not progress)):
            checks = []
            for name, prep in sample_order(ms, i):  # a different method follows the heavy ones
                if name.startswith("HF") and chars > 2_000_000 and i >= max(3, samples // 4):
                    continue  # the reference is minutes per cell at 4.4M: fewer samples
                if name.startswith("LoPT") and i >= max(3, samples // 4):
                    continue
                t, fn = time_method(prep, text)
                row = {"method": name, "chars": chars, "sample": i, "ms": t}
                if name.startswith("toktier"):
                    checks.append((row, np.asarray(fn()).tolist()))
                rows.append(row)
            ref = tok.hf.encode(text, add_special_tokens=False).ids  # after the clocks
            for row, ids in checks:
                row["exact"] = ids == ref
    return rows


BULK_SOURCES = ("stdlib", "trajectories", "pycountry")  # the bulk table's real corpora


def bulk_corpora(chars: int) -> dict[str, str]:
    """``chars`` characters of each of ``BULK_SOURCES`` (``campaigns.corpus``), one str each."""
    from ..campaigns.corpus import mixed_documents

    out = {}
    for src in BULK_SOURCES:
        docs, _ = mixed_documents(chars, sources=(src,))
        out[src] = "".join(docs)[:chars]
    return out


def bulk_table(tokenizers, chars: int, *, repeats: int = 2, progress=None) -> list[dict]:
    """Experiment 06's bulk table: ``bulk_throughput`` rows of every tokenizer over the same
    ``bulk_corpora(chars)``, each row named by its tokenizer.  ``progress(row)``, if given,
    is called after each row (a tool's running printout)."""
    from ..registry import load

    corpora = bulk_corpora(chars)
    rows = []
    for name in tokenizers:
        for r in bulk_throughput(load(name), corpora, repeats=repeats):
            rows.append({"tokenizer": name, **r})
            if progress is not None:
                progress(rows[-1])
    return rows


def bulk_throughput(tok, corpora: dict[str, str], *, repeats: int = 2) -> list[dict]:
    """MB/s per method per corpus (best of ``repeats``, one call over the whole corpus)."""
    ms = methods(tok)
    rows = []
    for corpus, text in corpora.items():
        mb = len(text.encode("utf-8")) / 1e6
        for name, prep in ms.items():
            if name.startswith("LoPT"):
                continue
            best = min(time_method(prep, text)[0] for _ in range(repeats))
            rows.append({"method": name, "corpus": corpus, "mb": mb, "ms": best,
                         "mb_per_s": mb / (best / 1e3)})  # fmt: skip
    return rows


def compile_seconds(tok_name: str) -> dict:
    """Seconds from nothing to a ready engine (tables, short-piece map, literal probe, every
    kernel compiled): with an empty compile cache (cold) and with the cache present (warm),
    each in a fresh process.  The constructor already compiles most kernels (its literal probe
    encodes), so timing ``warmup()`` alone would miss them."""
    import tempfile

    code = textwrap.dedent(
        f"""
        import time, toktier
        from toktier.engine.cpu import new_engine
        tok = toktier.load({tok_name!r})
        t0 = time.perf_counter()
        new_engine(tok).warmup()
        print(time.perf_counter() - t0)
        """
    )
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d)
        run = [sys.executable, "-c", code]
        cold = float(
            subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
        )
        warm = float(
            subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
        )
    return {"cold_compile_s": cold, "cached_load_s": warm}
