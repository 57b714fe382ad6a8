"""Slices of the repair certification campaigns (the workflow runs them at full size).

TOKTIER_EXAMPLES sets the hypothesis scenarios per tokenizer; TOKTIER_ORACLE_TRIALS the
random contexts per class pair.
"""

import os

import numpy as np
import pytest

import toktier
from toktier import repair
from toktier.campaigns import adversarial, oracle, replay
from toktier.engine import splice
from toktier.families import stability
from toktier.workload import trajectories

EXAMPLES = int(os.environ.get("TOKTIER_EXAMPLES", "60"))
ORACLE_TRIALS = int(os.environ.get("TOKTIER_ORACLE_TRIALS", "40"))
REPAIRABLE = [n for n in toktier.known() if toktier.load(n).family != "unsupported"]


@pytest.mark.parametrize("name", REPAIRABLE)
def test_oracle_finds_no_counterexample_to_a_claimed_pair(name):
    rep = oracle.run_oracle(toktier.load(name), ORACLE_TRIALS, seed=11)
    assert rep.claimed_failures == 0, [p for p in rep.pairs if p.claimed and p.failures][:3]
    assert sum(p.trials for p in rep.pairs if p.claimed) >= ORACLE_TRIALS * len(
        stability.rules(rep.family).pairs()
    )


def test_oracle_rejects_known_unstable_boundaries():
    pre = toktier.load("llama3").hf.pre_tokenizer
    assert oracle.check_boundary(pre, "ab", "cd", "ce") is not None  # inside a word
    assert oracle.check_boundary(pre, "a ", "b", "c") is not None  # the space joins the next word
    assert (
        oracle.check_boundary(pre, "12", "345", "3") is not None
    )  # digit groups count from the left
    assert oracle.check_boundary(pre, "x!", "\n", "\r") is not None  # punctuation absorbs CR/LF
    assert oracle.check_boundary(pre, "word", " next", " x") is None  # L -> WS: stable


def test_oracle_catches_an_unsound_claim(monkeypatch):
    """Claiming O->L stable (false: "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+" takes one leading char) must fail."""
    good = stability.rules("cl100k")
    bad = stability.FamilyRules(good.family, good.class_names, good.stable.copy(), good.nfc)
    names = good.class_names
    bad.stable[names.index("O"), names.index("L")] = True
    monkeypatch.setattr(stability, "rules", lambda family: bad)
    rep = oracle.run_oracle(toktier.load("cl100k"), 60, seed=1)
    assert rep.claimed_failures > 0


def test_digit_runs_are_certified_only_where_digits_do_not_group():
    """A run whose only boundaries are digit/digit is refused with {1,3} grouping, accepted with single digits."""
    for name, expect in (("llama3", False), ("qwen3", True)):
        tok = toktier.load(name)
        rules = repair.rules_for(tok)
        text = "9" * 400
        ids, s, e = toktier.engine.ReferenceEngine(tok).encode(text)
        run = repair.longest_equal_run(ids, s, e, ids, s, e)
        first, _, length, c_ord = run
        cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        k = repair._certify_run(rules, text, cps, 0, ids, s, e, c_ord, first, length, 1, True)
        assert (k is not None) == expect, name


@pytest.mark.parametrize("name", REPAIRABLE)
def test_adversarial_appends_and_edits(name):
    rep = adversarial.run_campaign(toktier.load(name), EXAMPLES, seed=5)
    assert rep.mismatches == 0, rep.reproducer
    assert rep.appends + rep.edits >= EXAMPLES
    assert rep.plan_comparisons == rep.appends + rep.edits  # compiled == Python plan, each op
    assert any(k.startswith("repair: ") and "whole text" not in k for k in rep.outcomes)


@pytest.mark.parametrize("impl", ["compiled", "python"])
def test_a_broken_splice_is_caught(monkeypatch, impl):
    """The campaign check can fail: shifting the splice by one record must be detected."""
    if impl == "python":
        real = repair.plan

        def off_by_one(*args, **kwargs):
            att = real(*args, **kwargs)
            if att.splice is not None and att.splice.keep_left > 0:
                att.splice.keep_left -= 1
            return att

        monkeypatch.setattr(repair, "plan", off_by_one)
    else:

        def shift(res):  # the result slots (a list or the workspace's array), in place
            if res[splice.R_KEEP_LEFT] > 0:
                res[splice.R_KEEP_LEFT] -= 1
                res[splice.R_KEEP] = min(res[splice.R_KEEP], res[splice.R_KEEP_LEFT])
                res[splice.R_NEW_N] -= 1

        def off_by_one(real):  # an append's first window (other planners), and plan's loop
            def broken(self, *args, **kwargs):
                p = real(self, *args, **kwargs)
                if isinstance(p, tuple):  # first_window: (result slots, fresh records)
                    shift(p[0])
                elif p is not None and p.ok:
                    shift(p.res)
                    p.keep, p.new_n = p.res[splice.R_KEEP], p.res[splice.R_NEW_N]
                return p

            return broken

        def off_by_one_call(real):  # the first window's compiled call, made by ``Tier``
            def broken(self, *args, **kwargs):
                status = real(self, *args, **kwargs)
                if status == splice.OK:
                    shift(self._local.ctx_wk.res)
                return status

            return broken

        for entry in ("first_window", "plan"):
            monkeypatch.setattr(
                splice.Planner, entry, off_by_one(getattr(splice.Planner, entry))
            )
        monkeypatch.setattr(splice.Planner, "first_window_call",
                            off_by_one_call(splice.Planner.first_window_call))  # fmt: skip
    tok = toktier.load("llama3")
    scenario = (512, "lorem ipsum dolor sit amet, " * 40, [("append", " consectetur 123")])
    with pytest.raises(AssertionError, match="divergence"):
        adversarial.check_scenario(tok, scenario, repair_impl=impl)


@pytest.mark.parametrize("name", REPAIRABLE)
def test_real_session_replay_slice(name, trajectory_archive):
    trajs = list(trajectories.iter_trajectories(trajectory_archive, limit=2))
    rep = replay.replay(toktier.load(name), trajs, progress=False)
    assert rep.mismatches == 0 and rep.span_mismatches == 0, rep.first_mismatch
    assert rep.calls == sum(len(t.calls) for t in trajs)
    assert rep.outcomes["repair: first-window splice"] >= rep.calls - 2 * len(trajs)


def test_replay_counts_span_mismatches_against_the_reference_offsets(
    trajectory_archive, monkeypatch
):
    """The replay's span check compares each kept call's spans with the reference's offsets
    of that same prompt: spans shifted by one character are counted on every check."""
    from toktier.tier import Tier

    real = Tier.session_records

    def shifted(self, session):
        ids, starts, ends = real(self, session)
        return ids, starts + 1, ends + 1

    monkeypatch.setattr(Tier, "session_records", shifted)
    trajs = list(trajectories.iter_trajectories(trajectory_archive, limit=1))
    rep = replay.replay(toktier.load("llama3"), trajs, span_every=3, progress=False)
    assert rep.mismatches == 0  # the IDs are still right
    assert (
        rep.span_checks == -(-len(trajs[0].calls) // 3) and rep.span_mismatches == rep.span_checks
    )


def test_notebook_04_helpers_merge_and_judge_certification_records(tmp_path):
    """The logic notebook 04 used to inline: merging per-tokenizer records, pair verdicts,
    the divergence total and the replay frames."""
    import json

    from toktier.campaigns import repair_campaign as rc

    rec = {
        "oracle": [{"tokenizer": "a", "pairs": [
            {"prev": "L", "next": "N", "claimed": True, "trials": 5, "failures": 0, "example": "x"},
            {"prev": "N", "next": "N", "claimed": True, "trials": 5, "failures": 2, "example": "y"},
            {"prev": "S", "next": "L", "claimed": False, "trials": 5, "failures": 1, "example": ""},
            {"prev": "S", "next": "S", "claimed": False, "trials": 5, "failures": 0, "example": ""},
        ]}],
        "adversarial": [],
        "replay": [{"tokenizer": "a", "splices": [[0, 1, 10, 100, 0, "extra"], [0, 2, 5, 110, 1, 7]],
                    "outcomes": {"repair: first-window splice": 1, "repair: splice after 1 widening": 1}}],
    }  # fmt: skip
    (tmp_path / "a.json").write_text(json.dumps(rec))
    (tmp_path / "b.json").write_text(json.dumps({"oracle": [], "adversarial": [], "replay": []}))
    merged = rc.merge_runs([tmp_path / "a.json", tmp_path / "b.json"])
    verdicts = [r["verdict"] for r in rc.oracle_pairs(merged)]
    assert verdicts == ["claimed, never failed", "CLAIMED AND FAILED", "counterexample",
                        "unclaimed, no counterexample"]  # fmt: skip
    assert all("example" not in r for r in rc.oracle_pairs(merged))
    splices = rc.replay_splices(merged)
    assert splices[1] == {"tokenizer": "a", "session": 0, "call": 2, "delta_chars": 5,
                          "context_chars": 110, "widenings": 1}  # fmt: skip
    assert sum(r["calls"] for r in rc.replay_outcomes(merged)) == 2
    rows = [{"oracle_failures": 0, "replay_mismatches": 3, "adversarial_mismatches": float("nan"),
             "replay_calls": 9}]  # fmt: skip
    assert rc.divergences(rows) == 3
