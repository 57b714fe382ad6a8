"""Router: each decision and its reason; the Tier follows it and stays exact on every route."""

import pytest

import toktier
from toktier import Tier
from toktier.router import Route, Router

PROSE = "The quick brown fox jumps over the lazy dog; it's 2026.\n" * 100  # 5,600 chars


class FakeGpu:
    """A stand-in GPU engine: the CPU engine's results, a settable busy flag, a call log."""

    name = "gpu"

    def __init__(self, cpu):
        self.cpu, self.is_busy, self.calls = cpu, False, 0

    def busy(self):
        return self.is_busy

    def encode_full(self, text):
        self.calls += 1
        return self.cpu.encode_full(text)

    encode = encode_full

    def encode_ids(self, text):
        return self.encode_full(text)[0]

    def warmup(self):
        return 0.0


@pytest.fixture(scope="module")
def tok():
    return toktier.load("llama3")


def test_miss_routes_by_size_presence_and_backpressure(tok):
    cpu = tok.engine
    assert Router(cpu).miss(10**6) == Route("cpu", "no GPU: CPU engine")
    gpu = FakeGpu(cpu)
    r = Router(cpu, gpu=gpu)
    assert r.miss(2048).name == "gpu" and r.miss(2047).name == "cpu"
    gpu.is_busy = True
    assert r.miss(10**6) == Route("cpu", "GPU busy: spill to the CPU engine")
    assert Router(None).miss(10**6).name == "reference"
    assert Router(cpu, reference_below_chars=64).miss(63).name == "reference"
    assert r.engine(Route("gpu", "")) is gpu and r.engine(Route("cpu", "")) is cpu
    with pytest.raises(ValueError, match="not a full-encode route"):
        r.engine(Route("repair", ""))
    with pytest.raises(ValueError):
        Router(cpu, gpu_min_chars=-1)


def test_delta_aware_hit_uses_the_cost_model(tok):
    r = Router(tok.engine, repair_chars_per_s=1e6, full_chars_per_s={"cpu": 4e6})
    assert r.hit(10**6, 100).name == "repair"  # small append: always repair
    assert r.hit(10**6, 20_000).name == "repair"  # repair 20 ms < full 255 ms
    big = r.hit(10_000, 200_000)  # full 52 ms < repair 200 ms
    assert big.name == "cpu" and "large append" in big.reason
    assert Router(tok.engine, delta_aware=False).hit(10, 10**7).name == "repair"
    calib = Router(tok.engine).calibrate("abc def\n")
    assert calib["repair"] > 0 and calib["cpu"] > 0


def test_tier_follows_the_router_and_stays_exact(tok):
    cpu = Tier(tok, verify_rate=0).engine
    gpu = FakeGpu(cpu)
    tier = Tier(tok, gpu=gpu, verify_rate=0, delta_aware=False)
    small = tier.encode(PROSE[:1000], session="a")
    assert small.path == "cpu" and "< 2048" in small.reason
    big = tier.encode(PROSE, session="b")
    assert big.path == "gpu" and gpu.calls == 1
    assert big.ids.tolist() == tok.reference(PROSE)
    gpu.is_busy = True
    spilled = tier.encode(PROSE, session="c")
    assert spilled.path == "cpu" and "spill" in spilled.reason
    assert tier.append("b", " more").path == "repair"
    st = tier.stats()
    assert (st["route_gpu"], st["route_cpu"], st["spills"]) == (1, 2, 1)


def test_large_append_goes_full_when_predicted_faster(tok):
    tier = Tier(tok, verify_rate=0)
    tier.router.repair_chars_per_s, tier.router.full_chars_per_s["cpu"] = 1e6, 1e8
    tier.encode("short start. ", session="s")
    r = tier.append("s", PROSE * 3)
    assert r.path == "cpu" and "large append" in r.reason
    assert r.ids.tolist() == tok.reference("short start. " + PROSE * 3)
    assert tier.stats()["delta_full"] == 1
    r = tier.append("s", " tail")  # state was re-seeded by the full encode
    assert r.path == "repair" and r.ids.tolist() == tok.reference(
        "short start. " + PROSE * 3 + " tail"
    )
