"""The engine's host logic under the simulator: graph replay, NFC delegation, batches, threads."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import toktier
from toktier.engine import gpu
from toktier.engine.protocol import Engine, OffloadEngine

from .checks import check_ids


class _Replay:
    def __init__(self, calls):
        self.calls = calls

    def launch(self, stream):
        for k, g, b, a in self.calls:
            k[g, b](*a)


class _GraphSim(gpu._SimBackend):
    """A stand-in capture: records the chain's launches once and replays them."""

    simulator = False
    graphs_reason = ""
    stream = None

    def capture(self, fn):
        calls = []
        self.launch = lambda k, g, b, *a: calls.append((k, g, b, a))
        try:
            fn()
        finally:
            del self.launch
        return _Replay(calls)


@pytest.fixture(scope="module")
def qwen3():
    """qwen3 (NFC, two literal passes) on a backend whose graphs are recorded launches."""
    tok = toktier.load("qwen3")
    return gpu.GpuEngine(tok, graphs=True, _backend=_GraphSim())


def _texts(tok):
    lit = tok.added_tokens[0].content
    return ["short " + lit, "a different, longer text: 12345 " * 3 + lit + " x" * 20, "x"]


def test_graph_replay_depends_on_no_request_argument(qwen3):
    """A bucket's chain is captured once and replayed for new texts of that bucket -- exact
    only if no launch argument depends on the request (sizes come from the device meta)."""
    tok = qwen3.tokenizer
    texts = _texts(tok)
    for text in [*texts, texts[0]]:
        ids, s, e = qwen3.encode(text)
        check_ids(tok, text, ids, s, e, "graph")
        last = qwen3.stats()["last_request"]
        assert last["graph"] and last["host_syncs"] == 2 and last["kernel_launches"] == 0, last
    st = qwen3.stats()
    assert st["graph_replays"] == 4 and st["captured_buckets"] == [4096], st


def test_nfc_unsafe_texts_go_to_the_cpu_engine(qwen3):
    tok = qwen3.tokenizer
    docs = ["cafe\u0301 \u212b ok", "plain text", "\u1e0a\u0323 x"]
    out = qwen3.encode_batch(docs)
    info = qwen3.stats()["last_request"]
    assert info["delegated"] == 2 and info["nfc_unsafe_chars"] >= 3, info
    assert info["host_syncs"] == 3, info
    for d, (ids, s, e) in zip(docs, out, strict=True):
        check_ids(tok, d, ids, s, e, "nfc")
    ids, s, e = qwen3.encode(docs[0])
    check_ids(tok, docs[0], ids, s, e, "nfc single")
    assert qwen3.stats()["last_request"]["delegated"] == 1


def test_nfc_unsafe_texts_that_nfc_leaves_alone_stay_on_the_device(qwen3):
    """Combining marks the reference's NFC leaves unchanged (Devanagari viramas, Bengali
    vowel signs) are flagged on the device, checked by one normalizer call on the host,
    and the device's result stands: nothing goes to the CPU engine."""
    tok = qwen3.tokenizer
    docs = ["हिन्दी में क्षमा", "plain text", "বাংলা ভাষা x"]
    out = qwen3.encode_batch(docs)
    info = qwen3.stats()["last_request"]
    assert info["delegated"] == 0 and info["nfc_unsafe_chars"] >= 4, info
    for d, (ids, s, e) in zip(docs, out, strict=True):
        check_ids(tok, d, ids, s, e, "nfc-stable")
    ids, s, e = qwen3.encode(docs[0])
    check_ids(tok, docs[0], ids, s, e, "nfc-stable single")
    assert qwen3.stats()["last_request"]["delegated"] == 0


def test_a_literal_split_across_documents_is_no_literal(qwen3):
    tok = qwen3.tokenizer
    lit = tok.added_tokens[0].content
    half = len(lit) // 2
    docs = ["tail " + lit[:half], lit[half:] + " head", lit]
    for d, (ids, s, e) in zip(docs, qwen3.encode_batch(docs), strict=True):
        check_ids(tok, d, ids, s, e, "split literal")
    assert qwen3.stats()["last_request"]["literals"] == 1


def test_requests_from_threads_are_serialized(qwen3):
    """The engine's lock serializes requests; ``busy()`` shows one in flight meanwhile."""
    tok = qwen3.tokenizer
    texts = _texts(tok)
    results = {}

    def work(k, text):
        results[k] = qwen3.encode_batch([text])[0]

    jobs = [threading.Thread(target=work, args=(k, t)) for k, t in enumerate(texts)]
    seen_busy = False
    for j in jobs:
        j.start()
    while any(j.is_alive() for j in jobs):
        seen_busy = seen_busy or qwen3.busy()
        time.sleep(0.002)
    assert seen_busy and not qwen3.busy()
    for k, text in enumerate(texts):
        check_ids(tok, text, *results[k], "threads")


def test_the_gpu_engine_has_the_engine_interfaces(engine):
    eng = engine("llama3")
    assert isinstance(eng, Engine) and isinstance(eng, OffloadEngine)
    assert isinstance(eng._cpu, Engine) and not isinstance(eng._cpu, OffloadEngine)
    text = "The IDs alone, from the device path: é 中文 12345 " * 3
    ids = eng.encode_ids(text)
    assert ids.dtype == np.uint32 and ids.tolist() == eng.encode(text)[0].tolist()
    assert ids.tolist() == eng.tokenizer.reference(text)


def test_warmup_takes_every_delivery_path(engine, monkeypatch):
    """Warm-up runs each delivery once, so nothing is compiled inside a request (CuPy builds
    its copy kernels on first use: the first encode_arrays of a fresh GPU process took 141 ms)."""
    eng = engine("llama3")
    kinds = []
    request = eng._request

    def spy(kind, docs=1):
        kinds.append(kind)
        return request(kind, docs)

    monkeypatch.setattr(eng, "_request", spy)
    eng.warmup(capture=False)
    assert {"batch", "encode", "arrays", "list", "export"} <= set(kinds), kinds


def test_batches_replay_a_graph_with_batch_graphs():
    """With ``batch_graphs`` a batch workspace's chain is captured once and replayed for
    batches of any document count, single requests keep their own graph, and a batch with
    more documents than the workspace holds (empty ones) gets new document arrays and a new
    capture instead of a replay through the freed ones.  Every answer is the reference's."""
    tok = toktier.load("llama3")
    eng = gpu.GpuEngine(tok, graphs=True, batch_graphs=True, _backend=_GraphSim(),
                        buckets=(64,))  # fmt: skip
    lit = tok.added_tokens[0].content
    batches = [["Hello world", f"It's 12 o'clock {lit} x"], ["a", "bb cc", "dd\n\nee", "ff"],
               None, [""] * 62 + ["q", "r s", "t"], ["Hello again", "world"]]  # fmt: skip
    for texts in batches:
        if texts is None:
            assert eng.encode("solo text")[0].tolist() == tok.reference("solo text")
            assert eng.stats()["last_request"]["graph"]
            continue
        got = eng.encode_batch(texts)
        assert [g[0].tolist() for g in got] == [tok.reference(t) for t in texts]
        assert eng.stats()["last_request"]["graph"], texts
    ws = eng._batch_spaces[64]
    assert ws.doc_cap == 65 and ws.graph is not None  # grown once (65 documents), recaptured


def test_batch_graphs_default_follows_the_gpu_certification():
    """Default: batches replay graphs for byte-level BPE and SentencePiece (both certified
    so on an H100); an explicit setting wins; no graphs, no batch graphs."""
    llama, sp = toktier.load("llama3"), toktier.load("mistral-sp-v3")
    assert gpu.GpuEngine(llama, graphs=True, _backend=_GraphSim()).batch_graphs
    assert not gpu.GpuEngine(llama, graphs=True, batch_graphs=False,
                             _backend=_GraphSim()).batch_graphs  # fmt: skip
    assert not gpu.GpuEngine(llama, graphs=False, _backend=_GraphSim()).batch_graphs
    eng = gpu.GpuEngine(sp, graphs=True, _backend=_GraphSim())
    assert eng.batch_graphs and eng.stats()["batch_graphs"]
    assert not gpu.GpuEngine(sp, graphs=True, batch_graphs=False, _backend=_GraphSim()).batch_graphs
