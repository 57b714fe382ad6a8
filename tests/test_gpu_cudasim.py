"""The GPU engine's kernel chain under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``).

The simulator must be on before numba.cuda is imported, so every check runs in
a subprocess.  For all six byte-level tokenizers the whole chain -- device UTF-8
decode, literal walk, boundary predicate and segment scan, thread-per-segment
pre-tokenization, BPE by piece length (thread / warp / block / heap fallback),
output compaction and spans -- must reproduce the reference's IDs and character
offsets and, at split level, ``pre_tokenizer.pre_tokenize_str``'s piece ends.
The inputs force the warp and block BPE paths (the run reports how many pieces
took each), documents of a batch must equal their own references, and a random
property test (``TOKTIER_EXAMPLES`` examples, default small) covers adversarial
strings.  (The simulator costs about a second per example: the property runs a
tenth of the suite's ``TOKTIER_EXAMPLES``, or ``TOKTIER_GPU_EXAMPLES`` when set.)
The shuffle-based warp reduction the GPU compiles is certified here
too, on its own and inside the BPE kernels; the device's cut positions equal
the CPU engine's certified cuts; deliberately broken kernels are caught; and the
``certify-engine --device gpu`` campaign runs end to end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

PRELUDE = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("ignore", RuntimeWarning)  # int64 wraparound in hashes (simulator)
    import numpy as np
    from numba import config
    assert config.ENABLE_CUDASIM, "simulator not enabled"
    import toktier
    from toktier.engine import gpu
    from toktier.campaigns.engine_campaign import class_representatives
    gpu.tune_simulator()
    NAMES = ["llama3", "gpt-oss", "deepseek-v4", "qwen3", "qwen3.6", "cl100k"]

    def reference(tok, text):
        enc = tok.hf.encode(text, add_special_tokens=False)
        return enc.ids, [tuple(o) for o in enc.offsets]

    def check_ids(tok, text, ids, s, e, what):
        ref_ids, ref_off = reference(tok, text)
        assert ids.dtype == np.uint32 and s.dtype == np.int64 and e.dtype == np.int64
        assert ids.tolist() == ref_ids, (tok.name, what, text[:60], ids.tolist()[:20], ref_ids[:20])
        assert list(zip(s.tolist(), e.tolist())) == ref_off, (tok.name, what, text[:60])

    def check_split(tok, text, starts, ends):
        ref = [b for _p, (_a, b) in tok.hf.pre_tokenizer.pre_tokenize_str(text)]
        assert ends.tolist() == ref, (tok.name, "split", text[:60], ends.tolist()[:20], ref[:20])
        assert starts.tolist() == ([0] + ref[:-1] if ref else [])
    """
)

MAIN = textwrap.dedent(
    """
    stdlib = open(__import__("json").__file__.replace("__init__.py", "decoder.py")).read()[:900]
    base = [
        "Hello, world! It's 2026 -- 12345 spaces   \\n\\n\\tx\\r\\n don't 'LL x'\\u017f IT'S we'VE",
        "    def f(x):\\n        return x**2  # ok\\r\\n\\r\\n\\n",
        "\\u4e2d\\u6587\\u30c6\\u30ad\\u30b9\\u30c8\\u30fb\\u3072 123 abc 1234567 \\u0661\\u0662\\u0663\\u0664",
        "\\U0001F600\\U0001F601 na\\u00efve \\u0391\\u0392\\u0393 \\u03b1\\u03b2 CamelCaseWord x\\t 1 \\u00a0 x",
        stdlib,
        "",
    ]
    # pieces past 32 bytes (warp path) and past 128 bytes (block path), multi-byte included
    long = [
        "Pneumonoultramicroscopicsilicovolcanoconiosis and " + "x" * 40 + " " + "!" * 37,
        " " * 44 + "y\\n" + "\\U0001F600" * 11 + " " + "=" * 60 + "\\n",
        "\\u4e2d\\u6587" * 24 + " " + "\\u0434\\u043e\\u043c" * 20 + ".",  # 144 bytes: block
    ]
    total = 0
    for name in NAMES:
        tok = toktier.load(name)
        eng = gpu.GpuEngine(tok)
        reps = [c for c in class_representatives(tok) if not (tok.class_table.bits[ord(c)] & (1 << 12))]
        lits = [t.content for t in tok.added_tokens[:3] if t.content]
        norm = [t.content for t in tok.added_tokens if t.content and t.normalized][:2]  # pass 2
        literal_doc = " ".join(lits) + "x" + lits[0] + lits[1][:-1] + "\\n" + lits[0] + lits[0]
        literal_doc += " " + "".join(norm) + "y" + "".join(norm[:1])
        docs = base + ["".join(reps[:160]), literal_doc] + long
        # batch path: one pipeline run, every document exact on its own
        out = eng.encode_batch(docs)
        info = eng.stats()["last_request"]
        assert info["host_syncs"] == 2 and info["docs"] == len(docs), info
        assert info["warp_pieces"] >= 4 and info["block_pieces"] >= 1, info
        assert info["literals"] >= 4, info
        for doc, (ids, s, e) in zip(docs, out, strict=True):
            check_ids(tok, doc, ids, s, e, "batch")
        # split level: the pre-tokenizer's own piece ends, every document
        for doc, (s, e) in zip(docs, eng.split_batch(docs), strict=True):
            check_split(tok, doc, s, e)
        # single-request deliveries on one text with literals and long pieces
        text = literal_doc + base[0] + " " + "!" * 37 + "\\u4e2d\\u6587\\U0001F600"  # one warp piece
        ids, s, e = eng.encode(text)
        check_ids(tok, text, ids, s, e, "encode")
        assert eng.stats()["last_request"]["host_syncs"] == 2
        packed = eng.export_spans(text)
        assert packed.shape == (3, len(ids)) and packed.dtype == np.int64
        assert (packed[0] == ids).all() and (packed[1] == s).all() and (packed[2] == e).all()
        assert eng.stats()["last_request"]["host_syncs"] == 2  # count + one packed copy
        assert eng.encode_list(text) == ids.tolist()
        a_ids, a_s, a_e = eng.encode_arrays(text)
        assert eng.stats()["last_request"]["host_syncs"] == 1
        assert np.asarray(a_ids).tolist() == ids.tolist() and np.asarray(a_e).tolist() == e.tolist()
        cuts = eng.certified_cuts(text)  # the device predicate == the CPU's _cut_ok, everywhere
        assert len(cuts) and cuts.tolist() == eng._cpu.certified_cuts(text).tolist()
        total += len(docs)
        print(name, "ok", eng.stats()["requests"], "requests", flush=True)
    print("CHECKED", total)
    """
)

EXTRA = textwrap.dedent(
    """
    import random
    from numba import cuda
    # (1) the shuffle reduction the GPU compiles, alone: random keys, ties, empty lanes
    @cuda.jit
    def k_min(vals, out):
        out[cuda.threadIdx.x] = gpu.warp_min_shfl(vals[cuda.threadIdx.x])
    rng = np.random.default_rng(1)
    for trial in range(4):
        vals = rng.integers(0, 5, size=32).astype(np.int64) * (1 << 32) + rng.integers(0, 3, size=32)
        vals[rng.integers(0, 32, size=6)] = gpu.NONE_KEY
        out = np.zeros(32, dtype=np.int64)
        k_min[1, 32](vals, out)
        assert (out == vals.min()).all(), (vals, out)
    # (1b) the scan alone, at lengths around tile edges and past one tile per scan thread
    g = gpu._SimBackend.geometry
    tile = g.scan_bd * g.scan_ipt
    for n in (0, 1, tile - 1, tile, tile + 1, 9 * tile + 5):
        src = rng.integers(0, 4, size=n + 1).astype(np.int32)
        dst = np.full(n + 1, -7, dtype=np.int32)
        sums = np.zeros(n // tile + 2, dtype=np.int64)
        meta = np.zeros(gpu.M_SIZE, dtype=np.int64)
        meta[0] = n
        gpu.k_scan_reduce[2, g.scan_bd](meta, 0, src, sums, g.scan_ipt)
        gpu.k_scan_sums[1, g.scan_bd](meta, 0, 1, sums, tile)
        gpu.k_scan_apply[2, g.scan_bd](meta, 0, src, dst, sums, g.scan_ipt)
        expect = np.concatenate([[0], np.cumsum(src[:n])])
        assert dst[:n].tolist() == expect[:n].tolist() and dst[n] == -7, n
        assert meta[1] == expect[n], (n, meta[1], expect[n])
    # (2) the BPE kernels with shuffles (instead of the simulator's one-exchange minimum),
    #     and the heap fallback for pieces past block_max, on one tokenizer
    gpu.warp_min = gpu.warp_min_shfl
    tok = toktier.load("cl100k")
    eng = gpu.GpuEngine(tok, block_max=150)
    docs = ["x" * 36 + " " + "-" * 140 + "\\n" + "=" * 170 + " ok"]
    (ids, s, e), = eng.encode_batch(docs)
    info = eng.stats()["last_request"]
    assert info["warp_pieces"] == 1 and info["block_pieces"] == 1 and info["heap_pieces"] == 1, info
    check_ids(tok, docs[0], ids, s, e, "shuffles")
    gpu.warp_min = gpu._warp_min_sim
    # (3) property: random adversarial documents (class representatives, literals,
    #     contraction letters, long runs), batched, for two tokenizers
    from hypothesis import HealthCheck, given, settings, strategies as st
    import os
    # a simulated example costs about a second: a tenth of the suite's TOKTIER_EXAMPLES
    examples = int(os.environ.get("TOKTIER_GPU_EXAMPLES")
                   or max(2, int(os.environ.get("TOKTIER_EXAMPLES", "40")) // 10))
    for name in ("llama3", "gpt-oss"):
        tok = toktier.load(name)
        eng = gpu.GpuEngine(tok)
        reps = [c for c in class_representatives(tok) if not (tok.class_table.bits[ord(c)] & (1 << 12))]
        atoms = reps[::3] + list("'sStTdDlLvVeErRmM\\u017f \\n\\r\\t") + [t.content for t in tok.added_tokens[:4]]
        atoms += [" " * 9, "1" * 7, "a" * 35, "!" * 12]
        doc = st.lists(st.sampled_from(atoms), max_size=40).map("".join)

        @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(st.lists(doc, min_size=1, max_size=6))
        def prop(docs):
            for d, (ids, s, e) in zip(docs, eng.encode_batch(docs), strict=True):
                check_ids(tok, d, ids, s, e, "property")
            for d, (s, e) in zip(docs, eng.split_batch(docs), strict=True):
                check_split(tok, d, s, e)

        prop()
        print(name, "property ok", examples, flush=True)
    # (4) graph replay's host logic: a stand-in capture records the chain once per bucket
    #     and replays it for new texts of that bucket -- exact only if no launch argument
    #     depends on the request (sizes must come from the device meta array)
    class Replay:
        def __init__(self, calls):
            self.calls = calls
        def launch(self, stream):
            for k, g, b, a in self.calls:
                k[g, b](*a)
    class GraphSim(gpu._SimBackend):
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
            return Replay(calls)
    tok = toktier.load("qwen3")
    eng = gpu.GpuEngine(tok, graphs=True, _backend=GraphSim())
    lit = tok.added_tokens[0].content
    texts = ["short " + lit, "a different, longer text: 12345 " * 3 + lit + " x" * 20, "x"]
    for text in texts + texts[:1]:
        ids, s, e = eng.encode(text)
        check_ids(tok, text, ids, s, e, "graph")
        last = eng.stats()["last_request"]
        assert last["graph"] and last["host_syncs"] == 2 and last["kernel_launches"] == 0, last
    st = eng.stats()
    assert st["graph_replays"] == 4 and st["captured_buckets"] == [4096], st
    # (5) NFC: texts failing the quick check go to the CPU engine (qwen3 normalizes with NFC)
    docs = ["cafe\u0301 \u212b ok", "plain text", "\u1e0a\u0323 x"]
    out = eng.encode_batch(docs)
    info = eng.stats()["last_request"]
    assert info["delegated"] == 2 and info["nfc_unsafe_chars"] >= 3 and info["host_syncs"] == 3, info
    for d, (ids, s, e) in zip(docs, out, strict=True):
        check_ids(tok, d, ids, s, e, "nfc")
    ids, s, e = eng.encode(docs[0])
    check_ids(tok, docs[0], ids, s, e, "nfc single")
    assert eng.stats()["last_request"]["delegated"] == 1
    # (6) a literal split across two documents of a batch is no literal at all
    half = len(lit) // 2
    docs = ["tail " + lit[:half], lit[half:] + " head", lit]
    for d, (ids, s, e) in zip(docs, eng.encode_batch(docs), strict=True):
        check_ids(tok, d, ids, s, e, "split literal")
    assert eng.stats()["last_request"]["literals"] == 1
    # (7) threads: requests are serialized by the engine's lock, busy() shows one in flight
    import threading, time
    results = {}
    def work(k, text):
        results[k] = eng.encode_batch([text])[0]
    jobs = [threading.Thread(target=work, args=(k, t)) for k, t in enumerate(texts)]
    seen_busy = False
    for j in jobs:
        j.start()
    while any(j.is_alive() for j in jobs):
        seen_busy = seen_busy or eng.busy()
        time.sleep(0.002)
    assert seen_busy and not eng.busy()
    for k, text in enumerate(texts):
        check_ids(tok, text, *results[k], "threads")
    print("EXTRA OK")
    """
)


def _run(script: str, timeout: int = 900) -> str:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + script], env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout


def test_gpu_chain_matches_the_reference_for_every_tokenizer():
    out = _run(MAIN)
    assert "CHECKED 66" in out, out


def test_gpu_shuffles_heap_fallback_and_random_documents():
    out = _run(EXTRA)
    assert "EXTRA OK" in out, out


FAULTS = textwrap.dedent(
    """
    from numba import cuda
    N = gpu.NONE_KEY

    @cuda.jit
    def k_cut_everywhere(meta, cps, fl, class_of, stable, ncls, nfc, lmark, cut):
        for p in range(cuda.grid(1), meta[gpu.M_N], cuda.gridsize(1)):
            cut[p] = 1

    def highest_rank_first(best):
        r = gpu._warp_min_sim(-best if best != N else N)
        return r if r == N else -r

    faults = {
        "predicate": ("k_cuts", k_cut_everywhere),
        "merge order": ("warp_min", highest_rank_first),
        "spans": ("char_of", lambda cidx, u8, b: int(cidx[b])),
    }
    from toktier.engine.tables import EngineUnsupported
    try:
        gpu.GpuEngine(toktier.load("bert-uncased"))  # WordPiece: no engine rules
    except EngineUnsupported:
        print("UNSUPPORTED REFUSED")
    tok = toktier.load("llama3")
    eng = gpu.GpuEngine(tok)
    text = "Hello world, it's " + "x" * 40 + " done  \\n \\u4e2d\\u6587\\U0001F600\\u0434\\u043e"
    ids, s, e = eng.encode(text)
    check_ids(tok, text, ids, s, e, "unbroken")
    for fault, (attr, broken) in faults.items():
        real = getattr(gpu, attr)
        setattr(gpu, attr, broken)
        try:
            ids, s, e = eng.encode(text)
            check_ids(tok, text, ids, s, e, fault)
            (s, e), = eng.split_batch([text])
            check_split(tok, text, s, e)
        except AssertionError:
            print("CAUGHT", fault)
        finally:
            setattr(gpu, attr, real)
    """
)


def test_the_checks_can_fail():
    """Break the chain on purpose (predicate, merge order, spans): the checks must catch each.

    Also: a tokenizer the engine has no rules for (WordPiece) is refused.
    """
    out = _run(FAULTS)
    for fault in ("predicate", "merge order", "spans"):
        assert f"CAUGHT {fault}" in out, out
    assert "UNSUPPORTED REFUSED" in out


def test_certify_engine_gpu_campaign_smoke(tmp_path):
    """``toktier certify-engine --device gpu`` runs the campaign end to end (simulator, tiny)."""
    out = tmp_path / "cert.json"
    args = ["certify-engine", "--device", "gpu", "--chars", "300", "--codepoint-stride", "65536",
            "--max-synthetic", "40", "--single-limit", "1", "--cut-limit", "1", "--batch", "64",
            "--quiet", "--out", str(out), "qwen3"]  # fmt: skip
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run(
        [sys.executable, "-m", "toktier", *args], env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    rec = json.loads(out.read_text())
    (r,) = rec["results"]
    assert rec["device"] == "gpu" and rec["gpu"]["device"] == "cudasim" and r["device"] == "cudasim"
    assert r["divergences"] == 0 and r["synthetic_inputs"] == 40
    assert r["split_inputs"] >= 41 and r["id_inputs"] >= 41 and r["single_inputs"] >= 1
    assert r["cuts_checked"] >= 1 and r["engine_stats"]["host_syncs_per_request"] >= 1


ROUTER = textwrap.dedent(
    """
    from toktier import Tier
    tok = toktier.load("qwen3")
    eng = gpu.GpuEngine(tok)
    tier = Tier(tok, gpu=eng, gpu_min_chars=2048, verify_rate=1.0, delta_aware=False)
    big = "def f(x):\\n    return x ** 2  # it's 2026, caf\\u00e9\\r\\n\\n" * 60  # > 2 KB
    r = tier.encode(big, session="s")
    assert r.path == "gpu", r
    ids, s, e = tier.session_records("s")  # the state was seeded from the GPU's spans
    ref_ids, ref_off = reference(tok, big)
    assert ids.tolist() == ref_ids and list(zip(s.tolist(), e.tolist())) == ref_off
    r = tier.append("s", " and one more line\\n")  # repaired from the GPU-seeded state
    assert r.path == "repair" and r.ids.tolist() == reference(tok, big + " and one more line\\n")[0]
    small = tier.encode("short text", session="t")
    assert small.path == "cpu"
    assert tier.verifier.flush() and tier.stats()["verifier"]["mismatches"] == 0
    st = tier.stats()
    assert st["route_gpu"] == 1 and eng.stats()["requests"] >= 1
    print("ROUTED", st["route_gpu"], st["route_cpu"])
    """
)


def test_tier_routes_misses_to_the_gpu_and_seeds_sessions_from_its_spans():
    assert "ROUTED 1" in _run(ROUTER)
