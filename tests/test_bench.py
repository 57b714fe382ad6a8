"""Benchmark plumbing (no timing assertions): identical texts across methods, stream cells, TTL shares."""

import numpy as np
import pytest

import toktier
from toktier.bench import repair_bench, streams, timing
from toktier.workload import stats, trajectories


def test_summarize_percentiles():
    s = timing.summarize([1, 2, 3, 4, 100])
    assert s["n"] == 5 and s["p50"] == 3 and s["p90"] > 4 and s["p99"] > s["p90"]
    assert np.isnan(timing.summarize([])["p50"])
    value = timing.time_ms(lambda: sum(range(1000)))  # a duration is returned, never asserted on
    assert isinstance(value, float)


def test_cells_are_real_text_cut_at_message_edges(trajectory_archive):
    trajs = streams.load_trajectories(trajectory_archive, limit=30)
    cell = streams.natural_cell(trajs, "llama3", 50_000, 4, start=2)
    assert 50_000 <= len(cell.prefix) < 50_000 + 200_000
    assert cell.prefix.endswith("<|eot_id|>") and len(cell.appends) == 4
    assert all(
        a.startswith("<|start_header_id|>") and a.endswith("<|eot_id|>") for a in cell.appends
    )
    sliced = streams.sliced_cell(trajs, "llama3", 20_000, 3_000, 2, start=0)
    assert len(sliced.prefix) == 20_000 and [len(a) for a in sliced.appends] == [3_000, 3_000]
    with pytest.raises(ValueError):
        streams.sliced_cell(trajs[:1], "llama3", 10**9, 10, 1, start=0)


def test_latency_harness_gives_every_method_the_same_texts(trajectory_archive):
    trajs = streams.load_trajectories(trajectory_archive, limit=20)
    tok = toktier.load("llama3")
    samples = repair_bench.repair_latency(
        tok,
        trajs,
        [30_000],
        sessions=1,
        appends=2,
        methods=("toktier repair", "HF full re-encode"),
        progress=False,
    )
    by = {
        m: [(s["context_chars"], s["delta_chars"]) for s in samples if s["method"] == m]
        for m in ("toktier repair", "HF full re-encode")
    }
    assert by["toktier repair"] == by["HF full re-encode"] and len(by["toktier repair"]) == 2
    assert samples[1]["exact"] is True and samples[0]["path"] == "repair"


def test_latency_table_ratios_are_per_cell():
    rows = [
        {"tokenizer": t, "context": c, "method": m, "ms": ms}
        for t, scale in (("a", 1.0), ("b", 10.0))
        for c in (100, 200)
        for m, base in (("toktier repair", 1.0), ("HF full re-encode", 4.0))
        for ms in (base * scale * c / 100, 3 * base * scale * c / 100, 2 * base * scale * c / 100)
    ]
    table = repair_bench.latency_table(rows, by=["tokenizer", "context", "method"])
    assert len(table) == 8 and set(table.n) == {3}
    hf = table[table.method == "HF full re-encode"]
    assert np.allclose(hf.p50_vs_toktier, 4.0)
    assert np.allclose(table[table.method == "toktier repair"].p50_vs_toktier, 1.0)
    b200 = table[(table.tokenizer == "b") & (table.context == 200)].set_index("method")
    assert b200.loc["toktier repair", "p50_ms"] == 40.0  # median of 20, 60, 40
    assert list(repair_bench.latency_table([]).columns)[-1] == "p50_vs_toktier"


def test_ttl_hit_share_by_hand():
    doc = {
        "messages": [{"role": "user", "content": "t"}]
        + [
            {
                "role": "assistant",
                "content": "a",
                "extra": {"response": {"created": t, "usage": {}}},
            }
            for t in (0.0, 20.0, 400.0, 4000.0)
        ]
    }
    table = stats.call_table([trajectories.parse_trajectory(doc, "s")], None)
    rows = {r["ttl_s"]: r["hit_share"] for r in stats.ttl_hit_share(table, [10, 300, 3599, 3600])}
    assert rows == {10: 0.0, 300: 0.25, 3599: 0.5, 3600: 0.75}


def test_full_bench_fresh_texts_are_distinct_real_texts(trajectory_archive):
    from toktier.bench import full_bench, streams

    trajs = streams.load_trajectories(trajectory_archive, limit=40)
    texts = full_bench.fresh_texts(trajs, "llama3", 20_000, 3)
    assert [len(t) for t in texts] == [20_000] * 3
    assert len(set(texts)) == 3


def test_continuation_cells_cut_from_one_place_are_identical():
    from toktier.bench import continuation

    stream = "".join(f"line {k}: some text\n" for k in range(5_000))
    small = continuation.session_cells(stream, 1_000, 50, 4, 3, tail_from=40_000)
    big = continuation.session_cells(stream, 30_000, 50, 4, 3, tail_from=40_000)
    assert len(small) == len(big) == 3
    assert [d for _, d in small] == [d for _, d in big]  # identical continuations
    assert all(len(d) == 5 and {len(x) for x in d} == {50} for _, d in small)
    assert len({tuple(d) for _, d in small}) == 3  # each session its own continuations
    # timed continuations (after the first) arrive at contexts centred on the target
    for target, cells in ((1_000, small), (30_000, big)):
        prefix, deltas = cells[0]
        at = [len(prefix) + sum(len(x) for x in deltas[:j]) for j in range(1, len(deltas))]
        assert prefix == stream[: len(prefix)] and abs(sorted(at)[len(at) // 2] - target) <= 50
    cycled = continuation.session_cells("abc", 10, 2, 1, 1, tail_from=10)  # short corpora cycle
    assert cycled[0][0] == "abcabcab" and cycled[0][1] == ["bc", "ab"]


def test_continuations_are_held_out_and_the_same_at_every_context():
    """The continuations come from the stream's held-out end: the same texts at every
    context, in no seed (even where a short stream is cycled to reach the largest context)
    and not in the warm-up traffic (the layout's opening)."""
    from toktier.bench import continuation

    stream = "".join(f"line {k:05d}: some text\n" for k in range(3_000))  # 66K characters
    contexts = [1_000, 30_000, 200_000]  # the largest is three times the stream
    layout, tail_from = continuation.held_out_layout(stream, max(contexts), 50 * 5 * 3)
    assert layout[tail_from:] == stream[-50 * 5 * 3 :]
    cells = {c: continuation.session_cells(layout, c, 50, 4, 3, tail_from) for c in contexts}
    deltas = {c: [d for _, ds in cs for d in ds] for c, cs in cells.items()}
    assert deltas[1_000] == deltas[30_000] == deltas[200_000]  # identical continuations
    assert len(set(deltas[1_000])) == 15  # each session its own
    warm = layout[:20_000]
    for c, cs in cells.items():
        prefix = cs[0][0]
        assert abs(len(prefix) - (c - 2 * 50)) <= 1
        assert not any(d in prefix or d in warm for d in deltas[c]), c
    with pytest.raises(ValueError, match="cannot hold out"):
        continuation.held_out_layout("short", 100, 5)


def test_each_cell_gets_its_own_engines(trajectory_archive, monkeypatch):
    """A cell's methods are new objects (engines with empty piece caches, then the same
    warm-up): no cell meets continuations another cell's objects have seen."""
    from toktier.bench import continuation

    made = []
    real = continuation.private_engine

    def counting(tok):
        made.append(tok.name)
        return real(tok)

    monkeypatch.setattr(continuation, "private_engine", counting)
    trajs = streams.load_trajectories(trajectory_archive, limit=10)
    tok = toktier.load("llama3")
    text = streams.stream_text(trajs, "llama3", 40_000)
    rows = continuation.continuation_latency(
        tok, {"t": text}, [6_000, 12_000], samples=2, methods=("tier append",),
        progress=False, warm_chars=5_000,
    )  # fmt: skip
    assert made == ["llama3", "llama3"]  # one tier engine per cell
    assert all(r["exact"] for r in rows) and len(rows) == 4
    by_ctx = {c: [r["context_chars"] for r in rows if r["context"] == c] for c in (6_000, 12_000)}
    assert all(abs(x - c) <= 1_100 for c, xs in by_ctx.items() for x in xs)


def test_continuation_harness_is_exact_and_fair(trajectory_archive):
    from toktier.bench import continuation

    trajs = streams.load_trajectories(trajectory_archive, limit=10)
    tok = toktier.load("llama3")
    text = streams.stream_text(trajs, "llama3", 40_000)
    methods = ("tier append", "tier full text", "tier append, Python plan")
    rows = continuation.continuation_latency(
        tok, {"t": text}, [12_000], samples=4, methods=methods, progress=False
    )
    summary = continuation.summarize(rows)
    assert {s["method"] for s in summary} == set(methods)
    assert all(s["n"] == 4 and s["exact"] and s["repaired"] == 1.0 for s in summary)
    assert all(abs(r["context_chars"] - 12_000) <= 3 * 1100 for r in rows)
    assert all(s["p99_us"] is None for s in summary)  # P99 needs >= 100 samples
    goals = continuation.targets(summary)
    assert {g["target"] for g in goals} >= {"tier append: P50, contexts 12K–200K (worst)"}


def test_frontend_cost_replays_the_mixture_exactly(trajectory_archive):
    from toktier.bench import frontend_cost

    trajs = streams.load_trajectories(trajectory_archive, limit=1)
    tok = toktier.load("llama3")
    methods = ("HF full re-encode", "tier over reference windows", "tier over the engine")
    rows = frontend_cost.frontend_cost(tok, trajs, methods=methods, progress=False)
    calls = len(trajs[0].calls)
    assert len(rows) == 3 * calls
    tier = [r for r in rows if r["method"] == "tier over the engine"]
    # Later calls are served from the session's state: repaired, or (the deployed tier is
    # delta-aware, a timing-calibrated choice) a large append encoded in full by the engine.
    later = [r["path"] for r in tier[1:]]
    assert tier[0]["path"] != "repair" and set(later) <= {"repair", "cpu"}
    assert later.count("repair") >= len(later) // 2
    assert all(r["exact"] for r in rows if r["method"].startswith("tier"))
    table = {t["method"]: t for t in frontend_cost.summarize(rows)}
    assert table["tier over the engine"]["requests"] == calls
    assert (
        table["HF full re-encode"]["cores_per_1000_rps"]
        == table["HF full re-encode"]["E_t_tok_cpu_ms"]
    )
    # what each call scanned: a repair its window (a small part of the text), else the text
    for r in rows:
        assert r["context_bytes"] >= r["context_chars"] > 0
        if r["path"] == "repair":
            assert 0 <= r["scanned_chars"] < r["context_chars"]
        else:
            assert r["scanned_chars"] == r["context_chars"]
            assert r["scanned_bytes"] == r["context_bytes"]
    total = {t["method"]: t for t in frontend_cost.accounts(rows)[0]}
    hf, tier = total["HF full re-encode"], total["tier over the engine"]
    # the accounts share their CPU time: what differs is the bytes (no timing judged)
    assert hf["context_MB"] == hf["scanned_MB"] and tier["context_MB"] > tier["scanned_MB"]


def test_served_and_scanned_accounts_by_hand():
    """Sums of bytes over sums of CPU time, per method and per context bin; the crossing is
    the first bin from which one method's served account stays above the other's."""
    from toktier.bench import frontend_cost

    def row(method, ctx, scanned, cpu_ms):
        return {"method": method, "context_bytes": ctx, "scanned_bytes": scanned,
                "cpu_ms": cpu_ms}  # fmt: skip

    rows = []
    for ctx in (1_000, 100_000, 10_000_000):  # three bins, five calls each
        for _ in range(5):
            rows.append(row("full", ctx, ctx, ctx / 1e5))  # 100 MB/s, served = scanned
            rows.append(row("tier", ctx, 100, 1.0))  # 1 ms per call whatever the context
    total, binned = frontend_cost.accounts(rows)
    t = {r["method"]: r for r in total}
    assert t["full"]["served_MB_per_core_s"] == t["full"]["scanned_MB_per_core_s"]
    assert abs(t["full"]["served_MB_per_core_s"] - 100) < 1e-9
    assert abs(t["tier"]["scanned_MB_per_core_s"] - 0.1) < 1e-9  # 1,500 B over 15 ms
    tier_bins = [b["served_MB_per_core_s"] for b in binned if b["method"] == "tier"]
    assert [round(x, 6) for x in tier_bins] == [1.0, 100.0, 10_000.0]
    assert frontend_cost.crossing(binned, "tier", "full") == 100_000  # equal there, above after
    assert frontend_cost.crossing(binned, "full", "tier") is None


def test_sample_order_rotates_the_light_methods_and_keeps_the_heavy_ones_last():
    from toktier.bench.timing import rotated, sample_order

    assert rotated("abc", 0) == ["a", "b", "c"] and rotated("abc", 4) == ["b", "c", "a"]
    assert rotated([], 5) == []
    ms = {"toktier 1": 1, "HF serial": 2, "toktier all": 3, "Gigatoken": 4, "LoPT repro.": 5}
    orders = [[name for name, _ in sample_order(ms, k)] for k in range(3)]
    assert [o[0] for o in orders] == ["toktier 1", "toktier all", "toktier 1"]
    # a new object per sample (Gigatoken) runs after the persistent ones, the heavy ones last
    assert all(o[-3:] == ["Gigatoken", "HF serial", "LoPT repro."] for o in orders)


def test_fresh_str_carries_no_utf8_cache():
    """A str whose UTF-8 a PyO3 tokenizer made keeps it (CPython caches it; ``getsizeof``
    counts it); each timed method gets an equal copy without it, as a new request has."""
    import ctypes
    import sys

    from toktier.bench.timing import fresh_str

    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
    as_utf8.restype = ctypes.c_void_p
    as_utf8.argtypes = [ctypes.py_object, ctypes.POINTER(ctypes.c_ssize_t)]
    text = "naïve café " * 50
    bare = sys.getsizeof(text)
    as_utf8(text, ctypes.byref(ctypes.c_ssize_t()))
    assert sys.getsizeof(text) > bare  # the cache is there now
    copy = fresh_str(text)
    assert copy == text and copy is not text and sys.getsizeof(copy) == bare
    assert fresh_str("") == ""


def test_time_method_settles_the_allocator_between_preparing_and_the_clock(monkeypatch):
    """A method's call is prepared on a copy of the text, then the allocator is settled (what
    earlier calls freed is sorted outside the clock), then the call alone is timed."""
    from toktier.bench import timing

    events = []
    monkeypatch.setattr(timing, "settle_allocator", lambda: events.append("settle"))
    text = "naïve café " * 20

    def prep(t):
        events.append(("prep", t == text, t is text))
        return lambda: events.append("call")

    ms, fn = timing.time_method(prep, text)
    assert events == [("prep", True, False), "settle", "call"] and ms >= 0
    fn()
    assert events[-1] == "call"


def test_settle_allocator_stops_within_its_rounds():
    from toktier.bench.timing import settle_allocator

    assert settle_allocator(rounds=1) == 1
    assert 1 <= settle_allocator(rounds=3) <= 3


def test_engine_targets_give_each_method_its_own_copy(monkeypatch):
    """No method is timed on a str another method has already converted."""
    from toktier.bench import engine_targets

    seen = []

    def prep(t):
        seen.append(t)
        return lambda: [1]

    monkeypatch.setattr(engine_targets, "methods",
                        lambda tok, lopt, only: {"toktier CPU, 1 thread": prep, "fastokens": prep})  # fmt: skip

    class Tok:
        name = "x"

        class hf:  # the attribute's name in Tokenizer
            normalizer = None

            @staticmethod
            def encode(text, add_special_tokens):
                return type("E", (), {"ids": [1]})()

    monkeypatch.setattr(engine_targets, "corpora", lambda: {"code": " ".join(map(str, range(200)))})
    rows = engine_targets.run(Tok, [40], 2, kinds=("code",), progress=False, small_factor=1)
    assert len(rows) == 4 and all(r["exact"] for r in rows if r["method"].startswith("toktier"))
    timed = seen[-4:]  # after the warm-ups
    assert len({id(t) for t in timed}) == 4 and len(set(timed)) == 2


def test_engine_targets_time_every_method_on_the_same_distinct_texts():
    """Issue #12's target benchmark: distinct slices of exactly the asked size, every method
    on each, toktier's samples checked against the reference, ratios computed per cell."""
    import toktier
    from toktier.bench import engine_targets

    texts = engine_targets.slices("abcdefghij" * 10, 30, 3)
    assert [len(t) for t in texts] == [30] * 3 and len(set(texts)) == 3
    assert engine_targets.slices("abc", 7, 1) == ["abcabca"]  # wraps around a short corpus
    assert engine_targets.cell_samples(48_000, 5) == 15  # small cells: more samples
    assert engine_targets.cell_samples(1_000_000, 5) == 5
    rows = engine_targets.run(toktier.load("llama3"), [2_000], 2, kinds=("code",), progress=False,
                              small_factor=1)  # fmt: skip
    methods = {r["method"] for r in rows}
    assert {"toktier CPU, 1 thread", "toktier CPU, all cores", "HF serial"} <= methods
    assert all(r["exact"] for r in rows if r["method"].startswith("toktier"))
    assert {(r["sample"], r["chars"]) for r in rows} == {(0, 2_000), (1, 2_000)}
    first = [next(r["method"] for r in rows if r["sample"] == s) for s in (0, 1)]
    assert first[0] != first[1]  # the order rotates: no method always goes first
    (cell,) = engine_targets.summary(rows)
    assert (cell["tokenizer"], cell["text"], cell["chars"]) == ("llama3", "code", 2_000)
    assert {"1t_vs_gigatoken", "1t_vs_hf", "all_vs_fastokens", "parallel_speedup"} <= set(cell)


def test_gpu_report_draws_real_gpu_runs_only(tmp_path):
    """Committed GPU records become tables and a figure; simulator smoke records never do."""
    import json

    from toktier.bench import gpu_report

    def record(device, commit, p50):
        lat = [{"tokenizer": "llama3", "method": m, "chars": c, "n": 3, "p50": p50 * c / 1e5,
                "p90": p50 * c / 1e5 + 1} for m in ("toktier GPU, arrays", "Gigatoken, empty cache")
               for c in (100_000, 1_000_000)]  # fmt: skip
        tail = [{"tokenizer": "llama3", "method": m, "contention": c, "n": 40, "p50": 1.0,
                 "p90": 1.5, "p99": 2.0 + c, "mean": 1.1}
                for m in ("toktier GPU, graph replay", "toktier GPU, eager") for c in (False, True)]  # fmt: skip
        thr = [{"tokenizer": "llama3", "corpus": "stdlib", "mode": "ids", "gb_per_s": 0.5}]
        return {"device": device, "gpu": {"gpu": "Test GPU"}, "machine": {"commit": commit},
                "latency_summary": lat, "tail_summary": tail, "throughput": thr,
                "all_exact": True}  # fmt: skip

    runs = tmp_path / "runs"
    (runs / "engine-gpu").mkdir(parents=True)
    (tmp_path / "tables").mkdir()
    (runs / "gpu-a.json").write_text(json.dumps(record("gpu", "0123456789abcdef+dirty", 1.0)))
    (runs / "gpu-sim.json").write_text(json.dumps(record("cudasim", "fedcba", 9.0)))
    fresh = record("gpu", "fedcba9876", 2.0) | {"parameters": {"fresh_str": True}}
    (runs / "gpu-b.json").write_text(json.dumps(fresh))
    cert = {"device": "gpu", "gpu": {"gpu": "Test GPU"}, "machine": {"commit": "abcdef0123"},
            "results": [{"tokenizer": "llama3", "divergences": 0, "id_chars": 10, "examples": []}]}  # fmt: skip
    (runs / "engine-gpu" / "llama3.json").write_text(json.dumps(cert))
    cert_sm = cert | {"gpu_options": {"short_map": True, "batch_graphs": None}}
    (runs / "engine-gpu" / "llama3-short-map.json").write_text(json.dumps(cert_sm))
    # since the map became the default, the engine's own statistics say what ran
    stats = {"engine_stats": {"short_map": True, "units": True}}
    cert_dflt = cert | {"results": [cert["results"][0] | stats], "gpu_options": {"short_map": None}}
    (runs / "engine-gpu" / "qwen3.json").write_text(json.dumps(cert_dflt))
    out = gpu_report.write_gpu_report(tmp_path)
    assert set(out["latency"].file) == {"gpu-a.json", "gpu-b.json"}
    # only a record that says every timed call had its own str copy is tagged so
    assert out["latency"].groupby("file").fresh_str.all().to_dict() == {
        "gpu-a.json": False, "gpu-b.json": True}
    (runs / "gpu-b.json").unlink()
    out = gpu_report.write_gpu_report(tmp_path)
    assert set(out["latency"].commit) == {"0123456+dirty"} and len(out["latency"]) == 4
    assert out["certification"].commit.tolist() == ["abcdef0"] * 3
    # files sorted: the short-map record first; a record without options or statistics ran
    # without the map; one whose engine says it had the map (the default) ran with it
    assert out["certification"].short_map.tolist() == [True, False, True]
    assert out["certification"]["units"].tolist() == [False, False, True]  # 16-bit uploads
    assert "examples" not in out["certification"]
    assert (tmp_path / "figures" / "full-tokenization-gpu.png").stat().st_size > 10_000
    assert (tmp_path / "tables" / "gpu-tail.csv").read_text().count("\n") == 5
    # a tail run (one size timed) gets no latency panel; its P99s join the tails' panel
    tail_run = record("gpu", "0123456789abcdef", 1.0)
    tail_run["latency_summary"] = [r for r in tail_run["latency_summary"] if r["chars"] == 100_000]
    tail_run["tail_summary"] = [r | {"n": 1000} for r in tail_run["tail_summary"]]
    (runs / "gpu-tail.json").write_text(json.dumps(tail_run))
    tables = gpu_report.gpu_tables(gpu_report.gpu_runs(runs))
    assert gpu_report.plot_gpu(tables, tmp_path / "f.png") == ["gpu-a.json"]
    assert set(tables["tail"].file) == {"gpu-a.json", "gpu-tail.json"}
    (runs / "gpu-tail.json").unlink()
    from toktier.cli import main

    assert main(["gpu-report", str(tmp_path)]) == 0  # the same, from the command line
    (runs / "gpu-a.json").unlink()
    assert gpu_report.write_gpu_report(tmp_path) is None
    assert main(["gpu-report", str(tmp_path)]) == 1  # nothing to draw: says so


def test_gpu_best_run_picks_one_whole_record():
    """Route C's GPU rows come from one record per tokenizer (the lowest summed P50), never
    a mix of two GPUs' cells; records without the method or tokenizer are passed over."""
    from toktier.bench.gpu_report import best_run

    def rec(name, p50s, method="toktier GPU, export", tok="qwen3"):
        return {"file": name, "latency_summary": [
            {"tokenizer": tok, "method": method, "chars": c, "p50": p}
            for c, p in zip((100_000, 1_000_000), p50s, strict=True)]}  # fmt: skip

    a, b = rec("a", [1.0, 6.0]), rec("b", [2.0, 4.0])  # b: slower small, faster large
    other = rec("c", [0.1, 0.1], tok="llama3")
    assert best_run([a, b, other], "qwen3", "toktier GPU, export")["file"] == "b"
    assert best_run([b, a], "qwen3", "toktier GPU, export")["file"] == "b"
    assert best_run([a, rec("d", [0.1, 0.1], method="toktier GPU, arrays")], "qwen3",
                    "toktier GPU, export")["file"] == "a"  # fmt: skip
    assert best_run([a, b], "tekken", "toktier GPU, export") is None
    # a tail run timed one small size: its short sum never beats a run of every size
    tail = {"file": "t", "latency_summary": [
        {"tokenizer": "qwen3", "method": "toktier GPU, export", "chars": 100_000, "p50": 0.5}]}
    assert best_run([tail, a, b], "qwen3", "toktier GPU, export")["file"] == "b"
    assert best_run([tail], "qwen3", "toktier GPU, export")["file"] == "t"


def test_compare_runs_judges_verdicts_and_method_order(tmp_path):
    """A run agrees with the evidence when its exactness verdicts and its method ordering do;
    a divergence or a flipped ordering is a disagreement; a missing table is not judged."""
    import pandas as pd

    from toktier.bench import compare

    def tree(name, divergences, fast_ms, slow_ms):
        t = tmp_path / name / "tables"
        t.mkdir(parents=True)
        pd.DataFrame({"tokenizer": ["a", "b"], "divergences": [0, divergences]}).to_csv(
            t / "user-files-certification.csv", index=False)  # fmt: skip
        rows = [{"context": c, "method": m, "p50_ms": v * c}
                for c in (1, 10) for m, v in (("toktier", fast_ms), ("peer", slow_ms))]  # fmt: skip
        pd.DataFrame(rows).to_csv(t / "repair-latency.csv", index=False)
        return tmp_path / name

    evidence = tree("evidence", 0, 1.0, 3.0)
    same = compare.write_comparison(tree("same", 0, 2.0, 6.5), evidence)
    by = {(r.table, r.kind): r for r in same.itertuples()}
    assert by[("user-files-certification.csv", "exactness")].agree
    assert by[("repair-latency.csv", "ordering")].agree
    assert "median value ratio run/evidence 2.08" in by[("repair-latency.csv", "ordering")].note
    assert pd.isna(by[("engine-certification.csv", "exactness")].agree)  # missing in both
    worse = compare.compare(tree("worse", 2, 3.0, 1.0), evidence)
    by = {(r.table, r.kind): r for r in worse.itertuples()}
    assert by[("user-files-certification.csv", "exactness")].run == "FAIL"
    assert by[("user-files-certification.csv", "exactness")].agree is False
    assert by[("repair-latency.csv", "ordering")].agree is False
    md = (tmp_path / "same" / "comparison.md").read_text()
    assert "2 of 2 comparable checks agree" in md
    # through the CLI, as the workflow's last rule calls it: the run is a folder (an input,
    # not an output path), exit 0 when every check agrees and 1 when one does not
    from toktier.cli import main

    assert main(["compare-runs", str(tmp_path / "same"), "--evidence", str(evidence)]) == 0
    assert main(["compare-runs", str(tmp_path / "worse"), "--evidence", str(evidence)]) == 1


def test_capacity_ratios_compare_the_tier_with_peers_on_the_same_cores():
    from toktier.bench import tail_capacity as tc

    configs = tc.load_configs([1, 2], fastokens=True)
    assert [c["name"] for c in configs] == [
        "stateless reference, 1 worker", "stateless reference, 2 workers",
        "stateless fastokens, 2 workers", "toktier, 1 repair worker", "toktier, 2 repair workers",
    ]  # fmt: skip
    assert [c["mode"] for c in tc.load_configs([1], fastokens=False)] == ["reference", "tier"]

    def row(cfg, rps, p99, backlogged=False):
        return {"config": cfg, "offered_rps": rps, "p99_ms": p99, "backlogged": backlogged,
                "generator_late_p99_ms": rps / 100}  # fmt: skip

    rows = [row("stateless reference, 1 worker", 2, 40), row("stateless reference, 1 worker", 4, 90),
            row("stateless reference, 2 workers", 4, 45), row("stateless reference, 2 workers", 8, 300),
            row("stateless fastokens, 2 workers", 100, 30), row("stateless fastokens, 2 workers", 200, 70),
            row("toktier, 1 repair worker", 400, 20),
            row("toktier, 2 repair workers", 400, 10), row("toktier, 2 repair workers", 800, 20, True)]  # fmt: skip
    r = tc.capacity_ratios(rows, configs, [50, 100], ladder_top=800)
    assert r["50 ms"]["tier"] == 400  # the backlogged 800 never counts
    assert r["50 ms"]["ratio vs same cores"] == 100 and r["50 ms"]["ratio vs fastokens"] == 4
    assert r["50 ms"]["stateless reference, 1 worker"] == 2
    assert r["100 ms"]["ratio vs fastokens"] == 2 and r["100 ms"]["stateless reference, 1 worker"] == 4
    assert r["50 ms"]["tier: generator lag P99 at that load (ms)"] == 4.0
    assert not r["50 ms"]["tier at the top of its ladder"]


def test_engine_stage_profile_rows_and_figure(tmp_path):
    """Every stage, the warm total and the empty-cache total are measured on the profile's
    texts; the figure draws before/after bars with the empty-cache mark."""
    from toktier.bench import engine_profile

    texts = engine_profile.profile_texts(3_000)
    assert set(texts) == {"code", "multilingual", "code + multilingual"}
    assert all(len(t) == 3_000 for t in texts.values())
    rows = engine_profile.stage_profile(toktier.load("llama3"), texts, repeats=1)
    stages = [f"{k}_ms" for k in (*engine_profile.STAGES, "total", "total_empty_cache")]
    for r in rows:
        assert r["tokenizer"] == "llama3" and r["chars"] == 3_000
        assert all(np.isfinite(r[k]) for k in stages), r  # every stage measured (no value judged)
    before = [{**r, "total_empty_cache_ms": ""} for r in rows]  # older tables lack the column
    path = tmp_path / "stages.png"
    engine_profile.plot_stages(rows, path, before)
    assert path.stat().st_size > 10_000


def test_engine_profile_times_the_ascii_path_the_engine_runs():
    """On an all-ASCII text the profile times the engine's own literal scan (the word-wise
    one, where the literals allow it) and pre-tokenizer (the bit-parallel one for llama3):
    they find what the generic scan and the automaton find."""
    from toktier.bench import engine_profile
    from toktier.engine import ascii_pretok, cpu

    eng = cpu.engine_for(toktier.load("llama3"))
    text = "x = 1  # <|begin_of_text|> ok <|eot_id|>\n" * 40 + "<|end_of_text|>"
    u8 = np.frombuffer(text.encode(), np.uint8)
    n = u8.size
    lit = (*eng._trie_args, *(np.empty(n, np.int64) for _ in range(3)))
    assert eng._ascii_literals[0] == cpu.ASCII_LITERAL_WORDS  # llama3's literals all start "<"
    got = engine_profile._ascii_literals(eng, u8, lit)
    found = lit[-3][:got].copy(), lit[-2][:got].copy(), lit[-1][:got].copy()
    want = cpu._find_literals(u8, n, *lit)
    assert got == want == 81
    assert all(np.array_equal(a, b[:want]) for a, b in zip(found, lit[-3:], strict=True))
    assert eng.bpe.ascii_pre == 3
    fl = np.zeros(n, np.uint16)
    ends, auto = np.empty(n + 1, np.int64), np.empty(n + 1, np.int64)
    scratch = np.empty(ascii_pretok.scratch_words(n), np.int64)
    k = engine_profile._ascii_pretokenize(eng, u8, fl, ends, scratch)
    m = engine_profile._pretokenize_all(u8, fl, eng.tables.fold, eng.tables.family_code, n, auto,
                                        eng.bpe)  # fmt: skip
    assert k == m > 0 and np.array_equal(ends[:k], auto[:m])


def test_engine_profile_times_deepseeks_decoded_pretokenizer():
    """On decoded text the profile times the pre-tokenizer ``encode_range`` runs: deepseek's
    bit-parallel one, which finds the three-stage matcher's ends."""
    from toktier.bench import engine_profile
    from toktier.engine import ascii_pretok, cpu

    eng = cpu.engine_for(toktier.load("deepseek-v4"))
    text = "réponse «ok» 中文カタカナ・テスト 12345\n\tx = 'ж'  # ٢٣\r\n" * 30
    u8 = np.frombuffer(text.encode(), np.uint8)
    wk = eng._workspace(u8.size)
    n = cpu._prepare(u8, eng.tables.bits, wk.cps, wk.char_start, wk.fl)
    ends, want = np.empty(n + 1, np.int64), np.empty(n + 1, np.int64)
    scratch = np.empty(ascii_pretok.scratch_words_cps(n), np.int64)
    k = engine_profile._decoded_pretokenize(eng, wk, n, ends, scratch)
    m = cpu.pretokenize_segment(wk.cps, wk.fl, eng.tables.fold, 0, n, eng.tables.family_code,
                                want, 0)  # fmt: skip
    assert k == m > 0 and np.array_equal(ends[:k], want[:m])


@pytest.mark.parametrize("yield_gil", [False, True])
def test_generator_probe_measures_every_request(yield_gil):
    """The GIL probe delivers each scheduled request once (its delays are never asserted on)."""
    from toktier import loadgen
    from toktier.bench import generator_probe

    late = generator_probe.delivery_delays(300.0, yield_gil, duration_s=0.2, seed=1)
    assert late.size == loadgen.poisson_offsets(300.0, 0.2, seed=1).size > 0


def test_the_front_ends_verifier_share_is_split_over_its_repair_workers():
    from toktier.bench.tail_capacity import worker_tier_kw

    kw = {"verify_cpu_share": 0.25, "delta_aware": False}
    assert worker_tier_kw(kw, 2) == {"verify_cpu_share": 0.125, "delta_aware": False}
    assert worker_tier_kw(kw, 1) == kw and kw["verify_cpu_share"] == 0.25  # not mutated
    assert worker_tier_kw(None, 2) == {} and worker_tier_kw({"x": 1}, 4) == {"x": 1}


def test_delta_sweep_times_both_tier_modes_on_the_same_cells_and_checks_the_first(
    trajectory_archive,
):
    trajs = streams.load_trajectories(trajectory_archive, limit=30)
    tok = toktier.load("llama3")
    methods = ("toktier repair", "toktier, delta-aware")
    rows = repair_bench.delta_sweep(tok, trajs, [20_000], [3_000], sessions=2, methods=methods,
                                    appends=3, check_first=True, progress=False)  # fmt: skip
    assert len(rows) == 2 * 2 * 2  # sessions x methods x timed appends
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        assert {r["session"] for r in mine} == {0, 1} and all(r["delta"] == 3_000 for r in mine)
        checked = [r for r in mine if "exact" in r]
        assert [r["session"] for r in checked] == [0] and checked[0]["exact"] is True
    assert {r["path"] for r in rows if r["method"] == "toktier repair"} == {"repair"}


def test_engine_targets_figure_counts_each_target_on_its_own_cells(tmp_path):
    """``plot_targets`` judges each target on the cells it is stated for: one thread against
    Gigatoken and HF at every size (a row without Gigatoken is not judged on it), the
    all-cores targets at 1M characters and up (against fastokens on rows that have it; the
    two-core speedup, the engine's own ratio, on every row); met at or above the goal.  It draws the PNG and returns those counts."""
    from toktier.bench import engine_targets as ET

    def row(tok, chars, giga, hf, fast, par):
        return {"tokenizer": tok, "text": "code", "chars": chars, "toktier_1t_ms": 1.0,
                "toktier_all_ms": 1.0 / par, "gigatoken_empty_ms": giga, "hf_ms": hf,
                "fastokens_ms": None if fast is None else fast / par,
                "1t_vs_gigatoken": giga, "1t_vs_hf": hf,
                "all_vs_fastokens": fast, "parallel_speedup": par}  # fmt: skip

    table = [
        row("a", 48_000, 1.0, 19.9, 5.0, 5.0),  # all-cores targets not judged at 48K
        row("a", 1_000_000, 0.99, 20.0, 1.0, 1.8),
        row("a", 4_400_000, 2.0, 50.0, 0.5, 1.79),
        row("w", 1_000_000, None, 30.0, None, 3.0),  # no Gigatoken, no fastokens (WordPiece)
    ]
    png = tmp_path / "targets.png"
    counts = ET.plot_targets(table, png)
    assert counts == {"1t_vs_gigatoken": (2, 3), "1t_vs_hf": (3, 4),
                      "all_vs_fastokens": (1, 2), "parallel_speedup": (2, 3)}  # fmt: skip
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_continuation_targets_say_when_a_run_cannot_decide():
    """A target's interval comes from resampling whole sessions: a tier far below the goal
    is "met", one far above "missed", and one whose sessions straddle it "within noise"."""
    from toktier.bench import continuation

    rng = np.random.default_rng(1)

    def cell(method, context, us, spread, sessions=40):
        return [
            {"tokenizer": "t", "corpus": "c", "context": context, "method": method,
             "session": s, "sample": j, "ms": (us + rng.normal(0, spread)) / 1e3,
             "exact": True if method.startswith("tier") else None, "path": "repair"}
            for s in range(sessions) for j in range(5)
        ]  # fmt: skip

    def goals(tier_us, spread):
        rows = []
        for ctx in (12_000, 48_000, 200_000):
            rows += cell("tier append", ctx, tier_us, spread)
        rows += cell("fastokens full re-encode", 48_000, 250.0, 1.0)
        got = continuation.targets(continuation.summarize(rows), rows)
        return {g["target"]: g for g in got}

    key = "tier append: P50, contexts 12K–200K (worst)"
    assert goals(30.0, 1.0)[key]["verdict"] == "met"
    assert goals(80.0, 1.0)[key]["verdict"] == "missed"
    near = goals(50.0, 30.0)
    assert near[key]["verdict"] == "within noise"
    assert near[key]["ci_low"] < 50.0 < near[key]["ci_high"]
    ratio = near["fastokens full re-encode / tier append at 48,000"]
    assert ratio["verdict"] == "within noise" and ratio["ci_low"] < 5.0 < ratio["ci_high"]
    tight = goals(40.0, 1.0)["fastokens full re-encode / tier append at 48,000"]
    assert tight["verdict"] == "met" and tight["met"] and tight["ci_low"] >= 5.0
    # without the per-sample rows: the point verdicts alone, as before
    plain = continuation.targets(continuation.summarize(cell("tier append", 48_000, 30.0, 1.0)))
    assert all("verdict" not in g for g in plain)
