"""Which compiled functions a request still compiles after an engine's ``warmup()``.

The requests: long ASCII, long mixed text, and text whose words NFC changes (an NFC
tokenizer's segmented path with several reference spans), long and short.

Run in a process of its own per tokenizer: numba's compiled functions are shared by
every engine of a process, so an earlier test's requests would have compiled them
already and hidden a path that ``warmup`` misses.  (By the time these tests run, the
session's earlier tests have put the functions in numba's on-disk cache, so the child
process loads them: a few seconds each.)
"""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import gc, json, sys
from numba.core.registry import CPUDispatcher
import toktier
from toktier.engine.cpu import engine_for

def signatures():
    return {f"{d.py_func.__module__}.{d.py_func.__qualname__}": len(d.overloads)
            for d in gc.get_objects()
            if isinstance(d, CPUDispatcher) and d.py_func.__module__.startswith("toktier.engine")}

eng = engine_for(toktier.load(sys.argv[1]))
eng.warmup()
code = "for i in range(10):\\n    print(i, 'x')  # loop\\n" * 2500  # ~110K ASCII chars
mixed = code[:40_000] + "Grüße, мир — 中文 ok\\n" * 2000 + code[:30_000]
# words that NFC changes, apart: an NFC tokenizer's segmented path, several reference spans
nfc = ("x = 1  # Cafe\\u0301 ok\\n" + "y = 2  # \\u1100\\u1161 ok\\n" * 3) * 40
before = signatures()
for text in (code, mixed, nfc, nfc[:700]):
    eng.encode(text)
    eng.encode_ids(text, threads=1)
    eng.encode_ids(text, threads=2)
    eng.encode_parallel(text, threads=2)
after = signatures()
print(json.dumps({k: [before.get(k, 0), v] for k, v in after.items() if v != before.get(k, 0)}))
"""


def compiled_after_warmup(name: str) -> dict[str, list[int]]:
    """function -> [signatures after warmup, after the requests], for those that grew."""
    out = subprocess.run([sys.executable, "-c", _PROBE, name], capture_output=True, text=True,
                         timeout=900, check=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])
