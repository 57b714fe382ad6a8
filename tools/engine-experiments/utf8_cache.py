"""Does a str's cached UTF-8 move the timings?  Each method on fresh str copies against copies
whose UTF-8 the str already caches.

CPython keeps a str's UTF-8 once ``PyUnicode_AsUTF8AndSize`` has made it (PyO3 extensions --
HF tokenizers, fastokens, Gigatoken -- take ``&str`` through it), and ``str.encode`` copies that
cache when it is there instead of encoding.  So when several methods are timed one after the
other on the same str object, whichever runs after a PyO3 one gets its str -> UTF-8 for free;
a request decoded from JSON in a server arrives with no cache.  Here each slice is used once
per method and variant (fresh = ``(s + "x")[:-1]``; cached = that, then the ctypes call),
variants alternated, a new object per sample for Gigatoken (empty cache), fastokens and
toktier (one thread, its caches warmed on another text).

Usage: ``.venv/bin/python tools/engine-experiments/utf8_cache.py [NAME] [KIND] [CHARS]``.
"""

import ctypes
import sys
import time
from functools import partial

import fastokens
import gigatoken
import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.engine.cpu import CpuEngine
from toktier.registry import load

_as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
_as_utf8.restype = ctypes.c_void_p
_as_utf8.argtypes = [ctypes.py_object, ctypes.POINTER(ctypes.c_ssize_t)]


def fresh(s: str) -> str:
    return (s + "x")[:-1]


def cached(s: str) -> str:
    s = fresh(s)
    _as_utf8(s, ctypes.byref(ctypes.c_ssize_t()))
    return s


def ms(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def main(name: str = "llama3", kind: str = "code", chars: int = 1_000_000, n: int = 12) -> None:
    tok = load(name)
    path = tok.checked_path()
    text = corpora()[kind]
    res: dict = {}
    for i, s in enumerate(slices(text, chars, n)):
        for m in ("str.encode", "Gigatoken, empty cache", "fastokens", "toktier, 1 thread"):
            for variant in ("fresh", "cached") if i % 2 else ("cached", "fresh"):
                x = fresh(s) if variant == "fresh" else cached(s)
                if m == "str.encode":
                    fn = x.encode
                elif m.startswith("Giga"):
                    fn = partial(gigatoken.Tokenizer(path).encode, x)
                elif m == "fastokens":
                    f = fastokens.Tokenizer.from_file(path)
                    f.encode("warm", add_special_tokens=False)
                    fn = partial(f.encode, x, add_special_tokens=False)
                else:
                    eng = CpuEngine(tok)
                    eng.encode_ids(text[-20_000:], threads=1)
                    fn = partial(eng.encode_ids, x, threads=1)
                res.setdefault((m, variant), []).append(ms(fn))
    print(f"# {name} {kind} {chars:,} chars, {n} slices, P50 ms")
    for m in dict.fromkeys(k[0] for k in res):
        f, c = np.median(res[(m, "fresh")]), np.median(res[(m, "cached")])
        print(f"{m:24s} fresh {f:8.3f}  cached {c:8.3f}  fresh - cached {f - c:7.3f}")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(*(a[:2]), *(int(x) for x in a[2:3]))
