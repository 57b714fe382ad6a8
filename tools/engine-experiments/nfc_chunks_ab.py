"""In-process A/B (2026-11-27, kept): how an NFC tokenizer's text that NFC changes is encoded.

Old: a part or chunk whose NFC stretches the reference's NFC changes reported failure, and
the whole text went to the segmented path on one thread, which decoded and normalized it
all again. New (``CpuEngine._encode_u8``): that part takes the segmented path itself, with
the stretches its check computed, on whichever thread has it. The old functions are
restated here (as they were at 2ed8a4e); both run alternately on the same slices of
``bench-engine-targets``' corpora, checked against the reference first.
Usage: ``.venv/bin/python tools/engine-experiments/nfc_chunks_ab.py [NAME]``.
"""

import sys
import time
from itertools import pairwise

import numpy as np

from toktier import load
from toktier.bench import engine_targets as E
from toktier.engine import cpu as C

name = sys.argv[1] if len(sys.argv) > 1 else "qwen3"
tok = load(name)
eng = C.CpuEngine(tok)
eng.warmup()


def old_encode_u8(u8, spans=True):
    t = eng.tables
    wk = eng._workspace(u8.size)
    args = (t.bits, t.fold, t.family_code)
    out = eng._encode_kernel(u8, *args, t.nfc, *eng._trie_args, eng.bpe, *eng._cache(), wk, spans, False)
    if out[3] or not t.nfc:
        return out
    n = C._char_count(u8)
    if C.nfc_stretch_changes(tok.hf.normalizer.normalize_str, wk.cps[:n], wk.fl[:n])[2].any():
        return out  # failed: the caller sends the whole text to the segmented path
    return eng._encode_kernel(u8, *args, False, *eng._trie_args, eng.bpe, *eng._cache(), wk, spans, False)


def old_bytes(u8, spans=True):
    if u8.size <= eng.workspace_bytes:
        return old_encode_u8(u8, spans)
    bounds = eng._part_bounds(u8, -(-u8.size // (eng.workspace_bytes // 2)))
    results = [old_encode_u8(u8[a:b], spans) for a, b in pairwise(bounds)]
    if not all(r[3] for r in results):
        return None, None, None, False
    return (*C._join_parts(results, spans), True)


def old_encode_ids(text, threads):
    u8 = C.utf8_array(text)
    if threads <= 1:
        ids, _s, _e, ok = old_bytes(u8, False)
        return ids if ok else eng._encode_segmented(text, u8, threads=1)[0]
    bounds = eng._part_bounds(u8, C.chunk_count(u8.size, threads))
    res = C.run_chunks(eng._parts, list(pairwise(bounds)), threads,
                       lambda j: old_bytes(u8[j[0] : j[1]], False))  # fmt: skip
    if all(r[3] for r in res):
        return C._join_parts(res, False)[0]
    return eng._encode_segmented(text, u8, threads=threads)[0]


def ms(fn):
    t0 = time.perf_counter()
    fn()
    return 1e3 * (time.perf_counter() - t0)


texts = E.corpora()
for kind in ("multilingual", "code + multilingual", "code"):
    for k, x in enumerate(E.slices(texts[kind], 1_000_000, 5)):
        ref = tok.hf.encode(x, add_special_tokens=False).ids
        for th in (1, 2):
            assert eng.encode_ids(x, threads=th).tolist() == ref
            assert old_encode_ids(x, th).tolist() == ref
        runs: dict = {(v, th): [] for v in ("old", "new") for th in (1, 2)}
        for _rep in range(4):
            for th in (1, 2):
                runs["old", th].append(ms(lambda x=x, th=th: old_encode_ids(x, th)))
                runs["new", th].append(ms(lambda x=x, th=th: eng.encode_ids(x, threads=th)))
        m = {key: float(np.median(v)) for key, v in runs.items()}
        print(f"{name} {kind:20s} slice {k}: 1t old {m['old', 1]:6.1f} new {m['new', 1]:6.1f} "
              f"({m['old', 1] / m['new', 1]:.2f}x) | 2t old {m['old', 2]:6.1f} new "
              f"{m['new', 2]:6.1f} ({m['old', 2] / m['new', 2]:.2f}x) | 2t over 1t: new "
              f"{m['new', 1] / m['new', 2]:.2f}x, old {m['old', 1] / m['old', 2]:.2f}x",
              flush=True)  # fmt: skip
