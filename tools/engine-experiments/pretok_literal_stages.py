"""Best-of-25 ms of two stages as the engine runs them on 1M characters
(``engine_profile.profile_texts``): the pre-tokenizer (over the bytes of an all-ASCII text
where the engine reads it so, else over the decoded characters) and the literal walk.

For A/Bs of a refactor: run it once per tree, alternating, an older tree through
``PYTHONPATH=WORKTREE`` (record ``results/runs/engine-ab/shared-steps-ab.txt``).
Run from the repository root:
``.venv/bin/python tools/engine-experiments/pretok_literal_stages.py NAME...``.
"""

import sys
from types import SimpleNamespace

import numpy as np

from toktier.bench import engine_profile as EP
from toktier.engine import ascii_pretok, cpu
from toktier.registry import load


def stages(eng, text: str) -> tuple[float, float, int]:
    """(pre-tokenizer ms, literals ms, piece count) of ``text``."""
    t = eng.tables
    u8 = np.frombuffer(text.encode(), dtype=np.uint8)
    nb = u8.size
    wk = SimpleNamespace(cps=np.empty(nb, np.uint32), char_start=np.empty(nb + 1, np.int64),
                         fl=np.empty(nb, np.uint16))  # fmt: skip
    n = cpu._prepare(u8, t.bits, wk.cps, wk.char_start, wk.fl)
    ends = np.empty(n + 1, dtype=np.int64)
    lit = (*eng._trie_args, *(np.empty(n, np.int64) for _ in range(3)))
    if text.isascii() and eng._ascii_direct:
        scratch = np.empty(ascii_pretok.scratch_words(nb), dtype=np.int64)

        def pretok():
            return EP._ascii_pretokenize(eng, u8, wk.fl, ends, scratch)

        def literals():
            return EP._ascii_literals(eng, u8, lit)
    else:
        scratch = np.empty(ascii_pretok.scratch_words_cps(n), dtype=np.int64)

        def pretok():
            return EP._decoded_pretokenize(eng, wk, n, ends, scratch)

        def literals():
            return cpu._find_literals(wk.cps, n, *lit)

    return EP._best_ms(pretok, 25), EP._best_ms(literals, 25), pretok()


def main():
    texts = EP.profile_texts(1_000_000)
    for name in sys.argv[1:]:
        eng = cpu.engine_for(load(name))
        eng.warmup()
        for label in ("code", "multilingual"):
            p, lt, pieces = stages(eng, texts[label])
            print(f"{name:12s} {label:13s} pretok {p:6.3f}  literals {lt:6.3f} ms  pieces {pieces}",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
