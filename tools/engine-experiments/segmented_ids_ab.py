"""The segmented (NFC) path without span lifting for IDs-only calls (``encode_ids``: the
ranges' kernels skip the spans, the interleave copies IDs alone) against the same path
lifting and copying spans it then drops (before), in whole one-thread engine calls: one
engine, warm piece caches, alternated per slice, fresh str copies; outputs checked equal.

Usage: ``.venv/bin/python tools/engine-experiments/segmented_ids_ab.py NAME KIND [CHARS] [N]``.
"""

import sys

from alternate import alternate, report

from toktier.engine import cpu

NEW = cpu.CpuEngine._encode_segmented


def with_spans(self, *args, **kw):
    """Before: the segmented path always lifted and copied spans."""
    kw["spans"] = True
    return NEW(self, *args, **kw)


def main(name: str, kind: str, chars: int = 1_000_000, n: int = 8) -> None:
    def use(fn):
        return lambda: setattr(cpu.CpuEngine, "_encode_segmented", fn)

    res = alternate(name, kind, chars, n, {"spans lifted (old)": use(with_spans),
                                           "IDs alone (new)": use(NEW)})  # fmt: skip
    cpu.CpuEngine._encode_segmented = NEW
    report(f"{name} {kind} {chars:,} chars, {n} slices x 3 rounds, one thread, warm", res)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], *(int(x) for x in a[2:]))
