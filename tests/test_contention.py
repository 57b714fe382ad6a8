"""The contention probe and the per-state summaries (``bench.contention``)."""

import itertools

import pytest

import toktier
from toktier.bench import contention, streams


def tagger_over(values, ratio=1.25):
    it = iter(values)
    return contention.ContentionTagger(probe=lambda: next(it), ratio=ratio)


def test_tagger_calls_a_moment_contended_against_the_fastest_probe_seen():
    t = tagger_over([30.0, 20.0, 25.0, 24.0, 26.0, 16.0, 21.0])
    assert t.calibrate(rounds=3, pause_s=0) == 20.0
    assert t.tag() == (24.0, False)  # 24 <= 1.25 x 20
    assert t.tag() == (26.0, True)
    assert t.tag() == (16.0, False) and t.floor == 16.0  # a faster probe lowers the floor
    assert t.tag() == (21.0, True)  # 21 > 1.25 x 16


def test_retag_reads_every_call_against_the_runs_fastest_probe():
    t = tagger_over([40.0, 30.0, 20.0])
    rows = [{"probe_us": None}, {}]
    for _ in range(3):
        probe, busy = t.tag()
        rows.append({"probe_us": probe, "contended": busy})
    assert [r.get("contended") for r in rows[2:]] == [False, False, False]  # floor still falling
    t.retag(rows)
    assert [r.get("contended") for r in rows] == [None, None, True, True, False]


def test_tagger_rejects_a_ratio_that_cannot_separate_states():
    with pytest.raises(ValueError, match="ratio"):
        contention.ContentionTagger(ratio=1.0)


def test_the_wide_probe_runs_and_is_timed():
    times = [contention.wide_probe_us(2_000) for _ in range(3)]
    assert all(t > 0 for t in times)
    assert contention._wide(3) == contention._wide(3)  # the same work each call


def test_summary_by_state_counts_and_medians():
    rows = [
        {"m": "a", "ms": 0.010, "contended": False},
        {"m": "a", "ms": 0.030, "contended": False},
        {"m": "a", "ms": 0.050, "contended": True},
        {"m": "a", "ms": 0.070},  # untagged: "all" only
        {"m": "b", "ms": 0.100, "contended": True},
    ]
    got = {(r["m"], r["state"]): (r["n"], r["p50_us"]) for r in
           contention.summarize_by_state(rows, ("m",))}  # fmt: skip
    assert got[("a", "not contended")] == (2, pytest.approx(20.0))
    assert got[("a", "contended")] == (1, pytest.approx(50.0))
    assert got[("a", "all")] == (4, pytest.approx(40.0))
    assert got[("b", "contended")] == (1, pytest.approx(100.0))
    assert ("b", "not contended") not in got  # no call of b ran uncontended


def test_continuation_rows_carry_each_timed_calls_tag(trajectory_archive):
    from toktier.bench import continuation

    trajs = streams.load_trajectories(trajectory_archive, limit=10)
    tok = toktier.load("llama3")
    text = streams.stream_text(trajs, "llama3", 40_000)
    probes = itertools.cycle([10.0, 20.0])  # every second call reads contended
    tagger = contention.ContentionTagger(probe=lambda: next(probes))
    tagger.calibrate(rounds=2, pause_s=0)
    rows = continuation.continuation_latency(
        tok, {"t": text}, [12_000], samples=4, progress=False, tagger=tagger,
        methods=("tier append", "fastokens full re-encode"),
    )  # fmt: skip
    assert len(rows) == 8 and all(r["exact"] is not False for r in rows)
    assert [r["contended"] for r in rows] == [False, True] * 4
    assert all(r["probe_us"] in (10.0, 20.0) for r in rows)
    untagged = continuation.continuation_latency(
        tok, {"t": text}, [12_000], samples=2, progress=False, methods=("tier append",)
    )
    assert all("contended" not in r for r in untagged)
