"""What a one-thread ``encode_ids`` call spends outside the piece loop, stage by stage.

One 1M slice of ``bench-engine-targets``' corpus, warm (every piece cached), P50 of 9 calls
each, in one process: the str's UTF-8 bytes (``utf8_array``), decode and class bits
(``_prepare``), literals, the piece loop (``_encode_chunk``, IDs only), the whole compiled
call (``_encode_text``) and ``encode_ids(text, threads=1)``.

Usage: ``.venv/bin/python tools/engine-experiments/call_parts.py [NAME] [KIND]``.
"""

import sys
import time

import numpy as np
from hit_floor import warm_slice  # this script's folder is on sys.path

from toktier.engine import cpu as C
from toktier.textcheck import utf8_array


def p50_ms(fn, reps=9):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def main(name: str, kind: str) -> None:
    eng, text = warm_slice(name, kind)
    t, bt = eng.tables, eng.bpe
    u8 = utf8_array(text)
    wk = eng._workspace(u8.size)
    cache, lcache = eng._cache()
    n = C._prepare(u8, t.bits, wk.cps, wk.char_start, wk.fl)
    nlit = C._find_literals(wk.cps, n, *eng._trie_args, wk.ls, wk.le, wk.lid)

    def chunk():
        C._encode_chunk(0, n, 0, wk.cps, wk.fl, t.fold, t.family_code, u8, wk.char_start, wk.ls,
                        wk.le, wk.lid, nlit, bt, cache, lcache, wk.ends, wk.sym, wk.rank, wk.nxt,
                        wk.prv, wk.heap, wk.out_ids, wk.out_s, wk.out_e, False, wk.ring)  # fmt: skip

    def kernel():
        eng._encode_kernel(u8, t.bits, t.fold, t.family_code, t.nfc, *eng._trie_args, bt, cache,
                           lcache, wk, False, eng._ascii_direct, *eng._ascii_literals)  # fmt: skip

    rows = [
        ("utf8_array", lambda: utf8_array(text)),
        ("decode + bits (_prepare)", lambda: C._prepare(u8, t.bits, wk.cps, wk.char_start, wk.fl)),
        ("literals", lambda: C._find_literals(wk.cps, n, *eng._trie_args, wk.ls, wk.le, wk.lid)),
        ("piece loop (_encode_chunk)", chunk),
        ("compiled call (_encode_text)", kernel),
        ("encode_ids, 1 thread", lambda: eng.encode_ids(text, threads=1)),
    ]
    print(f"{name} {kind}: {n:,} characters, {u8.size:,} bytes, {nlit} literals")
    for _ in range(2):
        for label, fn in rows:
            print(f"  {label:30s} {p50_ms(fn):6.2f} ms")
        print()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "llama3",
         sys.argv[2] if len(sys.argv) > 2 else "code")  # fmt: skip
