"""bench-engine-targets' 48K cells with and without the allocator settled before each clock
(``timing.settle_allocator``), in one process, the two harnesses alternated per tokenizer:
P50 ms per method and the targets' ratios.  Usage:
``.venv/bin/python tools/engine-experiments/settle_ab.py NAME[,NAME...] [CHARS]``; record:
``results/runs/engine-ab/after-reference.txt``.
"""

import sys

from toktier.bench import engine_targets, timing
from toktier.registry import load

SETTLE = timing.settle_allocator


def main(names: list[str], chars: int) -> None:
    for name in names:
        tok = load(name)
        out = {}
        for arm in ("settled", "not settled", "settled", "not settled"):
            timing.settle_allocator = SETTLE if arm == "settled" else (lambda: 0)
            rows = engine_targets.run(tok, [chars], 5, progress=False)
            out.setdefault(arm, []).extend(rows)
        timing.settle_allocator = SETTLE
        for arm, rows in out.items():
            for cell in engine_targets.summary(rows):
                print(f"{name:8s} {cell['text']:20s} {chars:,} {arm:12s} 1t {cell['toktier_1t_ms']:6.2f} ms"
                      f"  Gigatoken {cell['gigatoken_empty_ms']:6.2f}  fastokens {cell['fastokens_ms']:6.2f}"
                      f"  HF {cell['hf_ms']:7.1f}  | Giga/1t {cell['1t_vs_gigatoken']:5.2f}"
                      f"  HF/1t {cell['1t_vs_hf']:5.1f}  fast/all {cell['all_vs_fastokens']:4.2f}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1].split(","), int(sys.argv[2]) if len(sys.argv) > 2 else 48_000)
