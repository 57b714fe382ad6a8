"""Host side of the GPU engine's 16-bit uploads (``GpuEngine(units=True)``): what a request's
conversion costs before its upload -- ``UnitBuffer.convert`` (a compiled pass over the str's
storage: its characters as 16-bit units and the UTF-8 byte count) against
``str.encode("utf-8")``.

Texts: bench-gpu's fresh 1M-character transcripts (``full_bench.fresh_texts``, the latency
rows), 1M-character slices of bench-engine-targets' code and multilingual corpora, and one
transcript with a character beyond U+FFFF (a str stored four bytes a character, which the
engine uploads as UTF-8: timed here with the pass it would need to write surrogate pairs);
the two conversions alternated, median of 15 each.  The uploaded bytes are printed too (2 a
character against 1-3).  Usage: ``.venv/bin/python tools/engine-experiments/units_upload.py``.
"""

import time

import numpy as np

from toktier.bench import engine_targets as E
from toktier.bench.full_bench import fresh_texts
from toktier.bench.streams import load_trajectories
from toktier.engine.gpu.units import UnitBuffer
from toktier.workload import archives

trajs = load_trajectories(archives.find_archive("mini-swe-agent"))
texts = {f"transcripts {k}": t for k, t in enumerate(fresh_texts(trajs, "qwen3", 1_000_000, 3))}
corp = E.corpora()
for kind in ("code", "multilingual"):
    for k, t in enumerate(E.slices(corp[kind], 1_000_000, 5)[:2]):
        texts[f"{kind} {k}"] = t
texts["transcripts 0 + U+1F600"] = texts["transcripts 0"][:-1] + "\U0001f600"  # kind 4
buf = UnitBuffer()


def utf16(text):
    """What a 16-bit upload of a four-byte-kind str would cost: CPython's UTF-16 encode."""
    return np.frombuffer(text.encode("utf-16-le"), np.uint16), len(text.encode())


for label, text in texts.items():
    convert = buf.convert if buf.convert(text) is not None else utf16
    units, nb = convert(text)
    assert units.tobytes() == text.encode("utf-16-le") and nb == len(text.encode())
    t_units, t_utf8 = [], []
    for _ in range(15):
        t0 = time.perf_counter()
        convert(text)
        t1 = time.perf_counter()
        text.encode("utf-8")
        t2 = time.perf_counter()
        t_units.append(t1 - t0)
        t_utf8.append(t2 - t1)
    how = "16-bit pass" if convert is not utf16 else "UTF-16 encode"
    print(f"{label:25s} ascii={text.isascii()!s:5s} {how} {1e3 * np.median(t_units):.2f} ms "
          f"({2 * units.size / 1e6:.2f} MB), str.encode {1e3 * np.median(t_utf8):.2f} ms "
          f"({nb / 1e6:.2f} MB)")  # fmt: skip
