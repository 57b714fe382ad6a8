"""The bit-parallel ASCII pre-tokenizer (``engine.ascii_pretok``) against the automaton it
replaces on all-ASCII ranges: the same piece ends (1M of stdlib code, the ASCII bytes of 1M
of pycountry's catalogs, random strings of the pattern's tricky characters and of every ASCII
byte), then both timed on the code slice, alternated, P50 of 15.
Usage: ``.venv/bin/python tools/engine-experiments/bitpar_pretok.py [NAME]`` (repository root).
"""

import sys
import time

import numpy as np

sys.path.insert(0, "tools/engine-experiments")
import hit_floor as H

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import ascii_pretok as AP
from toktier.textcheck import utf8_array

TRICKY = [*"aZ09 '\t\r\n\x0b\x0c.(_-sStTrRevlLdDmM/A", "  ", "\r\n", "'s", "'RE", "'ll", "1234",
          "aB", "HTTP", "\n/"]  # fmt: skip


def automaton_ends(eng, text: str) -> np.ndarray:
    _, ends, k = H.piece_ends(eng, utf8_array(text))
    return ends[:k].copy()


def masks_ends(eng, text: str) -> np.ndarray:
    u8 = utf8_array(text)
    scratch = np.empty(AP.scratch_words(u8.size) + 8, np.int64)
    ends = np.empty(u8.size + 2, np.int64)
    k = AP.pretokenize_ascii(u8, 0, u8.size, eng.tables.fold, eng.bpe.ascii_pre, scratch, ends, 0)
    return ends[:k].copy()


def check(eng, text: str, label: str) -> int:
    got, want = masks_ends(eng, text), automaton_ends(eng, text)
    if not np.array_equal(got, want):
        k = min(got.size, want.size)
        diff = np.flatnonzero(got[:k] != want[:k])
        bad = int(diff[0]) if diff.size else k
        at = int(want[bad - 1]) if bad else 0
        raise SystemExit(f"{label}: piece {bad} differs near {text[max(0, at - 10) : at + 30]!r}: "
                         f"masks {got[bad:bad + 4].tolist()}, automaton {want[bad:bad + 4].tolist()}")  # fmt: skip
    return got.size


def main(name: str = "llama3") -> None:
    eng, _ = H.warm_slice(name, "code")
    if not eng.bpe.ascii_pre:
        raise SystemExit(f"{name}: no bit-parallel ASCII pre-tokenizer (ascii_mode 0)")
    code = slices(corpora()["code"], 1_000_000, 8)[3].encode("ascii", "ignore").decode()
    pieces = check(eng, code, "code")
    cat = slices(corpora()["multilingual"], 1_000_000, 8)[3].encode("ascii", "ignore").decode()
    pieces_m = check(eng, cat, "catalogs")
    rng = np.random.default_rng(0)
    every = [chr(c) for c in range(128)]
    for alphabet in (TRICKY, every):
        for _ in range(10_000):
            check(eng, "".join(rng.choice(alphabet, size=int(rng.integers(1, 200)))), "random")
    print(f"{name}: equal to the automaton on 1M code ({pieces:,} pieces), the catalogs' ASCII "
          f"({pieces_m:,}) and 20,000 random strings (10,000 of every ASCII byte)")  # fmt: skip
    u8 = utf8_array(code)
    scratch = np.empty(AP.scratch_words(u8.size) + 8, np.int64)
    ends = np.empty(u8.size + 2, np.int64)
    fold, digits = eng.tables.fold, eng.bpe.ascii_pre
    cased = digits >> 2 != AP.CL100K
    p = eng.prepare(u8)
    t = eng.tables
    ends2 = np.empty(p.n + 1, np.int64)
    arms = {
        "automaton": lambda: H.pretokenize(p.cps, p.fl, t.fold, p.n, t.family_code, eng.bpe, ends2),
        "masks only": lambda: AP.class_masks(u8, 0, u8.size, scratch, (u8.size + 63) >> 6, cased),
        "bit-parallel": lambda: AP.pretokenize_ascii(u8, 0, u8.size, fold, digits, scratch, ends, 0),
    }
    res = {k: [] for k in arms}
    for fn in arms.values():
        fn()
    for _ in range(15):
        for label, fn in arms.items():
            t0 = time.perf_counter_ns()
            fn()
            res[label].append((time.perf_counter_ns() - t0) / 1e6)
    for label, v in res.items():
        ms = float(np.median(v))
        print(f"  {label:12s} {ms:7.3f} ms  {ms * 1e6 / u8.size:5.2f} ns/char")


if __name__ == "__main__":
    main(*sys.argv[1:])
