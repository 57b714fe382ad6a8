"""``toktier bench-gpu`` cannot rot: it refuses without a GPU, and a tiny simulator run works.

The real benchmark needs a CUDA GPU; under the CUDA simulator ``--allow-simulator
--smoke`` runs every part of it (latency deliveries, Gigatoken, batch throughput
with pre-tokenization alone, graph/eager tails with and without CPU contention)
on a few tiny texts.  The record's schema is what the notebook rows are drawn from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def _cli(args: list[str], *, sim: bool, timeout: int = 600):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if sim:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "toktier", "bench-gpu", *args], env=env, capture_output=True,
        text=True, timeout=timeout,
    )  # fmt: skip


def test_bench_gpu_refuses_without_a_gpu(tmp_path):
    out = tmp_path / "gpu.json"
    proc = _cli(["--smoke", "--archive", str(tmp_path), "--out", str(out)], sim=False)
    assert proc.returncode == 2 and "no usable CUDA GPU" in proc.stderr, proc.stderr
    proc = _cli(["--smoke", "--archive", str(tmp_path), "--out", str(out)], sim=True)
    assert proc.returncode == 2 and "--allow-simulator" in proc.stderr, proc.stderr
    proc = _cli(["--allow-simulator", "--archive", str(tmp_path), "--out", str(out)], sim=True)
    assert proc.returncode == 2 and "--smoke" in proc.stderr, proc.stderr  # full sizes refused
    assert not out.exists()


def test_bench_gpu_smoke_run_under_the_simulator(tmp_path, trajectory_archive):
    out = tmp_path / "gpu.json"
    args = ["--allow-simulator", "--smoke", "--quiet", "--tokenizers", "llama3", "--short-map-ab",
            "--units-ab"]  # fmt: skip
    proc = _cli([*args, "--archive", str(trajectory_archive), "--out", str(out)], sim=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    rec = json.loads(out.read_text())
    assert rec["kind"] == "gpu-bench" and rec["device"] == "cudasim" and rec["all_exact"]
    assert rec["gpu"]["device"] == "cudasim" and "cpu" in rec["machine"]
    methods = {r["method"] for r in rec["latency"]}
    assert {"toktier GPU, arrays", "toktier GPU, list", "toktier GPU, export",
            "toktier GPU, arrays, without short map"} <= methods  # fmt: skip
    # the A/B's engine (the map is the default, so the other one merges every piece) timed
    # on the same texts, checked against the reference
    ab = [r for r in rec["latency"] if r["method"].endswith("without short map")]
    base = [r for r in rec["latency"] if r["method"] == "toktier GPU, arrays"]
    assert [(r["chars"], r["sample"]) for r in ab] == [(r["chars"], r["sample"]) for r in base]
    assert all(r["exact"] and r["host_syncs"] == 1 for r in ab)
    # the upload A/B likewise (16-bit for non-ASCII texts: ``units`` says which ran)
    up = [r for r in rec["latency"] if r["method"] == "toktier GPU, arrays, 16-bit upload"]
    assert [(r["chars"], r["sample"]) for r in up] == [(r["chars"], r["sample"]) for r in base]
    assert all(r["exact"] for r in up) and not any(r["units"] for r in base)
    assert {r["short_map"] for r in rec["throughput"]} == {False, True}
    assert all(r["exact"] for r in rec["latency"] if r["method"].startswith("toktier"))
    # the host's CPU rows on the same texts: the engine on one thread and all cores (each
    # checked) and fastokens, so a GPU host's record says how the CPU engine scales there
    for m in ("toktier CPU, 1 thread", "toktier CPU, all cores", "fastokens"):
        rows = [r for r in rec["latency"] if r["method"] == m]
        assert [(r["chars"], r["sample"]) for r in rows] == [
            (r["chars"], r["sample"]) for r in base], m
    assert all("exact" in r for r in rec["latency"] if r["method"].startswith("toktier CPU"))
    assert not {"tiktoken", "HF serial"} & methods  # only the asked-for peers are built
    assert {(r["corpus"], r["mode"]) for r in rec["throughput"]} >= {
        ("stdlib", "ids"),
        ("stdlib", "pretokenize"),
    }
    assert all(r["gb_per_s"] > 0 and r["bytes"] > 0 for r in rec["throughput"])
    tails = {(r["method"], r["contention"]) for r in rec["tail"]}
    assert tails == {
        (m, c) for m in ("toktier GPU, graph replay", "toktier GPU, eager") for c in (False, True)
    }
    assert rec["parameters"]["fresh_str"] is True  # the protocol the record was timed under
    assert rec["parameters"]["settled_allocator"] is True
    syncs = rec["host_syncs"]["llama3"]
    assert syncs["toktier GPU, arrays"] == [1] and syncs["toktier GPU, export"] == [2]
    assert {"tokenizer", "method", "chars", "n", "p50", "p90", "p99"} <= set(
        rec["latency_summary"][0]
    )
    assert {"method", "contention", "p99"} <= set(rec["tail_summary"][0])
    eng = rec["engines"]["llama3"]
    assert eng["graphs"] is False and "simulator" in eng["graphs_reason"]


def _profile_cli(args: list[str], *, sim: bool):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if sim:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return subprocess.run([sys.executable, "-m", "toktier", "profile-gpu", *args], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def test_profile_gpu_refuses_without_a_gpu_and_runs_under_the_simulator(tmp_path):
    """``toktier profile-gpu``: refused without a GPU or (full size) on the simulator; a
    smoke run times every launch of both request shapes, per kernel, and profiles the host."""
    out = tmp_path / "prof.json"
    proc = _profile_cli(["--smoke", "--out", str(out)], sim=False)
    assert proc.returncode == 2 and "no usable CUDA GPU" in proc.stderr, proc.stderr
    proc = _profile_cli(["--allow-simulator", "--out", str(out)], sim=True)
    assert proc.returncode == 2 and "--smoke" in proc.stderr, proc.stderr
    proc = _profile_cli(["--allow-simulator", "--smoke", "--quiet", "--tokenizers", "llama3",
                         "--no-short-map", "--out", str(out)], sim=True)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    rec = json.loads(out.read_text())
    assert rec["kind"] == "gpu-profile" and rec["device"] == "cudasim"
    assert rec["parameters"]["short_map"] is False  # the default (on) turned off
    assert not any(r["short_map"] for r in rec["rows"])
    assert [r["request"].split(" ")[0] for r in rec["rows"]] == ["batch", "single"]
    for r in rec["rows"]:
        names = {k["kernel"] for k in r["kernels"]}
        assert {"k_decode", "k_pretokenize", "k_output"} <= names, names
        # structure only (timings are the record's, never judged here)
        assert all(k["launches"] >= 1 and isinstance(k["ms"], float) for k in r["kernels"])
        assert r["kernel_ms"] == sum(k["ms"] for k in r["kernels"])
        assert {"wall_ms", "host_and_copies_ms", "gb_per_s", "kernel_inline_ms",
                "launch_gap_ms"} <= set(r)  # fmt: skip
        assert {k["kernel"] for k in r["kernels_inline"]} == {k["kernel"] for k in r["kernels"]}
        assert r["host"] and r["bytes"] > 0
    text = out.with_suffix(".txt").read_text()
    # The report lists each request's costliest kernels (``gpu_profile.report``): which ones
    # make its top 12 depends on the simulator's timings, so check the costliest of each.
    assert all(r["kernels"][0]["kernel"] in text for r in rec["rows"])
    assert text.count("host (cProfile") == len(rec["rows"])


def test_kernel_timer_restores_the_backend():
    """The timer wraps ``launch`` for its block only; every launch inside is recorded."""
    from toktier.bench.gpu_profile import KernelTimer

    class Backend:
        def __init__(self):
            self.calls = []

        def launch(self, kernel, grid, block, *args):
            self.calls.append((kernel, grid, block, args))

    def k_test():
        pass

    be = Backend()
    with KernelTimer(be) as kt:
        be.launch(k_test, 4, 32, 1, 2)
        be.launch(k_test, 2, 32)
    assert "launch" not in vars(be) and len(be.calls) == 2
    (row,) = kt.summary()
    assert row["kernel"] == "k_test" and row["launches"] == 2 and row["grid"] == 2


def test_bench_gpu_smoke_run_of_a_sentencepiece_tokenizer(tmp_path, trajectory_archive):
    """SentencePiece BPE has no pre-tokenizer: the bench times its IDs and no split level
    (it crashed on the first H100 run of mistral-sp-v3, 2026-11-26)."""
    out = tmp_path / "gpu.json"
    args = ["--allow-simulator", "--smoke", "--quiet", "--tokenizers", "mistral-sp-v3"]
    proc = _cli([*args, "--archive", str(trajectory_archive), "--out", str(out)], sim=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    rec = json.loads(out.read_text())
    assert rec["all_exact"]
    assert {r["mode"] for r in rec["throughput"]} == {"ids"}
