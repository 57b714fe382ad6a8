"""How many of the long pieces a warm engine must merge are one vocabulary token (not a change).

For a tokenizer without ``ignore_merges``, a table of the vocabulary entries longer than the
short map's pieces (17+ bytes) whose own bytes encode to themselves alone would answer such a
piece with one probe instead of its merges (the short map's idea, for long tokens).  This
counts what it could reach: ``bench-engine-targets``' 48K slices (15 per corpus, NFC applied
where the tokenizer normalizes), each slice's pieces of 17..128 bytes, those not seen in an
earlier slice (what the targets run's warm engine meets for the first time), and how many of
those the reference encodes as a single token.
Usage: ``.venv/bin/python tools/engine-experiments/long_token_share.py NAME[,NAME...]``;
record: ``results/runs/engine-ab/long-token-memo.txt``.
"""

import sys

import numpy as np

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu
from toktier.registry import load


def main(names: list[str]) -> None:
    texts = corpora()
    for name in names:
        tok = load(name)
        eng = cpu.new_engine(tok)
        for kind in ("multilingual", "code"):
            seen: dict[str, bool] = {}
            per = []
            for s in slices(texts[kind], 48_000, 15):
                if tok.hf.normalizer is not None:
                    s = tok.hf.normalizer.normalize_str(s)
                starts, ends = eng.split(s)
                n_long = n_new = n_one = 0
                for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
                    piece = s[a:b]
                    if not 17 <= len(piece.encode("utf-8")) <= 128:
                        continue
                    n_long += 1
                    if piece not in seen:
                        ids = tok.hf.encode(piece, add_special_tokens=False).ids
                        seen[piece] = len(ids) == 1
                        n_new += 1
                        n_one += seen[piece]
                per.append((n_long, n_new, n_one))
            per = np.array(per)
            print(f"{name} {kind} 48K x 15: long pieces per slice {per[:, 0].mean():.0f}, "
                  f"first seen per slice {per[:, 1].mean():.0f} (max {per[:, 1].max()}); "
                  f"of all first-seen, one token: {per[:, 2].sum()} of {per[:, 1].sum()}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else ["gpt-oss", "qwen3", "tekken"])
