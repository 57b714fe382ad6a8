"""ShadowVerifier: catches injected faults, passes clean traffic, survives its own failures."""

import json
import threading

import numpy as np
import pytest

import toktier
from toktier import Tier
from toktier.campaigns import faults
from toktier.verifier import ShadowVerifier, first_divergence

TEXT = "def f(x):\n    return x ** 2  # it's 2026\r\n\n" * 30


@pytest.fixture(scope="module")
def tok():
    return toktier.load("llama3")


def _verifier(tok, tmp_path, **kw):
    kw.setdefault("rate", 1.0)
    return ShadowVerifier(tok, quarantine_dir=tmp_path / "q", seed=0, **kw)


@pytest.mark.parametrize("kind", faults.KINDS)
def test_every_fault_kind_is_caught_and_quarantined(tok, tmp_path, kind):
    ids = np.asarray(tok.reference(TEXT), dtype=np.uint32)
    bad = faults.inject(kind, ids, np.random.default_rng(1), text=TEXT, tokenizer=tok)
    assert not np.array_equal(bad, ids)
    if kind == "tail_resplit":  # the silent shape: same count, same decoded text
        assert len(bad) == len(ids) and tok.hf.decode(bad.tolist()) == TEXT
    v = _verifier(tok, tmp_path)
    assert v.offer(bad, lambda: TEXT, "cpu", "s1")
    assert v.flush()
    st = v.stats()
    assert (st["checked"], st["mismatches"], st["quarantine_records"]) == (1, 1, 1)
    [path] = list((tmp_path / "q").glob("*.json"))
    rec = json.loads(path.read_text())
    assert rec["text"] == TEXT and rec["path"] == "cpu" and rec["session"] == "s1"
    assert rec["tokenizer_sha256"] == tok.sha256
    assert rec["reference_ids"] == ids.tolist() and rec["emitted_ids"] == bad.tolist()
    assert rec["first_divergence"] == first_divergence(bad, ids)
    a, b = rec["divergence_chars"]
    assert 0 <= a <= b <= len(TEXT)
    v.close()


def test_clean_tier_traffic_passes_at_full_sampling(tok, tmp_path):
    tier = Tier(tok, verify_rate=1.0, quarantine_dir=tmp_path / "q")
    text = ""
    for k in range(12):
        text += f"turn {k}: " + TEXT[: 50 + 37 * k] + "\n"
        tier.encode(text, session="s")
    tier.encode(text + " edit", session="s")  # a suffix edit
    tier.encode(TEXT)  # stateless
    assert tier.verifier.flush()
    st = tier.stats()["verifier"]
    assert st["sampled"] == st["checked"] == 14 and st["mismatches"] == 0
    assert st["dropped"] == st["errors"] == 0 and not (tmp_path / "q").exists()
    tier.shutdown()
    assert not tier.verifier.stats()["alive"]


def test_sampling_rate_is_honoured(tok, tmp_path):
    v = _verifier(tok, tmp_path, rate=0.1, reference=lambda t: [])
    for _ in range(2000):
        v.offer(np.zeros(0, np.uint32), lambda: "", "cpu")
    v.flush()
    st = v.stats()
    assert st["offered"] == 2000 and 150 <= st["sampled"] <= 250  # binomial(2000, 0.1)
    assert st["mismatches"] == 0


def test_full_queue_drops_and_counts_without_blocking(tok, tmp_path):
    release = threading.Event()

    def slow_reference(text):
        release.wait(30)
        return tok.reference(text)

    v = _verifier(tok, tmp_path, queue_size=2, reference=slow_reference)
    ids = np.asarray(tok.reference("abc"), dtype=np.uint32)
    queued = [v.offer(ids, lambda: "abc", "cpu") for _ in range(10)]
    st = v.stats()
    # one sample is in the thread, two wait in the queue; the rest were dropped
    assert st["sampled"] == 10 and st["dropped"] == 10 - sum(queued) >= 7
    release.set()
    assert v.flush()
    assert v.stats()["checked"] == sum(queued) and v.stats()["mismatches"] == 0


def test_survives_reference_errors_huge_inputs_and_an_unwritable_quarantine(tok, tmp_path):
    calls = []

    def flaky(text):
        calls.append(text)
        if text == "boom":
            raise RuntimeError("reference crashed")
        return tok.reference(text)

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    v = ShadowVerifier(tok, rate=1.0, quarantine_dir=blocker / "q", max_chars=1000, reference=flaky)
    v.offer(np.zeros(1, np.uint32), lambda: "boom", "cpu")
    v.offer(np.zeros(1, np.uint32), lambda: ("x" * 600, "y" * 600), "cpu")  # 1,200 chars > max
    v.offer(np.zeros(3, np.uint32), lambda: "hello world", "cpu", "s")  # a mismatch to record
    assert v.flush()
    st = v.stats()
    assert st["errors"] == 1 and st["skipped_large"] == 1 and st["mismatches"] == 1
    assert st["quarantine_write_errors"] == 1 and st["quarantine_records"] == 0
    assert st["alive"] and v.records[-1]["text"] == "hello world"
    assert "quarantine write failed" in v.last_error


def test_bad_settings_are_refused(tok):
    with pytest.raises(ValueError, match="rate"):
        ShadowVerifier(tok, rate=1.5)
    with pytest.raises(ValueError, match="queue_size"):
        ShadowVerifier(tok, queue_size=0)
    for bad, err in ((0, ValueError), (1.5, ValueError), (float("nan"), ValueError),
                     (True, TypeError), ("0.5", TypeError)):  # fmt: skip
        with pytest.raises(err, match="cpu_share"):
            ShadowVerifier(tok, cpu_share=bad)
        with pytest.raises(err, match="verify_cpu_share"):
            Tier(tok, verify_cpu_share=bad)


class _FakeCpu:
    """The verifier thread's CPU clock, advanced by the reference: each check costs ``cost``."""

    def __init__(self, tok, cost: float):
        self.t, self.cost, self.tok = 0.0, cost, tok

    def __call__(self) -> float:
        return self.t

    def reference(self, text):
        self.t += self.cost
        return self.tok.reference(text)


def _recorded_pauses(v):
    """Replace the verifier's pause with a record of its length (no real waiting)."""
    pauses = []
    v._hurry.wait = lambda timeout=None: pauses.append(timeout) or True
    return pauses


@pytest.mark.parametrize("share", [0.25, 0.5, 1.0])
def test_checks_pause_to_keep_their_cpu_share(tok, tmp_path, share):
    cpu = _FakeCpu(tok, 0.01)
    v = _verifier(tok, tmp_path, cpu_share=share, reference=cpu.reference)
    v._cpu_clock = cpu
    pauses = _recorded_pauses(v)
    ids = np.asarray(tok.reference("abc"), dtype=np.uint32)
    for _ in range(3):
        assert v.offer(ids, lambda: "abc", "cpu")
    assert v.flush()
    v.close()
    st = v.stats()
    assert st["checked"] == 3 and st["mismatches"] == 0 and st["cpu_share"] == share
    # a check of 10 ms CPU is followed by 10 ms * (1/share - 1) of rest; none at share 1
    assert pauses == pytest.approx([0.01 * (1 / share - 1)] * 3 if share < 1 else [])
    assert Tier(tok, verify_rate=0.5, verify_cpu_share=share).verifier.cpu_share == share


def test_flush_and_close_cut_the_pauses_short(tok, tmp_path):
    cpu = _FakeCpu(tok, 1.0)  # each check "costs" a CPU second: 999 s of rest at 0.1%
    v = _verifier(tok, tmp_path, cpu_share=0.001, reference=cpu.reference)
    v._cpu_clock = cpu
    ids = np.asarray(tok.reference("abc"), dtype=np.uint32)
    for _ in range(3):
        assert v.offer(ids, lambda: "abc", "cpu")
    assert v.flush(timeout=60)  # would time out if the 999 s rests were kept
    assert v.stats()["checked"] == 3
    assert v.offer(ids, lambda: "abc", "cpu")
    v.close(timeout=60)
    st = v.stats()
    assert st["checked"] == 4 and not st["alive"] and st["paused_s"] < 60


class _FaultyOnce:
    """The CPU engine, except that its first full encode of TEXT returns one wrong ID."""

    def __init__(self, engine):
        self.engine, self.name, self.fired = engine, engine.name, False

    def encode(self, text):
        return self.engine.encode(text)

    def encode_full(self, text):
        ids, s, e = self.engine.encode_full(text)
        if text == TEXT and not self.fired:
            self.fired = True
            ids = ids.copy()
            ids[len(ids) // 2] += 1
        return ids, s, e

    def encode_ids(self, text):
        return self.encode_full(text)[0]

    def warmup(self):
        return 0.0


def test_quarantined_session_is_reencoded_in_full(tok, tmp_path):
    eng = _FaultyOnce(toktier.Tier(tok, verify_rate=0).engine)
    tier = Tier(
        tok, engine=eng, verify_rate=1.0, quarantine_dir=tmp_path / "q", quarantine_sessions=True
    )
    r = tier.encode(TEXT, session="s")
    assert r.ids.tolist() != tok.reference(TEXT)  # the planted fault went out
    assert tier.verifier.flush() and tier.stats()["verifier"]["mismatches"] == 1
    r = tier.encode(TEXT + "more", session="s")
    assert r.path == "cpu" and "quarantined" in r.reason
    assert r.ids.tolist() == tok.reference(TEXT + "more")
    assert tier.stats()["quarantined"] == 1
    r = tier.append("s", " and more")  # repaired again from clean state
    assert r.path == "repair" and r.ids.tolist() == tok.reference(TEXT + "more and more")
    assert len(list((tmp_path / "q").glob("*.json"))) == 1
