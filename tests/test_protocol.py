"""The engine interface (``engine.protocol``) that ``Tier`` and ``Router`` rely on.

Every engine is an ``Engine``; a GPU-like engine is an ``OffloadEngine`` (it can
say it is busy).  ``Tier`` and ``Router`` check arguments against these instead
of probing attributes, so a wrong object fails at construction, not mid-request.
(The GPU engine itself is checked under the simulator, ``tests/cudasim``.)
"""

from __future__ import annotations

import numpy as np
import pytest

import toktier
from toktier import Tier
from toktier.engine import ReferenceEngine
from toktier.engine.cpu import engine_for
from toktier.engine.protocol import Engine, OffloadEngine
from toktier.router import Router


@pytest.fixture(scope="module")
def tok():
    return toktier.load("llama3")


class _Serial:
    """A minimal engine: the reference, without ``busy``."""

    name = "serial"

    def __init__(self, tok):
        self._ref = ReferenceEngine(tok)

    def encode(self, text):
        return self._ref.encode(text)

    encode_full = encode

    def encode_ids(self, text):
        return self._ref.encode_ids(text)

    def warmup(self):
        return 0.0


class _Offload(_Serial):
    name = "offload"

    def busy(self):
        return False


def test_engines_implement_the_protocols(tok):
    ref, cpu = ReferenceEngine(tok), engine_for(tok)
    for eng in (ref, cpu, _Serial(tok)):
        assert isinstance(eng, Engine) and not isinstance(eng, OffloadEngine), eng
        assert isinstance(eng.warmup(), float)
    assert isinstance(_Offload(tok), OffloadEngine)
    assert ref.warmup() == 0.0
    assert not isinstance(object(), Engine)


def test_tier_and_router_reject_what_is_no_engine(tok):
    with pytest.raises(TypeError, match="OffloadEngine"):
        Tier(tok, gpu=_Serial(tok), verify_rate=0)  # no busy(): cannot take misses
    with pytest.raises(TypeError, match=r"engine\.protocol\.Engine"):
        Tier(tok, engine=object(), verify_rate=0)
    with pytest.raises(TypeError):
        Tier(tok, gpu=True, verify_rate=0)
    with pytest.raises(TypeError):
        Router(engine_for(tok), gpu=_Serial(tok))


def test_tier_serves_through_any_engine_of_the_protocol(tok):
    gpu = _Offload(tok)
    tier = Tier(tok, engine=_Serial(tok), gpu=gpu, gpu_min_chars=10, verify_rate=0)
    text = "Protocol engines serve misses exactly. " * 3
    r = tier.encode(text, session="s")
    assert r.ids.tolist() == tok.reference(text)


def test_stateless_requests_take_the_ids_only_path(tok):
    """A request without a session asks the routed engine for the IDs alone
    (``encode_ids``), never for spans it would throw away; the IDs stay exact."""

    class _Counting(_Serial):
        def __init__(self, tok):
            super().__init__(tok)
            self.calls = []

        def encode_full(self, text):
            self.calls.append("encode_full")
            return super().encode_full(text)

        def encode_ids(self, text):
            self.calls.append("encode_ids")
            return super().encode_ids(text)

    eng = _Counting(tok)
    tier = Tier(tok, engine=eng, gpu=None, verify_rate=0, delta_aware=False)
    text = "Stateless requests need no spans. é 中文 " * 4
    eng.calls.clear()
    r = tier.encode(text)
    assert eng.calls == ["encode_ids"] and r.ids.dtype == np.uint32
    assert r.ids.tolist() == tok.reference(text) and not r.ids.flags.writeable
    for e in (ReferenceEngine(tok), engine_for(tok)):
        assert e.encode_ids(text).tolist() == tok.reference(text)
