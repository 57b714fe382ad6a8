"""What the method before it does to a small cell's one-thread toktier sample.

``bench-engine-targets``' five 48K slices, its methods prepared as it prepares them (every
method warmed on every corpus, the light ones on the cell's warm slice), and before each
timed toktier call on a slice the same slice through the peers named by MODE:
``none``, ``G`` (a new Gigatoken object, built and run), ``F`` (fastokens), ``GF`` (both, as
in a rotation where Gigatoken precedes fastokens), ``HF`` (the reference).  The peer's
callable is replaced, as in the benchmark, when toktier's is prepared.

Usage: ``.venv/bin/python tools/engine-experiments/after_peer.py NAME KIND MODE``.
"""

import gc
import sys
import time

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.full_bench import methods
from toktier.registry import load

G, F, T = "Gigatoken, empty cache", "fastokens", "toktier CPU, 1 thread"
MODES = {"none": [], "G": [G], "F": [F], "GF": [G, F], "HF": ["HF serial"]}


def main(name: str, kind: str, mode: str, chars: int = 48_000) -> None:
    tok = load(name)
    ms = methods(tok, lopt=False)
    texts = corpora()
    for k in texts:
        for prep in ms.values():
            prep(texts[k][-20_000:])()
    text = texts[kind]
    warm = slices(text[chars // 7 :] + text, chars, 1)[0]
    for nm, prep in ms.items():
        if not nm.startswith("HF"):
            prep(warm)()
    out = []
    fn = None
    for s in slices(text, chars, 5):
        for peer in MODES[mode]:
            fn = ms[peer](s)
            fn()
        fn = ms[T](s)  # replaces the last peer's callable (and object), as the benchmark does
        gc.disable()
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
        gc.enable()
    print(f"{name} {kind} {chars:,}, one thread after {mode:4s}: "
          + " ".join(f"{x:.2f}" for x in out) + " ms")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
