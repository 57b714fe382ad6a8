"""The engine's device functions under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``).

The simulator must be switched on before numba.cuda is imported, so the check
runs in a subprocess: the same rules compiled with ``cuda.jit(device=True)``
encode small adversarial and real inputs for all six byte-level tokenizers,
one simulated GPU thread per certified range; IDs, spans and piece boundaries
must equal the reference.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("ignore", RuntimeWarning)  # int64 wraparound in the piece-cache hash
    from numba import config
    assert config.ENABLE_CUDASIM, "simulator not enabled"
    import toktier
    from toktier.engine import cuda as ecuda
    from toktier.engine.cpu import engine_for
    from toktier.campaigns.engine_campaign import class_representatives
    stdlib = open(__import__("json").__file__.replace("__init__.py", "decoder.py")).read()[:1200]
    base = [
        "Hello, world! It's 2026 -- 12345 spaces   \\n\\n\\tx\\r\\n don't 'LL x'\\u017f",
        "    def f(x):\\n        return x**2  # ok\\n\\n\\n",
        "\\u4e2d\\u6587\\u30c6\\u30ad\\u30b9\\u30c8\\u30fb\\u3072 123 abc",
        "\\U0001F600 na\\u00efve \\u0391\\u0392\\u0393 \\u03b1\\u03b2 CamelCaseWord x\\t 1",
        stdlib,
    ]
    checked = 0
    for name in ["llama3", "gpt-oss", "deepseek-v4", "qwen3", "qwen3.6", "cl100k"]:
        tok = toktier.load(name)
        eng = engine_for(tok)
        reps = [c for c in class_representatives(tok) if not (tok.class_table.bits[ord(c)] & (1 << 12))]
        lits = [t.content for t in tok.added_tokens[:3]]
        texts = base + ["".join(reps[:200]), " ".join(lits) + "x" + lits[0]]
        for tx in texts:
            ids, s, e = ecuda.encode_ranges(eng, tx, ranges=3)
            ref = tok.hf.encode(tx, add_special_tokens=False)
            assert ids.tolist() == ref.ids, (name, tx[:40])
            assert list(zip(s.tolist(), e.tolist())) == ref.offsets, (name, tx[:40])
            ends = ecuda.split(eng, tx)
            assert ends.tolist() == [b for _, (a, b) in tok.hf.pre_tokenizer.pre_tokenize_str(tx)]
            checked += 1
    print("CHECKED", checked)
    """
)


def test_device_functions_under_the_cuda_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "CHECKED 42" in proc.stdout
