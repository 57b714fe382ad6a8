"""Certify the GPU engine against the reference: split level, ID level, batches, single path, cuts.

The inputs are the CPU campaign's (``engine_campaign``): pairs and triples of
class representatives, runs of many lengths, contractions, every code point in
small contexts, and real documents with added-token literals sprinkled in.  The
GPU engine is exercised the way it serves:

- split level: ``GpuEngine.split_batch`` -- every input its own document of one
  pipeline run (document starts are forced cuts) -- against the reference
  ``pre_tokenizer.pre_tokenize_str`` piece ends of that input alone;
- ID level (with character spans): ``GpuEngine.encode_batch``, every document
  against its own reference encoding;
- the single-request path (``GpuEngine.encode``; CUDA-graph replay on a GPU) on
  real documents and on long concatenations;
- certified cuts: cut positions computed by the device predicate, proven with the
  reference alone (``ref(L) ++ ref(R) == ref(L + R)``).

Runs under the CUDA simulator too (``NUMBA_ENABLE_CUDASIM=1``), where the GPU's
identity is recorded as ``cudasim``; a simulator run is a small smoke of the same
code, not a certification of a device.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from ..families.classes import N_CODEPOINTS, SURROGATES
from .corpus import mixed_documents
from .engine_campaign import (
    Certifier,
    EngineCertification,
    _first_difference,
    codepoint_inputs,
    literal_sprinkle,
    synthetic_inputs,
)


@dataclass
class GpuCertification(EngineCertification):
    device: str = "gpu"
    device_facts: dict = field(default_factory=dict)
    batch_runs: int = 0  # pipeline runs of encode_batch / split_batch
    synthetic_inputs: int = 0  # synthetic inputs checked (of synthetic_available)
    synthetic_available: int = 0
    single_inputs: int = 0  # texts checked through the single-request path
    single_chars: int = 0
    single_divergences: int = 0
    engine_stats: dict = field(default_factory=dict)

    @property
    def divergences(self) -> int:
        return super().divergences + self.single_divergences


class GpuCertifier(Certifier):
    """``Certifier`` bookkeeping with batched device checks."""

    def __init__(self, tok, engine):
        self.tok = tok
        self.engine = engine
        self.engine.warmup()
        device = "cudasim" if engine.backend == "cudasim" else "gpu"
        self.report = GpuCertification(tok.name, tok.family, device=device)
        pre = tok.hf.pre_tokenizer
        self._pretok = pre.pre_tokenize_str if pre is not None else None  # None: SentencePiece
        self._prepends = tok.family == "sentencepiece"

    def check_split_batch(self, texts: list[str]) -> None:
        r = self.report
        if self._pretok is None:
            return
        r.batch_runs += 1
        for text, (_starts, ends) in zip(texts, self.engine.split_batch(texts), strict=True):
            ref = self._pretok(text)
            ref_ends = np.fromiter((b for _p, (_a, b) in ref), dtype=np.int64, count=len(ref))
            r.split_inputs += 1
            r.split_chars += len(text)
            r.split_pieces += len(ref_ends)
            if not np.array_equal(ends, ref_ends):
                r.split_divergences += 1
                k = _first_difference(ends, ref_ends)
                self._example("split", text, piece=k,
                              engine=ends[max(0, k - 3) : k + 3].tolist(),
                              reference=ref_ends[max(0, k - 3) : k + 3].tolist())  # fmt: skip

    def _compare(self, text: str, got, enc) -> bool:
        ids, s, e = got
        off = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
        ref_ids = np.asarray(enc.ids, dtype=np.uint32)
        return (
            np.array_equal(ids, ref_ids)
            and np.array_equal(s, off[:, 0])
            and np.array_equal(e, off[:, 1])
        )

    def check_ids_batch(self, texts: list[str]) -> None:
        r = self.report
        r.batch_runs += 1
        refs = self.tok.hf.encode_batch(texts, add_special_tokens=False)
        for text, got, enc in zip(texts, self.engine.encode_batch(texts), refs, strict=True):
            r.id_inputs += 1
            r.id_chars += len(text)
            r.id_tokens += len(enc.ids)
            if not self._compare(text, got, enc):
                r.id_divergences += 1
                k = _first_difference(got[0], np.asarray(enc.ids, dtype=np.uint32))
                self._example("batch ids", text, token=k,
                              engine=got[0][max(0, k - 3) : k + 3].tolist(),
                              reference=enc.ids[max(0, k - 3) : k + 3])  # fmt: skip

    def check_single(self, text: str) -> None:
        r = self.report
        enc = self.tok.hf.encode(text, add_special_tokens=False)
        r.single_inputs += 1
        r.single_chars += len(text)
        got = self.engine.encode(text)
        if not self._compare(text, got, enc):
            r.single_divergences += 1
            self._example("single ids", text, token=_first_difference(got[0], np.asarray(enc.ids)))


def _batches(items: list[str], size: int, max_chars: int) -> list[list[str]]:
    out, cur, chars = [], [], 0
    for t in items:
        if cur and (len(cur) >= size or chars + len(t) > max_chars):
            out.append(cur)
            cur, chars = [], 0
        cur.append(t)
        chars += len(t)
    if cur:
        out.append(cur)
    return out


def run_gpu_campaign(
    tok,
    n_chars: int,
    *,
    seed: int = 0,
    codepoint_stride: int = 1,
    triples: bool = True,
    progress: bool = True,
    batch: int = 4096,
    batch_chars: int = 2_000_000,
    max_synthetic: int | None = None,
    single_limit: int | None = None,
    cut_limit: int | None = None,
    engine=None,
    batch_graphs: bool | None = None,
    short_map: bool | None = None,
    units: bool = False,
) -> GpuCertification:
    """Split- and ID-level certification of the GPU engine for one tokenizer.

    ``max_synthetic`` / ``single_limit`` / ``cut_limit`` thin the campaign for
    simulator smoke runs (None: everything, as on a GPU); ``batch_graphs`` certifies the
    engine with its batches replayed as CUDA graphs or not (None: the engine's default);
    ``short_map`` with the short-piece map on the device or not (None: the engine's default,
    on for byte-level BPE); ``units``: non-ASCII single requests uploaded as 16-bit
    characters, their UTF-8 written on the device (``GpuEngine(units=True)``).
    """
    from ..engine.gpu import GpuEngine

    t0 = time.perf_counter()
    cert = GpuCertifier(tok, engine or GpuEngine(tok, batch_graphs=batch_graphs,
                                                   short_map=short_map, units=units))
    r = cert.report
    r.device_facts = cert.engine.device_facts()
    rng = random.Random(seed)

    synth = synthetic_inputs(tok, triples=triples, seed=seed)
    r.synthetic_available = len(synth)
    if max_synthetic is not None and max_synthetic < len(synth):
        keep = sorted(rng.sample(range(len(synth)), max_synthetic))
        synth = [synth[i] for i in keep]
    r.synthetic_inputs = len(synth)
    groups = _batches(synth, batch, batch_chars)
    for g in tqdm(groups, desc=f"{tok.name}: synthetic", disable=not progress, mininterval=2):
        cert.check_split_batch(g)
        cert.check_ids_batch(g)
    joined = ["".join(synth[i : i + 256]) for i in range(0, len(synth), 256)]
    for g in _batches(joined, batch, batch_chars):
        cert.check_ids_batch(g)

    cps = codepoint_inputs(codepoint_stride)
    r.codepoints_covered = sum(
        1
        for c in range(0, N_CODEPOINTS, codepoint_stride)
        if not SURROGATES.start <= c < SURROGATES.stop
    )
    for g in tqdm(_batches(cps, batch, batch_chars), desc=f"{tok.name}: code points",
                  disable=not progress, mininterval=2):  # fmt: skip
        cert.check_split_batch(g)
        cert.check_ids_batch(g)

    docs, taken = mixed_documents(n_chars, seed=seed)
    r.chars_by_source = taken
    docs = literal_sprinkle(tok, docs, seed)
    for g in tqdm(_batches(docs, batch, batch_chars), desc=f"{tok.name}: real text",
                  disable=not progress, mininterval=2):  # fmt: skip
        cert.check_split_batch(g)
        cert.check_ids_batch(g)
    for doc in docs[:single_limit]:
        cert.check_single(doc)
    for doc in docs[:cut_limit]:
        cert.check_cuts(doc[:4000], rng, 4)
    for text in synth[:: max(1, len(synth) // 2000)][:cut_limit]:
        cert.check_cuts(text, rng, 2)
    # long texts through the single-request path (bigger buckets; graphs on a GPU)
    big, cur = [], []
    for doc in docs:
        cur.append(doc)
        if sum(map(len, cur)) >= 200_000:
            big.append("".join(cur))
            cur = []
    for text in big:
        cert.check_single(text)
    r.engine_stats = cert.engine.stats()
    r.seconds = round(time.perf_counter() - t0, 2)
    return r
