"""The merges alone, with and without byte pairs merged up front (``tables.build_premerge``):
the engine's own ``merges_only`` over the distinct multi-token pieces of 2..24 bytes of 1M
characters, each merged once, best of 5 after a cache sweep, alternated; outputs identical.
With ``premerge_chains.patch`` applied (continuation bytes joining a pair's token; measured
2026-11-28, not kept) a third way: the byte pairs alone, its chains switched off.

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
chains = on.pm_rows.shape[1] > 9  # the patch's rows: a tenth column, the chain's block
pairs_only = on.pm_rows.copy()
if chains:
    pairs_only[:, 9] = -1
pairs = on._replace(pm_rows=pairs_only)
n_pairs = int((on.pm_index[:65536] >= 0).sum())
print(f"{name} {kind}: {st.size} distinct multi-token pieces of 2..{MAXL} bytes, "
      f"{n_pairs} byte pairs that may merge up front, "
      f"{on.pm_rows.shape[0] - n_pairs} continuation rows in {(on.pm_index.size - 65536) // 64} "
      "blocks")  # fmt: skip
results = {}
for label, bt in (("plain", off), ("pairs", pairs), ("up front", on)):
    o = np.empty_like(out)
    f = np.empty_like(offs)
    seq_all(u8, st, en, bt, *scratch, o, f)
    results[label] = (o[: f[st.size]].copy(), f[: st.size + 1].copy())
base = results["plain"]
same = all(np.array_equal(x, y) for r in results.values() for x, y in zip(base, r, strict=True))
print("identical:", same)
for _ in range(3):
    a = best_of(lambda: seq_all(u8, st, en, off, *scratch, out, offs))
    p = best_of(lambda: seq_all(u8, st, en, pairs, *scratch, out, offs))
    b = best_of(lambda: seq_all(u8, st, en, on, *scratch, out, offs))
    print(f"  plain {a:.2f} ms, pairs alone {p:.2f} ms ({a / p:.2f}x), "
          f"with continuations {b:.2f} ms ({a / b:.2f}x; {p / b:.2f}x over pairs alone)")
