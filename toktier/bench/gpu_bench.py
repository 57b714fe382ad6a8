"""GPU full tokenization (paper Table 4 GPU rows, §4.2-4.4, §6.4): latency, throughput, syncs, tails.

Runs only on a real CUDA GPU (``--allow-simulator`` permits a tiny smoke run of
the same code under ``NUMBA_ENABLE_CUDASIM=1``, which CI does so the script
cannot rot; its timings mean nothing).  One run measures, on the same fresh
texts as experiment 06's CPU rows (``full_bench.fresh_texts``):

- single-request latency at each context size, one timed call per sample, for
  array delivery (IDs and spans left on the device, timed to a stream
  synchronize), list delivery (IDs as a Python list) and packed export (IDs and
  spans on the host in one copy); Gigatoken with an empty cache (a new object
  per sample, construction not timed) on the same texts in the same run, and the
  CPU engine on one thread and on all cores and fastokens unless ``cpu=False``.
  Every toktier sample is checked against the reference (not timed);
- host synchronizations per request, per delivery (the engine's own count);
- batch throughput (GB/s of UTF-8) over the real corpora of experiment 06, for
  full IDs (``encode_batch``) and for pre-tokenization alone (``split_batch``),
  best of ``repeats``, each corpus checked against the reference once;
- tail latency at 50K characters (P99 over many fresh texts) with and without
  graph replay, with and without CPU contention (one busy process per core).

The JSON record (``run``) carries the machine facts and the GPU's identity.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from functools import partial
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..errors import ToktierError
from . import timing
from .full_bench import fresh_texts
from .machine import machine_facts
from .timing import fresh_str, settle_allocator, summarize, time_method

SIZES = [100_000, 1_000_000, 2_000_000, 4_400_000]
TAIL_CHARS = 50_000
CORPUS_SOURCES = ("stdlib", "trajectories", "pycountry")
SIMULATOR_MAX_CHARS = 50_000  # the simulator is ~10^5x slower than a GPU


def require_gpu(allow_simulator: bool = False) -> str:
    """'gpu' or 'cudasim'; raises a clear error when the run cannot be a GPU run."""
    from ..engine import gpu

    if gpu.SIMULATOR:
        if not allow_simulator:
            raise ToktierError(
                "NUMBA_ENABLE_CUDASIM=1: the CUDA simulator cannot be benchmarked "
                "(pass --allow-simulator for a tiny smoke run of the script)"
            )
        return "cudasim"
    if not gpu.GpuEngine.available():
        raise ToktierError(
            "no usable CUDA GPU (numba.cuda.is_available() and CuPy are both needed; "
            "pip install 'toktier[gpu]'): GPU timings need a GPU"
        )
    return "gpu"


def _spin() -> None:  # pragma: no cover - runs in child processes until terminated
    x = 0
    while True:
        x += 1


class Contention:
    """One busy process per core while the block runs (CPU contention for the tail rows)."""

    def __init__(self, procs: int | None = None):
        self.procs = procs or os.cpu_count() or 1
        self._ps: list = []

    def __enter__(self):
        ctx = mp.get_context("spawn")
        self._ps = [ctx.Process(target=_spin, daemon=True) for _ in range(self.procs)]
        for p in self._ps:
            p.start()
        time.sleep(0.2)  # let them reach the loop
        return self

    def __exit__(self, *exc):
        for p in self._ps:
            p.terminate()
        for p in self._ps:
            p.join(timeout=5)
        self._ps = []


_timed = timing.timed  # (ms, result), GC off while timing


def _gigatoken(tok):
    try:
        import gigatoken
    except ImportError:
        return None
    path = tok.checked_path()

    def prep(text):
        g = gigatoken.Tokenizer(path)  # empty cache; construction is not timed
        return lambda: g.encode(text)

    return prep


CPU_METHODS = ("toktier CPU, 1 thread", "toktier CPU, all cores", "fastokens")


def cpu_methods(tok) -> dict:
    """The host's CPU rows beside the GPU's (``full_bench.methods``, as issue #12's grid): the
    CPU engine on one thread and on all cores, IDs alone, and fastokens (one warm object) when
    installed. On a GPU host's many cores these say how the CPU engine scales there, which
    the 2-vCPU development VMs cannot."""
    from .full_bench import methods

    return methods(tok, lopt=False, only=CPU_METHODS)


def latency(tok, eng, trajs, sizes, samples, *, cpu=False, variants=None,
            progress=True) -> list[dict]:  # fmt: skip
    """Rows (method, chars, sample, ms, exact, host_syncs) on the fresh texts of experiment 06.
    ``cpu``: time the host's rows too (``cpu_methods``).
    ``variants``: {method name: another GpuEngine}, timed on the same texts with the arrays
    delivery (an A/B of an engine option in one run)."""
    giga = _gigatoken(tok)
    host = cpu_methods(tok) if cpu else {}
    for prep in host.values():  # warm objects, as deployed: each has served a request
        prep(fresh_str(fresh_texts(trajs, tok.name, 20_000, 1)[0]))()
    rows = []
    for chars in sizes:
        texts = fresh_texts(trajs, tok.name, chars, samples)
        for i, text in enumerate(tqdm(texts, desc=f"{tok.name} {chars:,}", disable=not progress)):
            ref = tok.hf.encode(text, add_special_tokens=False)
            ref_ids = ref.ids
            off = np.asarray(ref.offsets, dtype=np.int64).reshape(-1, 2)

            def arrays(text=text, eng=eng):
                out = eng.encode_arrays(text)
                eng.synchronize()
                return out

            # each method gets its own copy of the text (``timing.fresh_str``): the reference
            # call above cached the UTF-8 in ``text``
            gpu_methods = {
                "toktier GPU, arrays": partial(arrays, fresh_str(text)),
                "toktier GPU, list": partial(eng.encode_list, fresh_str(text)),
                "toktier GPU, export": partial(eng.export_spans, fresh_str(text)),
            }
            engine_of = dict.fromkeys(gpu_methods, eng)
            for vname, veng in (variants or {}).items():
                gpu_methods[vname] = partial(arrays, fresh_str(text), veng)
                engine_of[vname] = veng
            # rotated per sample: the first delivery timed on a fresh text pays its first
            # touch (2026-11-26, H100: arrays P90 113 ms at 100K when always first)
            order = list(gpu_methods.items())
            order = order[i % len(order) :] + order[: i % len(order)]
            for name, fn in order:
                settle_allocator()  # what the call before freed is not this one's (timing.py)
                ms, out = _timed(fn)
                last = engine_of[name].stats()["last_request"]
                # the check, not timed
                if name.endswith("list"):
                    exact = out == ref_ids
                elif not name.endswith("export"):  # arrays, and the variants
                    ids = np.asarray(out[0].get() if hasattr(out[0], "get") else out[0])
                    exact = ids.tolist() == ref_ids
                else:
                    exact = (
                        out[0].tolist() == ref_ids
                        and np.array_equal(out[1], off[:, 0])
                        and np.array_equal(out[2], off[:, 1])
                    )
                rows.append({"method": name, "chars": chars, "sample": i, "ms": ms,
                             "exact": bool(exact), "host_syncs": last["host_syncs"],
                             "graph": last["graph"], "units": last.get("units", False)})  # fmt: skip
            if giga is not None:
                rows.append({"method": "Gigatoken, empty cache", "chars": chars, "sample": i,
                             "ms": time_method(giga, text)[0]})  # fmt: skip
            for name, prep in host.items():
                ms, fn = time_method(prep, text)
                row = {"method": name, "chars": chars, "sample": i, "ms": ms}
                if name.startswith("toktier"):  # the check, not timed
                    row["exact"] = np.asarray(fn()).tolist() == ref_ids
                rows.append(row)
    return rows


def corpora(corpus_chars: int, sources=CORPUS_SOURCES) -> dict[str, list[str]]:
    """Experiment 06's real corpora, as documents (a batch), cut to ``corpus_chars`` in total."""
    from ..campaigns.corpus import mixed_documents

    out = {}
    for src in sources:
        docs, _ = mixed_documents(corpus_chars, sources=(src,))
        kept, size = [], 0
        for d in docs:
            if size >= corpus_chars:
                break
            kept.append(d[: corpus_chars - size])
            size += len(kept[-1])
        if kept:
            out[src] = kept
    return out


def throughput(tok, eng, docs_by_corpus: dict[str, list[str]], *, repeats: int = 2) -> list[dict]:
    """GB/s of UTF-8 per corpus: full IDs (encode_batch) and pre-tokenization alone (split_batch)."""
    rows = []
    for corpus, docs in docs_by_corpus.items():
        nbytes = sum(len(d.encode("utf-8")) for d in docs)
        refs = tok.hf.encode_batch(docs, add_special_tokens=False)
        # SentencePiece BPE has no pre-tokenizer, hence no split level to time
        pretok = tok.hf.pre_tokenizer.pre_tokenize_str if tok.hf.pre_tokenizer else None
        ref_ends = [[b for _p, (_a, b) in pretok(d)] for d in docs] if pretok else []

        def ids_ok(out, refs=refs):
            return all(got[0].tolist() == r.ids for got, r in zip(out, refs, strict=True))

        def split_ok(out, ref_ends=ref_ends):
            return all(e.tolist() == r for (_s, e), r in zip(out, ref_ends, strict=True))

        modes = [("ids", eng.encode_batch, ids_ok)]
        if pretok:
            modes.append(("pretokenize", eng.split_batch, split_ok))
        for mode, fn, check in modes:  # every run on new copies: the reference cached UTF-8
            runs = [_timed(partial(fn, [fresh_str(x) for x in docs]))
                    for _ in range(repeats)]  # fmt: skip
            last = eng.stats()["last_request"]
            best = min(ms for ms, _ in runs)
            ok = all(check(out) for _, out in runs)  # the check, not timed
            rows.append({"corpus": corpus, "mode": mode, "docs": len(docs), "bytes": nbytes,
                         "ms": best, "gb_per_s": nbytes / 1e9 / (best / 1e3), "exact": bool(ok),
                         "host_syncs": last["host_syncs"], "graph": bool(last["graph"]),
                         "batch_graphs": eng.batch_graphs,
                         "short_map": eng.short_map})  # fmt: skip
    return rows


def tail(tok, engines: dict, trajs, chars: int, samples: int, *, contention_procs=None,
         progress=True) -> list[dict]:  # fmt: skip
    """P99 rows at ``chars``: each engine (graph / eager), without and with CPU contention."""
    texts = fresh_texts(trajs, tok.name, chars, samples, stride=3)
    rows = []
    for contended in (False, True):
        ctx = Contention(contention_procs) if contended else _Null()
        with ctx:
            for name, eng in engines.items():
                for i, text in enumerate(
                    tqdm(texts, desc=f"{name} contended={contended}", disable=not progress)
                ):
                    ms, out = _timed(partial(eng.encode, fresh_str(text)))
                    last = eng.stats()["last_request"]
                    exact = out[0].tolist() == tok.hf.encode(text, add_special_tokens=False).ids
                    rows.append({"method": name, "contention": contended, "chars": chars,
                                 "sample": i, "ms": ms, "host_syncs": last["host_syncs"],
                                 "graph": last["graph"], "exact": exact})  # fmt: skip
    return rows


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _summaries(rows: list[dict], keys: tuple[str, ...]) -> list[dict]:
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r["ms"])
    return [{**dict(zip(keys, k, strict=True)), **summarize(v)} for k, v in groups.items()]


def run(
    tokenizers: list[str],
    archive: Path,
    *,
    sizes=SIZES,
    samples: int = 5,
    tail_chars: int = TAIL_CHARS,
    tail_samples: int = 200,
    corpus_chars: int = 1_000_000,
    repeats: int = 2,
    cpu: bool = True,
    contention_procs: int | None = None,
    corpus_sources: tuple[str, ...] = CORPUS_SOURCES,
    allow_simulator: bool = False,
    trajectories: int | None = None,
    progress: bool = True,
    batch_graphs_ab: bool = False,
    short_map_ab: bool = False,
    units_ab: bool = False,
) -> dict:
    """The whole GPU experiment; returns the JSON record (see module doc for its rows).
    ``batch_graphs_ab``: the throughput rows again with the other batch-graph setting.
    ``short_map_ab``: single requests (arrays) and throughput again with the other short-map
    setting (``GpuEngine(short_map=)``), on the same texts.  ``units_ab``: single requests
    (arrays) again with the other upload (``GpuEngine(units=)``: 16-bit characters, the
    UTF-8 written on the device), on the same texts."""
    from ..engine.gpu import GpuEngine, tune_simulator
    from ..registry import load
    from .streams import load_trajectories

    device = require_gpu(allow_simulator)
    if device == "cudasim":
        big = max([*sizes, tail_chars, corpus_chars])
        if big > SIMULATOR_MAX_CHARS:
            raise ToktierError(
                f"simulator smoke run: sizes up to {SIMULATOR_MAX_CHARS:,} characters "
                f"(asked {big:,}); use --smoke"
            )
        tune_simulator()
    trajs = load_trajectories(Path(archive), limit=trajectories)
    record: dict = {
        "kind": "gpu-bench",
        "device": device,
        "machine": machine_facts(),
        "parameters": {
            "tokenizers": tokenizers,
            "sizes": list(sizes),
            "samples": samples,
            "tail_chars": tail_chars,
            "tail_samples": tail_samples,
            "corpus_chars": corpus_chars,
            "repeats": repeats,
            "cpu": cpu,
            # the CPU rows: IDs alone (encode_ids), one thread and all cores, and fastokens
            # when installed; records without this key timed all cores with spans only
            "cpu_rows": "ids, 1 thread + all cores + fastokens",
            "contention_procs": contention_procs or os.cpu_count(),
            "archive": str(archive),
            "trajectories": len(trajs),
            "corpus_sources": list(corpus_sources),
            "batch_graphs_ab": batch_graphs_ab,
            "short_map_ab": short_map_ab,
            "units_ab": units_ab,
            # every timed call gets its own str copy (``timing.fresh_str``): records without
            # this key timed later methods on a str whose UTF-8 the reference call had cached
            "fresh_str": True,
            # the allocator settled before every clock (``timing.settle_allocator``): records
            # without this key charged a timed call for what the call before it had freed
            "settled_allocator": True,
        },
        "engines": {},
        "latency": [],
        "throughput": [],
        "tail": [],
    }
    docs_by_corpus = corpora(corpus_chars, corpus_sources)
    for name in tokenizers:
        tok = load(name)
        eng = GpuEngine(tok)  # graphs on a GPU (captured per bucket by warmup)
        eager = GpuEngine(tok, graphs=False, cpu=eng._cpu)
        warm = eng.warmup()
        warm_eager = eager.warmup(capture=False)
        record["gpu"] = eng.device_facts()
        variants = {}
        if short_map_ab and eng.sp_tables is None:  # byte-level BPE only
            sm = GpuEngine(tok, short_map=not eng.short_map, cpu=eng._cpu)
            sm.warmup()
            label = "with" if sm.short_map else "without"
            variants[f"toktier GPU, arrays, {label} short map"] = sm
        if units_ab:
            un = GpuEngine(tok, units=not eng.units, cpu=eng._cpu)
            un.warmup()
            label = "16-bit" if un.units else "UTF-8"
            variants[f"toktier GPU, arrays, {label} upload"] = un
        for r in latency(tok, eng, trajs, sizes, samples, cpu=cpu, variants=variants,
                         progress=progress):  # fmt: skip
            record["latency"].append({"tokenizer": name, **r})
        for r in throughput(tok, eng, docs_by_corpus, repeats=repeats):
            record["throughput"].append({"tokenizer": name, **r})
        if batch_graphs_ab and eng.graphs:
            other = GpuEngine(tok, batch_graphs=not eng.batch_graphs, cpu=eng._cpu)
            other.warmup()
            for r in throughput(tok, other, docs_by_corpus, repeats=repeats):
                record["throughput"].append({"tokenizer": name, **r})
            del other
        for other in variants.values():
            for r in throughput(tok, other, docs_by_corpus, repeats=repeats):
                record["throughput"].append({"tokenizer": name, **r})
        variants.clear()
        engines = {"toktier GPU, graph replay": eng, "toktier GPU, eager": eager}
        for r in tail(tok, engines, trajs, tail_chars, tail_samples,
                      contention_procs=contention_procs, progress=progress):  # fmt: skip
            record["tail"].append({"tokenizer": name, **r})
        record["engines"][name] = {
            "warmup_s": warm,
            "warmup_eager_s": warm_eager,
            "graphs": eng.stats()["graphs_enabled"],
            "graphs_reason": eng.stats()["graphs_reason"],
            "stats": eng.stats(),
            "stats_eager": eager.stats(),
        }
    record["latency_summary"] = _summaries(record["latency"], ("tokenizer", "method", "chars"))
    record["tail_summary"] = _summaries(record["tail"], ("tokenizer", "method", "contention"))
    syncs: dict = {}
    for r in record["latency"] + record["tail"]:
        if "host_syncs" in r:
            syncs.setdefault(r["tokenizer"], {}).setdefault(r["method"], set()).add(r["host_syncs"])
    record["host_syncs"] = {t: {m: sorted(v) for m, v in d.items()} for t, d in syncs.items()}
    record["all_exact"] = all(
        r.get("exact", True) for r in record["latency"] + record["throughput"] + record["tail"]
    )
    return record
