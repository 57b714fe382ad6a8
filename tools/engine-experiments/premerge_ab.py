"""Byte pairs merged up front (``tables.build_premerge``) against the plain merge loop, in
whole one-thread engine calls with every piece cache emptied before each call (each piece
merged afresh): one engine, the two tables alternated per slice, fresh str copies, IDs equal.

Usage: ``.venv/bin/python tools/engine-experiments/premerge_ab.py NAME KIND [CHARS] [N]``.
"""

import sys

from alternate import alternate, report

from toktier.engine import cpu
from toktier.engine import rules as R
from toktier.registry import load


def main(name: str, kind: str, chars: int = 1_000_000, n: int = 6) -> None:
    eng = cpu.CpuEngine(load(name), threads=1)
    on = eng.bpe
    off = on._replace(pm_index=R.premerge_off()[0], pm_rows=R.premerge_off()[1])

    def use(bt):
        return lambda: setattr(eng, "bpe", bt)

    res = alternate(name, kind, chars, n, {"plain merges (old)": use(off),
                                           "pairs up front (new)": use(on)},
                    engine=eng, cold=True)  # fmt: skip
    eng.bpe = on
    report(f"{name} {kind} {chars:,} chars, {n} slices x 3 rounds, one thread, empty caches", res)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], *(int(x) for x in a[2:]))
