"""The simplest exact GPU path: one thread per certified text range, ``rules.encode_range``.

Each thread runs the CPU engine's whole range encoder (pre-tokenization, BPE with
its piece caches, spans) as one device function, on a range cut at certified
boundaries exactly as the CPU's parallel encode cuts it; host-side preparation
(UTF-8 decode, literal extraction, cut search) is the CPU engine's.  It is the
harness the CUDA simulator runs in CI (``tests/cudasim/test_ranges.py``) so that
``encode_range`` and everything it calls is exercised as device code; the
per-character pipeline of ``GpuEngine`` (scans, BPE by piece length, graphs) is
the serving path.  (This module was ``toktier.engine.cuda``, which still
re-exports it.)
"""

from __future__ import annotations

import numpy as np
from numba import cuda, int64

from ..rules import CACHE_COLS, LONG_COLS, NFC_UNSAFE, RING_WORDS
from .device import DEVICE

encode_range = DEVICE.encode_range
pretokenize_segment = DEVICE.pretokenize_segment
GPU_CACHE_SLOTS = 64  # per-thread piece cache rows (small: device memory per thread)
GPU_LONG_SLOTS = 8


@cuda.jit
def k_split(cps, fl, fold, family, lo, hi, ends, counts):
    """Thread k: the piece ends of pre-tokenizer input ``[lo[k], hi[k])``."""
    k = cuda.grid(1)
    if k < lo.size:
        counts[k] = pretokenize_segment(cps, fl, fold, lo[k], hi[k], family, ends[k], 0)


@cuda.jit
def k_encode_ranges(lo, hi, base, cps, fl, fold, family, u8, char_start, ls, le, lid, nlit, bt,
                    ends, sym, rank, nxt, prv, heap, cache, lcache, out_ids, out_s, out_e,
                    counts):  # fmt: skip
    """Thread k encodes range k into the output slots from ``base[k]``."""
    k = cuda.grid(1)
    if k < lo.size:
        ring = cuda.local.array(RING_WORDS, int64)  # the piece keys ahead, per thread
        lit0 = 0
        while lit0 < nlit and ls[lit0] < lo[k]:
            lit0 += 1
        n = encode_range(lo[k], hi[k], cps, fl, fold, family, u8, char_start, ls, le, lid, lit0,
                         nlit, bt, ends[k], sym[k], rank[k], nxt[k], prv[k], heap[k], cache[k],
                         lcache[k], out_ids, out_s, out_e, base[k], True, ring, False)  # fmt: skip
        counts[k] = n - base[k]


def split(engine, text: str) -> np.ndarray:
    """Piece ends of ``text`` as one pre-tokenizer input, computed by the device functions."""
    t = engine.tables
    p = engine.prepare(np.frombuffer(text.encode("utf-8"), dtype=np.uint8))
    n, cps, fl = p.n, p.cps, p.fl
    lo = np.zeros(1, dtype=np.int64)
    hi = np.full(1, n, dtype=np.int64)
    ends = np.zeros((1, n + 1), dtype=np.int64)
    counts = np.zeros(1, dtype=np.int64)
    k_split[1, 1](cps[:n], fl[:n], t.fold, t.family_code, lo, hi, ends, counts)
    return ends[0, : counts[0]]


def encode_ranges(engine, text: str, ranges: int = 4, threads_per_block: int = 32):
    """(ids, starts, ends) of ``text`` with one GPU thread per certified range.

    Host-side preparation (UTF-8 decode, literal extraction, cut search) reuses the
    CPU engine's compiled helpers; the device does pre-tokenization, BPE and spans.
    """
    t = engine.tables
    u8 = np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()  # kernels take writable arrays
    nb = u8.size
    if nb == 0:
        z = np.zeros(0, dtype=np.int64)
        return z.astype(np.uint32), z, z.copy()
    n, cps, char_start, fl, ls, le, lid, nlit, cut_args = engine.prepare(u8)
    if t.nfc and (fl[:n] & NFC_UNSAFE).any():
        raise ValueError("text is not NFC-stable: the GPU path takes NFC-stable text only")
    chunks = engine._chunks(0, n, ranges, cut_args, min_chars=0)
    lo = np.array([a for a, _ in chunks], dtype=np.int64)
    hi = np.array([b for _, b in chunks], dtype=np.int64)
    base = char_start[lo]
    widest = int(max(char_start[b] - char_start[a] for a, b in chunks)) + 1
    k = len(chunks)
    ends = np.zeros((k, int((hi - lo).max()) + 1), dtype=np.int64)
    work = [np.zeros((k, widest), dtype=np.int64) for _ in range(4)]
    heap = np.zeros((k, 3 * widest), dtype=np.int64)
    cache = np.zeros((k, GPU_CACHE_SLOTS, CACHE_COLS), dtype=np.int64)
    lcache = np.zeros((k, GPU_LONG_SLOTS, LONG_COLS), dtype=np.int64)
    out_ids = np.zeros(nb, dtype=np.int64)
    out_s = np.zeros(nb, dtype=np.int64)
    out_e = np.zeros(nb, dtype=np.int64)
    counts = np.zeros(k, dtype=np.int64)
    blocks = (k + threads_per_block - 1) // threads_per_block
    k_encode_ranges[blocks, threads_per_block](
        lo, hi, base, cps[:n], fl[:n], t.fold, t.family_code, u8, char_start, ls[:nlit],
        le[:nlit], lid[:nlit], nlit, engine.bpe, ends,
        *work, heap, cache, lcache, out_ids, out_s, out_e, counts,
    )  # fmt: skip
    sel = np.concatenate([np.arange(b, b + c) for b, c in zip(base, counts, strict=True)])
    return out_ids[sel].astype(np.uint32), out_s[sel], out_e[sel]
