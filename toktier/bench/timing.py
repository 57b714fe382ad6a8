"""Timing protocol shared by every experiment: one timed call per sample, GC off while timing."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import numpy as np


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """(milliseconds, result) of one call, with the garbage collector off while timing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        out = fn()
        dt = time.perf_counter_ns() - t0
    finally:
        if enabled:
            gc.enable()
    return dt / 1e6, out


def fresh_str(text: str) -> str:
    """A new str equal to ``text``, with no UTF-8 cached in it: what each timed method gets.

    CPython keeps a str's UTF-8 once ``PyUnicode_AsUTF8AndSize`` has made it (the PyO3
    tokenizers -- HF, fastokens, Gigatoken -- take text through it) and ``str.encode`` copies
    that cache instead of encoding.  Methods timed one after the other on one str object
    therefore handed the later ones their str -> UTF-8 for free (1M characters: 0.65 ms of
    code, 2.3 ms of multilingual prose; Gigatoken always ran after fastokens), while a
    request decoded from JSON arrives with none (``results/runs/engine-ab/utf8-cache.txt``).
    """
    return (text + "\0")[:-1]


def rotated(items, k: int) -> list:
    """``items`` starting at position ``k`` (mod its length) and wrapping around."""
    items = list(items)
    if not items:
        return items
    k %= len(items)
    return items[k:] + items[:k]


def sample_order(methods: dict, k: int, heavy=("HF", "LoPT"), fresh=("Gigatoken",)) -> list:
    """The (name, prepare) pairs of sample ``k``: the light methods rotated by ``k``, then the
    ones that build a new object per sample (``fresh``: Gigatoken with an empty cache), then
    the heavy ones (the reference, LoPT's processes) in their order.

    Why: methods compared on one text run one after the other, and the one that follows a
    heavy call (the reference, which also checks every sample) meets caches it filled and
    pays for it: 20-45% at 48K characters in bench-engine-targets, charged to "1 thread"
    on every sample while the order was fixed.  Rotating the whole order does not help (the
    same method still follows the reference); with the heavy calls last and the light ones
    rotated, a different method follows them on each sample, and a P50 over >= 3 samples
    drops that one.  A new Gigatoken object slowed every persistent object run after it in
    the same sample -- toktier's engines and fastokens, 2-5x on gpt-oss code 48K (one thread
    1.1-3.0 ms before it, 4.7-7.4 ms after it; fastokens 1.4-1.8 vs 7-21 ms), in half the
    samples of a rotation of four (``results/runs/engine-ab/small-cells.txt``) -- while its
    own time, its tables built just before its call, does not depend on what ran before.
    """
    items = list(methods.items())
    light = [m for m in items if not m[0].startswith(heavy + fresh)]
    return (rotated(light, k) + [m for m in items if m[0].startswith(fresh)]
            + [m for m in items if m[0].startswith(heavy)])  # fmt: skip


SETTLE_BYTES = 1 << 16  # a heap request (under glibc's 128 KiB mmap threshold) past the small bins
SETTLE_FAST_NS = 50_000  # a request this quick means the free lists are sorted


def settle_allocator(rounds: int = 32) -> int:
    """Let the C allocator sort what earlier calls freed, outside any clock; returns the
    requests it took.

    Why: after a call that frees many small blocks (the reference's 48K-character encode
    frees tens of thousands, a new Gigatoken object's construction 30,000-110,000), glibc's
    next heap requests past the small bins sort them into bins, up to 10,000 blocks per
    request: 0.4-1.3 ms each, charged to whatever runs next (a str's UTF-8, an output
    array, a new object's first encode: Gigatoken's empty-cache 48K cells read 3-13x slow).
    Methods compared one after the other in one process would each pay for what ran
    before them (``results/runs/engine-ab/after-reference.txt``).  A few untimed requests here pay it
    instead; on a sorted heap the first one is already quick.
    """
    for k in range(1, rounds + 1):
        t0 = time.perf_counter_ns()
        bytearray(SETTLE_BYTES)
        if time.perf_counter_ns() - t0 < SETTLE_FAST_NS:
            return k
    return rounds


def time_ms(fn: Callable[[], object]) -> float:
    """Wall time of one call in milliseconds (the result is discarded after the clock stops)."""
    return timed(fn)[0]


def time_method(prep: Callable[[str], Callable[[], object]], text: str) -> tuple[float, Callable]:
    """(milliseconds, the prepared call) of one method's call on ``text``, as the full-encode
    comparisons time every method: on its own copy of the text (``fresh_str``), the
    allocator settled after preparing it (``settle_allocator``), then the clock."""
    fn = prep(fresh_str(text))
    settle_allocator()
    return time_ms(fn), fn


def summarize(samples_ms) -> dict:
    x = np.asarray(samples_ms, dtype=float)
    if not len(x):
        return {
            "n": 0,
            "p50": float("nan"),
            "p90": float("nan"),
            "p99": float("nan"),
            "mean": float("nan"),
        }
    return {
        "n": len(x),
        "p50": float(np.percentile(x, 50)),
        "p90": float(np.percentile(x, 90)),
        "p99": float(np.percentile(x, 99)),
        "mean": float(x.mean()),
    }


def private_engine(tok):
    """A CPU engine of its own (own piece caches) for one timed method, or None (no engine).

    The engine's piece caches live across calls; methods that share one engine would
    find the pieces of texts another method just encoded already cached, so every
    method compared on the same texts gets its own.
    """
    from ..engine import cpu

    return cpu.new_engine(tok) if cpu.engine_for(tok) is not None else None
