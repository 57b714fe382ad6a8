"""The merges alone, with and without byte pairs merged up front (``tables.build_premerge``):
the engine's own ``merges_only`` over the distinct multi-token pieces of 2..24 bytes of 1M
characters, each merged once, best of 5 after a cache sweep, alternated; outputs identical.

Usage: ``.venv/bin/python tools/engine-experiments/premerge_merges.py NAME [multi|code]``.
"""

import sys

import numpy as np
from fresh_piece_set import MAXL, best_of, distinct_multi_pieces, seq_all

from toktier.engine import rules as R

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
kind = sys.argv[2] if len(sys.argv) > 2 else "multi"
u8, st, en, on, scratch, out, offs = distinct_multi_pieces(name, kind)
off = on._replace(pm_index=R.premerge_off()[0], pm_rows=R.premerge_off()[1])
print(f"{name} {kind}: {st.size} distinct multi-token pieces of 2..{MAXL} bytes, "
      f"{on.pm_rows.shape[0]} byte pairs that may merge up front")  # fmt: skip
results = {}
for label, bt in (("plain", off), ("up front", on)):
    o = np.empty_like(out)
    f = np.empty_like(offs)
    seq_all(u8, st, en, bt, *scratch, o, f)
    results[label] = (o[: f[st.size]].copy(), f[: st.size + 1].copy())
same = all(np.array_equal(a, b) for a, b in zip(*results.values(), strict=True))
print("identical:", same)
for _ in range(3):
    a = best_of(lambda: seq_all(u8, st, en, off, *scratch, out, offs))
    b = best_of(lambda: seq_all(u8, st, en, on, *scratch, out, offs))
    print(f"  plain {a:.2f} ms, up front {b:.2f} ms: {a / b:.2f}x")
