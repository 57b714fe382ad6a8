"""``Tier`` with the (simulated) GPU engine: misses go to the GPU, sessions seed from its spans."""

from __future__ import annotations

from toktier import Tier

from .checks import reference


def test_tier_routes_misses_to_the_gpu_and_seeds_sessions_from_its_spans(engine):
    eng = engine("qwen3")
    tok = eng.tokenizer
    tier = Tier(tok, gpu=eng, gpu_min_chars=2048, verify_rate=1.0, delta_aware=False)
    big = "def f(x):\n    return x ** 2  # it's 2026, caf\u00e9\r\n\n" * 60  # > 2 KB
    r = tier.encode(big, session="s")
    assert r.path == "gpu", r
    ids, s, e = tier.session_records("s")  # the state was seeded from the GPU's spans
    ref_ids, ref_off = reference(tok, big)
    assert ids.tolist() == ref_ids and list(zip(s.tolist(), e.tolist(), strict=True)) == ref_off
    r = tier.append("s", " and one more line\n")  # repaired from the GPU-seeded state
    assert r.path == "repair"
    assert r.ids.tolist() == reference(tok, big + " and one more line\n")[0]
    small = tier.encode("short text", session="t")
    assert small.path == "cpu"
    assert tier.verifier.flush() and tier.stats()["verifier"]["mismatches"] == 0
    st = tier.stats()
    assert st["route_gpu"] == 1 and eng.stats()["requests"] >= 1
