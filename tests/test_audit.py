"""The audit harness and the clean-room incremental methods of serving stacks."""

from __future__ import annotations

import numpy as np
import pytest

import toktier
from toktier.audit import (
    TierMethod,
    audit,
    ladder,
    method_names,
    methods,
    seam_cases,
    shrink,
    summary_table,
    tables,
)
from toktier.baselines.incremental import common_prefix_chars
from toktier.baselines.trtllm_boundary import BoundaryRollback, ExactPrefixSuffix
from toktier.baselines.trtllm_prefix_cache import TrtllmPrefixCache
from toktier.baselines.vllm_incremental import VllmIncremental
from toktier.bench.streams import load_trajectories
from toktier.cli import main

# NFC composes "a" with U+0301 across 200 non-composing marks: far more than 64 tokens back
NFC_CONTEXT = "x" * 4200 + " a" + "\u0316" * 200
NFC_APPEND = "\u0301 done"


@pytest.fixture(scope="module")
def qwen3():
    return toktier.load("qwen3")


@pytest.fixture(scope="module")
def llama3():
    return toktier.load("llama3")


def _ids(tok, text):
    return np.asarray(tok.reference(text), dtype=np.int64)


def test_common_prefix_chars():
    assert common_prefix_chars("abcdef", "abcxyz") == 3
    assert common_prefix_chars("", "abc") == 0
    assert common_prefix_chars("same", "same") == 4


def test_trtllm_prefix_cache_accepts_a_wrong_splice_on_a_long_range_nfc_append(qwen3):
    prev, new = NFC_CONTEXT, NFC_CONTEXT + NFC_APPEND
    ids, kept = TrtllmPrefixCache(qwen3)(prev, _ids(qwen3, prev), new)
    assert kept > 0  # the resync check passed ...
    assert not np.array_equal(ids, _ids(qwen3, new))  # ... and the IDs are wrong
    tier_ids, _ = TierMethod(qwen3)(prev, _ids(qwen3, prev), new)
    assert np.array_equal(tier_ids, _ids(qwen3, new))


def test_short_prompts_are_not_cached_and_edits_fall_back(llama3):
    m = TrtllmPrefixCache(llama3)
    ids, kept = m("short", _ids(llama3, "short"), "short text")
    assert kept == 0 and np.array_equal(ids, _ids(llama3, "short text"))
    long = "word " * 1000
    ids, kept = m(long, _ids(llama3, long), "edited " + long)  # not a prefix: full encode
    assert kept == 0 and np.array_equal(ids, _ids(llama3, "edited " + long))


def test_boundary_rollback_reuses_across_a_rewritten_tail(llama3):
    prev = "<|start_header_id|>assistant<|end_header_id|>\n\n" + "text " * 50 + "<think>\n"
    new = prev[:-8] + "the answer<|eot_id|>"
    ids, kept = BoundaryRollback(llama3)(prev, _ids(llama3, prev), new)
    assert kept > 0 and np.array_equal(ids, _ids(llama3, new))
    ids, kept = ExactPrefixSuffix(llama3)(prev, _ids(llama3, prev), new)
    assert kept == 0  # the exact-prefix method cannot reuse a rewritten history
    with pytest.raises(ValueError):
        BoundaryRollback(llama3, rollback=-1)


def test_vllm_incremental_splices_long_prompts_at_a_verified_seam(llama3):
    prev = "<|start_header_id|>user<|end_header_id|>\n\n" + "The value of x is 42. " * 800
    new = prev + "And then 1234567 more words<|eot_id|>"
    m = VllmIncremental(llama3)
    ids, kept = m(prev, _ids(llama3, prev), new)
    assert np.array_equal(ids, _ids(llama3, new))
    # the seam lies between 96 and 1,024 - 96 characters before the old end
    lo, hi = (len(llama3.reference(prev[: len(prev) - c])) for c in (1024 - 96, 96))
    assert lo - 1 <= kept <= hi
    again, kept2 = m(new, ids, new + " ok")  # its own previous answer is the cache
    assert kept2 > 0 and np.array_equal(again, _ids(llama3, new + " ok"))
    short = "word " * 100
    assert m(short, _ids(llama3, short), short + "x")[1] == 0  # under min_chars: full encode
    with pytest.raises(ValueError):
        VllmIncremental(llama3, backup_chars=1024, margin_chars=96, min_chars=1000)


def test_vllm_incremental_falls_back_where_it_cannot_prove_the_seam(llama3):
    sp = toktier.load("mistral-sp-v3")  # no pre-tokenizer: the method is off
    text = "some words here " * 1200
    ids, kept = VllmIncremental(sp)(text, _ids(sp, text), text + "more")
    assert kept == 0 and np.array_equal(ids, _ids(sp, text + "more"))
    # a window full of special-token sigils has no usable seam
    sig = "x<|eot_id|>" * 1600
    ids, kept = VllmIncremental(llama3)(sig, _ids(llama3, sig), sig + "y")
    assert kept == 0 and np.array_equal(ids, _ids(llama3, sig + "y"))
    # the overlap check refuses a splice whose re-encode disagrees: NFC composes across the
    # seam region (qwen3's normalizer) -- here the window itself is not NFC-stable
    qwen3 = toktier.load("qwen3")
    nfd = "word " * 3300 + "e\u0301" * 300
    ids, kept = VllmIncremental(qwen3)(nfd, _ids(qwen3, nfd), nfd + " end")
    assert kept == 0 and np.array_equal(ids, _ids(qwen3, nfd + " end"))


def test_seam_context_follows_the_method_minimum(llama3):
    from toktier.audit import seam_context_chars

    assert seam_context_chars(TrtllmPrefixCache(llama3)) == 5000
    assert seam_context_chars(VllmIncremental(llama3)) == 16384 + 1000
    short = list(seam_cases(llama3, 6, seed=2))
    long = list(seam_cases(llama3, 6, seed=2, context_chars=17384))
    assert [g for g, _, _ in short] == [g for g, _, _ in long]  # the same pitfalls, cut alike
    assert [n[len(p) :] for _, p, n in short] == [n[len(p) :] for _, p, n in long]
    assert all(len(p) >= 17384 for _, p, _ in long)
    rep = audit(VllmIncremental(llama3), llama3, seams=6, seed=2)
    assert rep.cases["seam"] == 6 and rep.reused["seam"] > 0 and rep.wrong["seam"] == 0


def test_audit_finds_and_shrinks_divergences_and_the_tier_has_none(llama3):
    broken = ExactPrefixSuffix(llama3)
    rep = audit(broken, llama3, seams=30, seed=1)
    assert rep.cases["seam"] == 30 and rep.wrong["seam"] > 0
    d = rep.divergences[0]
    assert len(d.prev_text) < 200  # shrunk from a 5,000-character context
    got = broken(d.prev_text, _ids(llama3, d.prev_text), d.new_text)[0]
    assert not np.array_equal(got, _ids(llama3, d.new_text))  # the reproducer reproduces
    assert d.expected != d.got
    tier = audit(TierMethod(llama3), llama3, seams=30, seed=1)
    assert tier.wrong["seam"] == 0 and tier.reused["seam"] == 30


def test_a_plain_callable_is_audited(llama3):
    def full_encode(prev_text, prev_ids, new_text):
        return llama3.reference(new_text)

    rep = audit(full_encode, llama3, seams=5)
    row = rep.summary()[0]
    assert row["method"] == "full_encode" and row["wrong"] == 0 and row["reused"] == 0


def test_shrink_keeps_a_failing_pair_failing(qwen3):
    m = TrtllmPrefixCache(qwen3)
    prev, new = shrink(m, qwen3, NFC_CONTEXT, NFC_CONTEXT + NFC_APPEND)
    assert len(prev) < len(NFC_CONTEXT) and new.startswith(prev)
    m.reset()
    assert not np.array_equal(m(prev, _ids(qwen3, prev), new)[0], _ids(qwen3, new))


def test_seam_cases_are_deterministic_appends(llama3):
    a = list(seam_cases(llama3, 12, seed=3))
    assert a == list(seam_cases(llama3, 12, seed=3)) and len(a) == 12
    assert all(new.startswith(prev) and len(prev) >= 5000 for _, prev, new in a)


def test_method_names_and_errors(llama3):
    assert "trtllm-prefix-cache@16" in method_names(sweep=True)
    ms = methods(llama3, ["trtllm-prefix-cache@16", "trtllm-boundary@4"])
    assert ms["trtllm-prefix-cache@16"].overlap == 16 and ms["trtllm-boundary@4"].rollback == 4
    for bad in ("nope", "toktier@3", "trtllm-boundary@x", "no_such_module:f"):
        with pytest.raises(ValueError):
            methods(llama3, [bad])


def test_replay_and_rewrite_workloads(trajectory_archive, qwen3):
    trajs = load_trajectories(trajectory_archive, limit=2)
    out = ladder(["qwen3"], ["trtllm-prefix-cache", "toktier"], seams=5, trajectories=trajs,
                 progress=False)  # fmt: skip
    rows = {(r["method"], r["workload"]): r for r in out["rows"]}
    calls = sum(len(t.calls) - 1 for t in trajs)
    assert rows[("toktier", "replay")]["cases"] == calls
    assert rows[("toktier", "rewrite")]["reuse_rate"] == 1.0
    assert rows[("trtllm-prefix-cache", "rewrite")]["reuse_rate"] == 0.0  # not a literal prefix
    assert rows[("toktier", "reasoning")]["cases"] == calls
    assert rows[("toktier", "reasoning")]["kept_id_share"] > 0.5  # an edit, repaired in place
    table = summary_table(tables(out)[0], ["qwen3"]).set_index("method")
    assert table.loc["toktier", "session workloads wrong"] == 0
    assert table.loc["trtllm-prefix-cache", "IDs reused, rewritten history"] == 0.0
    assert (
        table.loc["toktier", "IDs reused, replay"] == rows[("toktier", "replay")]["kept_id_share"]
    )
    assert table.loc["toktier", "qwen3"] == rows[("toktier", "seam")]["wrong"] == 0
    assert all(r["wrong"] == 0 for r in out["rows"] if r["method"] == "toktier")


def test_reasoning_workload_shows_only_the_latest_reasoning(trajectory_archive, llama3):
    """Each prompt carries the reasoning of its latest assistant turn alone: the next prompt
    drops that block from the middle and adds the next turn's."""
    from toktier.audit import _thinking_prefix, session_prompts

    trajs = load_trajectories(trajectory_archive, limit=2)
    # (the recorded summaries are sparse: ~4% of assistant turns, mostly each session's first)
    assert sum(bool(m.reasoning) for t in trajs for m in t.messages if m.role == "assistant") > 0
    _, gen = _thinking_prefix("llama3")
    plain = list(session_prompts(llama3, trajs))
    for traj, ps, base in zip(trajs, session_prompts(llama3, trajs, reasoning=True), plain,
                              strict=True):  # fmt: skip
        for k, (p, b) in enumerate(zip(ps, base, strict=True)):
            assert p.endswith(gen)
            body = p[: -len(gen)]
            shown = body.count("<think>\n")
            last = [
                m for m in traj.messages[: traj.calls[k].prompt_messages] if m.role == "assistant"
            ]
            assert shown == (1 if last and last[-1].reasoning else 0)
            if shown:
                assert last[-1].reasoning in body and len(body) > len(b)
                assert not ps[k + 1 if k + 1 < len(ps) else k].startswith(body) or k + 1 == len(ps)
            else:
                assert body == b


def test_cli_audit(tmp_path, capsys):
    out = tmp_path / "audit.json"
    rc = main(["audit", "llama3", "--methods", "trtllm-exact-prefix,toktier", "--seams", "8",
               "--sessions", "0", "--quiet", "--out", str(out)])  # fmt: skip
    assert rc == 0 and out.is_file()
    text = capsys.readouterr().out
    assert "trtllm-exact-prefix" in text and "toktier" in text


def _row_without(row, drop=("p50_us", "p99_us")):
    return {k: v for k, v in row.items() if k not in drop}


def _without_latency(result):
    return dict(result, rows=[_row_without(r) for r in result["rows"]])


def test_ladder_workers_and_shared_reference_work_give_the_same_answers(trajectory_archive):
    """The ladder's shared inputs (one reference pass per tokenizer) and its worker
    processes change no count, reproducer or order: the same record as each method's own
    audit, with one process or two."""
    trajs = load_trajectories(trajectory_archive, limit=1)
    names = ["trtllm-exact-prefix", "trtllm-prefix-cache@8", "toktier"]
    one = ladder(["llama3"], names, seams=12, trajectories=trajs, seed=1, progress=False)
    two = ladder(["llama3"], names, seams=12, trajectories=trajs, seed=1, progress=False,
                 workers=2)  # fmt: skip
    assert _without_latency(one) == _without_latency(two)
    assert one["divergences"], "the exact-prefix method diverges on these seams"
    tok = toktier.load("llama3")
    for n in names:  # each job equals an audit of that method alone, nothing shared
        alone = audit(methods(tok, [n])[n], tok, seams=12, trajectories=trajs, seed=1, name=n)
        mine = [_row_without(r, ("p50_us", "p99_us", "label")) for r in one["rows"]
                if r["method"] == n]  # fmt: skip
        assert [_row_without(r) for r in alone.summary()] == mine


def test_shared_inputs_belong_to_one_tokenizer(llama3, qwen3):
    from toktier.audit import ReferenceMemo, session_inputs

    inputs = session_inputs(llama3, [])
    with pytest.raises(ValueError, match="llama3"):
        audit(TierMethod(qwen3), qwen3, seams=1, inputs=inputs)
    with pytest.raises(ValueError, match="another tokenizer"):
        audit(TierMethod(qwen3), qwen3, seams=1, reference=ReferenceMemo(llama3))
    with pytest.raises(ValueError, match="lack the 'rewrite'"):
        audit(TierMethod(llama3), llama3, seams=1,
              inputs=session_inputs(llama3, [], rewrite=False, reasoning=False))  # fmt: skip
    memo = ReferenceMemo(llama3, limit=1)
    a = memo("hello world")
    assert np.array_equal(a, llama3.reference("hello world")) and memo("hello world") is a
    assert not a.flags.writeable  # one array read by every method's check
    assert memo("other") is not memo("other")  # past the limit: answered, not remembered
    with pytest.raises(ValueError):
        ladder(["llama3"], ["nope"], seams=1, trajectories=[], workers=2, progress=False)
    with pytest.raises(ValueError):
        ladder(["llama3"], ["toktier"], seams=1, trajectories=[], workers=0, progress=False)
