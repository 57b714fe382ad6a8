"""How many of a fresh multilingual piece's merge steps a second up-front merge level could
prove first (an analysis, not a change).

The engine merges proven byte pairs before its merge loop (``tables.build_premerge``).  The
same argument for any adjacent pair (X, Y) of the symbols after that, merge rank r: BPE merges
it before X or Y changes if no merge (T, X) of a token T ending in the byte before X ranks
below r, no merge (Y, T) of a T starting with the byte after Y ranks below r, and no merge
taking the merged token ranks below r (the tiktoken-derived tables have such inversions).
Over the never-met multi-token pieces of experiment 10's multilingual appends (20 sessions,
``multilingual_fresh.fresh_pieces``), from the engine's own ``premerged_start``: the merge steps
left, how many one more level (left to right, non-overlapping) and a fixpoint of levels would
take up front, and a check that BPE from there gives the same tokens.
Usage: ``.venv/bin/python tools/engine-experiments/premerge_level2_reach.py [NAME]``.
"""

import json
import sys
from collections import defaultdict

import numba
import numpy as np

sys.path.insert(0, "tools/append-profile")
import multilingual_fresh as MF
from session_loop import protocol_tier

from toktier.bench import continuation as C
from toktier.engine import cpu

BIG = 1 << 40
premerged_start = cpu.RULES.premerged_start


@numba.njit
def start(buf, b0, b1, bt):
    """The engine's symbols of ``buf[b0:b1]`` after its byte-pair premerge."""
    sym = np.empty(64, np.int64)
    rk = np.empty(64, np.int64)
    n = premerged_start(buf, b0, b1, bt, sym, rk)
    return sym[:n].copy()


class Merges:
    """The reference's merges as ranks, with the bounds the proof reads."""

    def __init__(self, tok):
        model = json.loads(tok.hf.to_str())["model"]
        vocab = model["vocab"]
        u2b = MF.byte_level_bytes()
        self.tb = {i: bytes(u2b[c] for c in t) for t, i in vocab.items()}
        self.rank, self.merged = {}, {}
        for r, (a, b) in enumerate(model["merges"]):
            self.rank.setdefault((vocab[a], vocab[b]), r)
            self.merged[(vocab[a], vocab[b])] = vocab[a + b]
        self.leftmin = defaultdict(lambda: BIG)  # (X, last byte of T) -> min rank of (T, X)
        self.rightmin = defaultdict(lambda: BIG)  # (Y, first byte of T) -> min rank of (Y, T)
        self.anymin = defaultdict(lambda: BIG)  # Z -> min rank of a merge taking Z
        for (a, b), r in self.rank.items():
            k = (b, self.tb[a][-1])
            self.leftmin[k] = min(self.leftmin[k], r)
            k = (a, self.tb[b][0])
            self.rightmin[k] = min(self.rightmin[k], r)
            self.anymin[a] = min(self.anymin[a], r)
            self.anymin[b] = min(self.anymin[b], r)

    def bpe(self, seq: list) -> tuple[list, int]:
        """BPE from ``seq``: (tokens, merge steps)."""
        seq, steps = list(seq), 0
        while True:
            best = None
            for i in range(len(seq) - 1):
                r = self.rank.get((seq[i], seq[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                return seq, steps
            i = best[1]
            seq[i : i + 2] = [self.merged[(seq[i], seq[i + 1])]]
            steps += 1

    def provable(self, seq: list, i: int) -> bool:
        x, y = seq[i], seq[i + 1]
        r = self.rank.get((x, y))
        if r is None:
            return False
        left = i == 0 or self.leftmin[(x, self.tb[seq[i - 1]][-1])] > r
        right = i + 2 >= len(seq) or self.rightmin[(y, self.tb[seq[i + 2]][0])] > r
        return left and right and self.anymin[self.merged[(x, y)]] > r

    def level(self, seq: list) -> tuple[list, int]:
        """One more level of proven merges, left to right, non-overlapping."""
        out, i, k = [], 0, 0
        while i < len(seq):
            if i + 1 < len(seq) and self.provable(seq, i):
                out.append(self.merged[(seq[i], seq[i + 1])])
                i += 2
                k += 1
            else:
                out.append(seq[i])
                i += 1
        return out, k


def main(name: str) -> None:
    streams, tier = protocol_tier(name)
    mg = Merges(tier.tokenizer)
    tails = C.continuation_tails([48000], 1100, 5, 60)
    cells = C.session_cells(streams["multilingual"], 48000, 1100, 5, 60, tails[48000])
    _, pieces = MF.fresh_pieces(tier.tokenizer, streams["multilingual"], cells[:20])
    steps = one = fix = differ = 0
    for p in pieces:
        s0 = list(start(np.frombuffer(p + bytes(16), np.uint8), 0, len(p), tier.engine.bpe))
        ref, k = mg.bpe(s0)
        steps += k
        s1, k1 = mg.level(s0)
        one += k1
        s2, kk = s1, k1
        while kk:
            s2, kk = mg.level(s2)
            k1 += kk
        fix += k1
        differ += mg.bpe(s1)[0] != ref or mg.bpe(s2)[0] != ref
    n = len(pieces)
    print(f"{name}: {n:,} never-met multi-token pieces; merge steps after the byte premerge "
          f"{steps / n:.2f} a piece; proven by one more level {one / n:.2f}, by a fixpoint of "
          f"levels {fix / n:.2f}; tokens differing from BPE's: {differ}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "llama3")
