"""How far continuation bytes joining a pair's token reach (``premerge_chains.patch``, measured
2026-11-28, not kept): the symbols the merge loop starts from, over the distinct multi-token
pieces of 1M characters (up to 24 bytes, and longer), as bytes, after the byte pairs alone,
and after the chains; then the merges of each set timed plain / pairs / chains (best of 5
after a cache sweep).  Apply the patch first (``git apply``), then
``.venv/bin/python tools/engine-experiments/premerge_chain_reach.py NAME [multi|code]``.
"""

import sys

import fresh_piece_set as F
import numba

from toktier.engine import cpu
from toktier.engine import rules as R

F.MAXL = 4000  # every piece, the heap's long ones too
premerged_start = cpu.RULES.premerged_start


@numba.njit(cache=False)
def start_symbols(u8, st, en, bt, sym, rank):
    n = 0
    for p in range(st.size):
        n += premerged_start(u8, st[p], en[p], bt, sym, rank)
    return n


name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
kind = sys.argv[2] if len(sys.argv) > 2 else "multi"
u8, st, en, on, scratch, out, offs = F.distinct_multi_pieces(name, kind)
pairs_rows = on.pm_rows.copy()
pairs_rows[:, 9] = -1  # needs the patch's tenth column
pairs = on._replace(pm_rows=pairs_rows)
off = on._replace(pm_index=R.premerge_off()[0], pm_rows=R.premerge_off()[1])
lengths = en - st
for label, sel in (("<= 24 bytes", lengths <= 24), ("> 24 bytes", lengths > 24)):
    s, e = st[sel], en[sel]
    print(f"{name} {kind}, pieces {label}: {s.size}, bytes {int((e - s).sum())}, symbols after "
          f"the pairs {start_symbols(u8, s, e, pairs, scratch[0], scratch[1])}, after the chains "
          f"{start_symbols(u8, s, e, on, scratch[0], scratch[1])}")  # fmt: skip
    for _ in range(2):
        ms = [F.best_of(lambda bt=bt, s=s, e=e: F.seq_all(u8, s, e, bt, *scratch, out, offs))
              for bt in (off, pairs, on)]  # fmt: skip
        print("  merges ms, plain / pairs / chains:", " / ".join(f"{x:.2f}" for x in ms))
