"""The capacity A/B tool's ladder argument (no load is run here)."""

import pytest

from toktier.bench import capacity_ab


def test_one_ladder_for_every_variant():
    assert capacity_ab.parse_loads("1600, 2400,3200") == [1600.0, 2400.0, 3200.0]


def test_a_ladder_per_mode():
    got = capacity_ab.parse_loads("fastokens=1600,2000; tier=6400,8000,9600")
    assert got == {"fastokens": [1600.0, 2000.0], "tier": [6400.0, 8000.0, 9600.0]}


@pytest.mark.parametrize("spec", ["", "1600,x", "fastokens=", "gpu=100", "tier=0,100"])
def test_bad_ladders_are_refused(spec):
    with pytest.raises(SystemExit, match="--loads"):
        capacity_ab.parse_loads(spec)


def test_a_missing_mode_is_refused_before_any_load(monkeypatch):
    monkeypatch.setattr(capacity_ab, "run", lambda *a, **k: pytest.fail("ran a load"))
    with pytest.raises(SystemExit, match="no ladder for tier"):
        capacity_ab.main(["--ab", "knee", "--loads", "fastokens=1600,2000"])
