"""Claim S1 at tiny size on real trajectories: every sampled fault caught, clean traffic passes,
the bookkeeping adds up, and the detection delay looks geometric."""

import math

import numpy as np
import pytest

import toktier
from toktier.campaigns import faults
from toktier.campaigns import verifier_faults as vf

REQUESTS = 80
FAULT_RATE = 0.25
RATES = (0.5, 0.1)
CAMPAIGNS = 40


@pytest.fixture(scope="module")
def tok():
    return toktier.load("llama3")


@pytest.fixture(scope="module")
def trajectories(trajectory_archive):
    return vf.load_sessions(trajectory_archive)[:40]


@pytest.fixture(scope="module")
def result(tok, trajectories):
    return vf.run(
        tok,
        requests=REQUESTS,
        fault_rate=FAULT_RATE,
        rates=RATES,
        campaigns=CAMPAIGNS,
        max_context_chars=30_000,
        seed=3,
        progress=False,
        trajectories=trajectories,
    )


def _within_binomial(k: int, n: int, p: float, z: float = 4.0) -> bool:
    sd = math.sqrt(n * p * (1 - p))
    return abs(k - n * p) <= z * sd + 1


def test_stream_catches_every_sampled_fault_and_passes_clean(result):
    stream = result["stream"]
    assert stream["requests"] == REQUESTS
    assert sum(stream["faults_injected"].values()) == round(FAULT_RATE * REQUESTS)
    assert stream["faults_not_placed"] == 0
    assert set(stream["faults_injected"]) <= set(faults.KINDS)
    for r in stream["rates"]:
        assert r["errors"] == r["dropped"] == r["skipped_large"] == 0, r["last_error"]
        assert r["caught"] == r["sampled_faults"] == r["checked_faults"]
        assert r["missed"] == 0 and r["false_positives"] == 0
        assert r["mismatches"] == r["caught"] and r["checked"] == r["sampled"]
        assert r["sampled"] == r["sampled_faults"] + r["clean_sampled"]
        assert _within_binomial(r["sampled"], REQUESTS, r["rate"])
        assert _within_binomial(r["sampled_faults"], r["faults"], r["rate"])
        by = r["by_kind"]
        assert sum(by[k]["requests"] for k in faults.KINDS) == r["faults"]
        assert sum(c["requests"] for c in by.values()) == REQUESTS
        for k in faults.KINDS:
            assert by[k]["requests"] == stream["faults_injected"].get(k, 0)
            assert by[k]["flagged"] == by[k]["checked"] <= by[k]["sampled"] <= by[k]["requests"]
    # at 50% sampling the tiny stream does sample faults, so "all caught" is not vacuous
    assert stream["rates"][0]["sampled_faults"] >= 5
    assert result["all_sampled_faults_caught"] and result["false_positives"] == 0
    rows = vf.fault_rows(result)
    assert len(rows) == len(RATES) * (len(faults.KINDS) + 2)
    for row in rows:
        if row["kind"] == "all faults":
            assert row["caught"] == row["sampled"]


def test_detection_delay_is_geometric(result):
    for d in result["delay"]:
        p, x = d["rate"], np.asarray(d["delays"])
        assert d["detected"] == CAMPAIGNS and d["censored"] == d["missed_checks"] == 0
        assert d["checked"] == CAMPAIGNS and d["dropped"] == d["errors"] == 0
        assert x.min() >= 1 and d["offered"] == x.sum()
        # mean of a geometric: 1/p, sd sqrt(1-p)/p; 4 standard errors
        assert abs(x.mean() - 1 / p) <= 4 * math.sqrt(1 - p) / p / math.sqrt(CAMPAIGNS)
        assert d["ks_distance"] <= 1.5 * d["dkw95"]
    assert vf.geometric_quantile(0.05, 0.5) == 14 and vf.geometric_quantile(0.05, 0.9) == 45
    assert vf.geometric_quantile(0.10, 0.5) == 7 and vf.geometric_quantile(0.10, 0.9) == 22
    assert [r["rate"] for r in vf.delay_rows(result)] == list(RATES)


def test_a_wrong_reference_shows_up_as_false_positives(tok, trajectories):
    """The counts can fail: a verifier whose reference disagrees flags clean requests."""

    def off_by_one(text):
        return [*tok.hf.encode_batch([text], add_special_tokens=False)[0].ids, 0]

    res = vf.run(
        tok,
        requests=30,
        fault_rate=0.0,
        rates=(0.5,),
        campaigns=0,
        max_context_chars=30_000,
        seed=1,
        progress=False,
        trajectories=trajectories,
        reference=off_by_one,
    )
    [r] = res["stream"]["rates"]
    assert r["faults"] == 0 and r["clean_sampled"] > 0
    assert r["false_positives"] == r["clean_sampled"] == r["mismatches"]
    assert res["false_positives"] > 0


def test_a_fault_that_fits_no_request_moves_to_the_next(tok):
    text = "def f(x):\n    return x ** 2  # squares\n" * 4
    ids = np.asarray(tok.reference(text), dtype=np.uint32)
    inj = vf._Injector(tok, 3, 1.0, seed=0)  # a fault at each of the first 3 requests
    empty = [vf.Request(i, "s", i, "", np.zeros(0, np.uint32)) for i in range(3)]
    for req in empty:
        inj.apply(req)
        assert req.fault is None and len(req.ids) == 0
    assert len(inj.pending) == 3 and sum(inj.impossible.values()) == 3
    good = [vf.Request(3 + i, "s", 3 + i, text, ids.copy()) for i in range(4)]
    for req in good:
        inj.apply(req)
    assert [r.fault is not None for r in good] == [True, True, True, False]
    assert not inj.pending and sum(inj.injected.values()) == 3
    for req in good[:3]:
        assert not np.array_equal(req.ids, ids)
