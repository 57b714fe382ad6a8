"""What running the reference (HF) just before it does to a warm engine's 48K encode, against
memory sweeps (not a change).

Six ``bench-engine-targets`` 48K slices, every piece already cached (each slice encoded
once before each timed call), one thread; before the timed call: nothing, a read of 8 /
32 / 128 MB, the reference on another 48K slice, the reference on 1K characters, a 50 ms
sleep, a Python allocation loop, the reference then a 128 MB read.  P50 of 30 calls each.
Then the C allocator itself: five ``malloc(100,000)`` right after a reference call, and the
process's CPU time during a 50 ms sleep right after one (no thread of the reference's keeps
running).  Usage:
``.venv/bin/python tools/engine-experiments/after_reference.py NAME [KIND]``; record:
``results/runs/engine-ab/after-reference.txt``.
"""

import ctypes
import ctypes.util
import sys
import time

import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.bench.timing import fresh_str
from toktier.engine import cpu
from toktier.registry import load


def main(name: str, kind: str) -> None:
    tok = load(name)
    eng = cpu.new_engine(tok)
    eng.warmup()
    sl = slices(corpora()[kind], 48_000, 6)
    for s in sl:
        eng.encode_ids(s, threads=1)
    big = np.ones(512 * 2**20 // 8)

    def ms(fn) -> float:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3

    def sweep(mb: int) -> None:
        big[: mb * 2**20 // 8].sum()

    def ref(text: str) -> None:
        tok.hf.encode(fresh_str(text), add_special_tokens=False)

    before = {
        "nothing": lambda i: None,
        "read 8 MB": lambda i: sweep(8),
        "read 32 MB": lambda i: sweep(32),
        "read 128 MB": lambda i: sweep(128),
        "reference, 48K": lambda i: ref(sl[(i + 3) % 6]),
        "reference, 1K": lambda i: ref(sl[(i + 3) % 6][:1000]),
        "sleep 50 ms": lambda i: time.sleep(0.05),
        "Python allocations": lambda i: sum([x * 2 for x in range(2_000_000)]),
        "reference 48K, read 128 MB": lambda i: (ref(sl[(i + 3) % 6]), sweep(128)),
    }
    rows: dict[str, list[float]] = {k: [] for k in before}
    for _ in range(5):
        for i, s in enumerate(sl):
            for label, pre in before.items():
                eng.encode_ids(fresh_str(s), threads=1)
                pre(i)
                rows[label].append(ms(lambda s=s: eng.encode_ids(fresh_str(s), threads=1)))
    for label, v in rows.items():
        print(f"{name} {kind} 48K, every piece cached, after {label:27s} P50 {np.median(v):.2f} ms")
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]

    def malloc_us(n: int) -> float:
        t0 = time.perf_counter()
        p = libc.malloc(n)
        dt = (time.perf_counter() - t0) * 1e6
        libc.free(p)
        return dt

    for _ in range(3):
        ref(sl[0])
        print("five malloc(100,000) right after a 48K reference call, us each:",
              [round(malloc_us(100_000), 1) for _ in range(5)])  # fmt: skip
    print("five malloc(100,000) with no reference call before them, us each:",
          [round(malloc_us(100_000), 1) for _ in range(5)])  # fmt: skip
    for _ in range(3):
        ref(sl[0])
        c0 = time.process_time()
        time.sleep(0.05)
        busy = (time.process_time() - c0) * 1e3
        c0 = time.process_time()
        time.sleep(0.05)
        print(f"process CPU time in a 50 ms sleep right after a 48K reference call: {busy:.1f} ms "
              f"(the next 50 ms: {(time.process_time() - c0) * 1e3:.1f} ms)")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpt-oss",
         sys.argv[2] if len(sys.argv) > 2 else "multilingual")  # fmt: skip
