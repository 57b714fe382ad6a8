"""Issue #13: bad arguments fail at once, memory is bounded by default, quarantine is private."""

from __future__ import annotations

import json
import math
import os
import stat
import time

import numpy as np
import pytest

import toktier
from toktier import Tier
from toktier.campaigns import faults
from toktier.store import DEFAULT_MAX_BYTES, SessionState, SessionStore
from toktier.verifier import ShadowVerifier, default_quarantine_dir

TEXT = "def f(x):\n    return x ** 2  # it's 2026\r\n\n" * 20


@pytest.fixture(scope="module")
def tok():
    return toktier.load("llama3")


@pytest.mark.parametrize(
    ("kw", "error"),
    [
        ({"gpu": "cuda"}, TypeError), ({"gpu": True}, TypeError), ({"gpu": 1}, TypeError),
        ({"verify_rate": -1}, ValueError), ({"verify_rate": math.nan}, ValueError),
        ({"verify_rate": 1.5}, ValueError), ({"verify_rate": "0.1"}, TypeError),
        ({"window": 1.5}, TypeError), ({"window": 0}, ValueError), ({"window": True}, TypeError),
        ({"max_widenings": -1}, ValueError), ({"ttl_s": 0}, ValueError),
        ({"ttl_s": math.inf}, ValueError), ({"ttl_s": "1h"}, TypeError),
        ({"max_bytes": 0}, ValueError), ({"max_bytes": 1.5}, TypeError),
        ({"gpu_min_chars": -1}, ValueError), ({"delta_aware": "yes"}, TypeError),
        ({"quarantine_sessions": 1}, TypeError), ({"repair_impl": "fast"}, ValueError),
    ],
)  # fmt: skip
def test_bad_constructor_arguments_fail_at_construction(kw, error):
    name = next(iter(kw))
    with pytest.raises(error, match=name):
        Tier("llama3", **kw)


def test_session_records_rejects_a_bad_session_id(tok):
    tier = Tier(tok, verify_rate=0, delta_aware=False)
    with pytest.raises(TypeError, match="session id"):
        tier.session_records(None)


def test_after_shutdown_the_tier_serves_and_queues_nothing(tok, tmp_path):
    tier = Tier(tok, verify_rate=1.0, quarantine_dir=tmp_path / "q", delta_aware=False)
    tier.encode(TEXT, session="s")
    tier.shutdown()
    before = tier.stats()["verifier"]
    text = TEXT
    for k in range(5):
        text += f" more {k}"
        r = tier.encode(text, session="s")
        assert list(r.ids) == tok.reference(text)
    after = tier.stats()["verifier"]
    assert after["sampled"] == before["sampled"] and after["backlog"] == 0
    assert after["offered_after_close"] == 5
    assert tier.verifier._queue.qsize() == 0  # nothing retained


def _state(name: str, chars: int = 100) -> SessionState:
    st = SessionState(name, "sha")
    text = "x" * chars
    ids = np.arange(chars // 4, dtype=np.uint32)
    spans = np.arange(chars // 4, dtype=np.int64) * 4
    st.commit_full(ids, spans, spans + 4, text)
    return st


def test_ttl_expires_on_access_without_anyone_calling_expire():
    store = SessionStore(ttl_s=10)
    now = [0.0]
    store._clock = lambda: now[0]
    for i in range(100):
        store.put(_state(f"s{i}"))
    now[0] = 20.0  # every session is stale; requests for other sessions sweep them
    for i in range(13):
        store.put(_state(f"new{i}"))
    assert len(store) == 13 and store.expired == 100
    assert store.stats().bytes == sum(_state("x").nbytes for _ in range(13))


def test_an_idle_store_is_swept_in_the_background():
    store = SessionStore(ttl_s=0.5)
    for i in range(20):
        store.put(_state(f"s{i}"))
    deadline = time.monotonic() + 15
    while len(store._sessions) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(store._sessions) == 0 and store.expired == 20  # nobody called get or expire


def test_a_default_tier_has_a_memory_budget_and_counts_evictions(tok):
    tier = Tier(tok, verify_rate=0, delta_aware=False)
    assert tier.store.max_bytes == DEFAULT_MAX_BYTES == tier.stats()["max_bytes"]
    tier.encode(TEXT, session="probe")
    one = tier.stats()["bytes"]  # one session of TEXT
    small = Tier(tok, verify_rate=0, delta_aware=False, max_bytes=3 * one)
    for i in range(10):
        small.encode(TEXT, session=f"s{i}")
    st = small.stats()
    assert (st["sessions"], st["evicted"]) == (3, 7) and st["bytes"] <= st["max_bytes"]
    assert Tier(tok, verify_rate=0, delta_aware=False, max_bytes=None).store.max_bytes is None


def _bad_result(tok, text=TEXT):
    ids = np.asarray(tok.reference(text), dtype=np.uint32)
    return faults.inject("substitution", ids, np.random.default_rng(0), text=text, tokenizer=tok)


def test_quarantine_records_are_private_capped_and_counted(tok, tmp_path):
    q = tmp_path / "q"
    v = ShadowVerifier(tok, rate=1.0, quarantine_dir=q, seed=0, max_records=2)
    for k in range(3):
        text = TEXT + f" {k}"
        assert v.offer(_bad_result(tok, text), lambda t=text: t, "cpu", f"s{k}")
    assert v.flush()
    v.close()
    st = v.stats()
    assert st["mismatches"] == 3 and st["quarantine_records"] == 2
    assert st["quarantine_dropped"] == 1
    assert stat.S_IMODE(os.stat(q).st_mode) == 0o700
    files = sorted(q.iterdir())
    assert len(files) == 2 and all(f.suffix == ".json" for f in files)  # no temporary left
    assert all(stat.S_IMODE(os.stat(f).st_mode) == 0o600 for f in files)


def test_an_oversized_record_keeps_only_the_divergence(tok, tmp_path):
    v = ShadowVerifier(tok, rate=1.0, quarantine_dir=tmp_path / "q", seed=0, max_record_bytes=900)
    assert v.offer(_bad_result(tok), lambda: TEXT, "cpu", "s")
    assert v.flush()
    v.close()
    [f] = list((tmp_path / "q").glob("*.json"))
    rec = json.loads(f.read_text())
    assert "truncated" in rec and "text" not in rec and "emitted_ids" not in rec
    assert rec["first_divergence"] >= 0 and rec["emitted_near"] != rec["reference_near"]
    assert v.stats()["quarantine_truncated"] == 1


def test_quarantine_never_writes_through_a_symlink(tok, tmp_path):
    import hashlib

    q = tmp_path / "q"
    q.mkdir(mode=0o755)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    sha = hashlib.sha256(TEXT.encode("utf-8")).hexdigest()
    planted = q / f"{sha[:16]}-{os.getpid()}-1.json"  # the record's final name
    planted.symlink_to(victim)
    v = ShadowVerifier(tok, rate=1.0, quarantine_dir=q, seed=0)
    assert v.offer(_bad_result(tok), lambda: TEXT, "cpu", "s")
    assert v.flush()
    v.close()
    assert victim.read_text() == "precious"
    assert not planted.is_symlink() and json.loads(planted.read_text())["session"] == "s"
    assert stat.S_IMODE(os.stat(q).st_mode) == 0o700  # an existing open folder is closed
    # a quarantine folder that is itself a symlink is refused (counted, never followed)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "linked").symlink_to(elsewhere)
    v = ShadowVerifier(tok, rate=1.0, quarantine_dir=tmp_path / "linked", seed=0)
    assert v.offer(_bad_result(tok), lambda: TEXT, "cpu", "s")
    assert v.flush()
    v.close()
    assert v.stats()["quarantine_write_errors"] == 1 and not list(elsewhere.iterdir())


def test_the_default_quarantine_is_per_user_and_outside_the_checkout(monkeypatch, tmp_path):
    from toktier.paths import repo_root

    monkeypatch.delenv("TOKTIER_QUARANTINE", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert default_quarantine_dir() == tmp_path / "state" / "toktier" / "quarantine"
    monkeypatch.delenv("XDG_STATE_HOME")
    d = default_quarantine_dir()
    root = repo_root()
    assert root is None or root not in d.parents
    monkeypatch.setenv("TOKTIER_QUARANTINE", str(tmp_path / "mine"))
    assert default_quarantine_dir() == (tmp_path / "mine").resolve()
