"""Would a merge table laid out by left token keep merges in the L2 cache?  A simulation.

The never-met pieces of six 48K slices of a corpus are merged in Python (reference BPE, no
premerge) and every pair lookup recorded; each lookup's cache lines are then run through
an LRU cache of 512 KB-2 MB: for the engine's layout, the pair filter's line and, when the
filter passes, the hash table's; for a layout with one hashed block of slots per left
token (2 x its merges, rounded to a power of two), a per-token header line and the
block's line.  Result (``results/runs/engine-ab/merge-locality.txt``): both miss ~0.1
times a lookup, so table misses do not explain why merges of 4,096 distinct pieces cost
2.6x those of 512 (``merge_working_set.py``).
Usage: ``.venv/bin/python tools/engine-experiments/merge_locality.py NAME [KIND]``.
"""

import collections
import sys

import numpy as np

sys.path.insert(0, "tools/append-profile")

from toktier.bench.engine_targets import corpora, slices
from toktier.engine import cpu
from toktier.engine.tables import MERGE_RANK_BITS
from toktier.registry import load

name = sys.argv[1]
kind = sys.argv[2] if len(sys.argv) > 2 else "multilingual"
tok = load(name)
eng = cpu.CpuEngine(tok)
bt = eng.bpe
mt = bt.merges
full = mt[mt != -1]
key = full >> MERGE_RANK_BITS
left = (key >> 18).astype(np.int64)
right = (key & ((1 << 18) - 1)).astype(np.int64)
prio = full & ((1 << MERGE_RANK_BITS) - 1)
rank = {(int(a), int(b)): int(p) for a, b, p in zip(left, right, prio, strict=True)}
vocab = tok.hf.get_vocab()
inv = {v: k for k, v in vocab.items()}


# merged token: vocab[inv[a] + inv[b]]
def merged(a, b):
    return vocab[inv[a] + inv[b]]


# current layout
mask = mt.size - 1


def slot_line(a, b):
    k = (a << 18) | b
    prod = k * 0x9E3779B1
    h = (prod >> 20) & mask
    return ("T", h >> 3), ("F", ((prod >> 40) & (bt.pair_filter.size * 64 - 1)) >> 9)


def slot_line_filter_pass(a, b):
    k = (a << 18) | b
    prod = k * 0x9E3779B1
    fb = (prod >> 40) & (bt.pair_filter.size * 64 - 1)
    return (bt.pair_filter[fb >> 6] >> (fb & 63)) & 1


# block layout: per left token a block of 2^ceil(log2(2*deg)) 8-byte slots, rights hashed in
deg = collections.Counter(int(a) for a in left)
off = {}
pos = 0
size = {}
for a in sorted(deg):
    s = 1
    while s < 2 * deg[a]:
        s <<= 1
    off[a] = pos
    size[a] = s
    pos += s
print(
    f"{name}: {len(rank):,} merges; block layout {pos * 8 / 1e6:.1f} MB (hash table {mt.nbytes / 1e6:.1f} MB + filter {bt.pair_filter.nbytes / 1e6:.1f} MB); max degree {max(deg.values())}"
)


def block_line(a, b):
    if a not in off:
        return ("H", a >> 3)  # header only (no merges from a)
    s = size[a]
    i = off[a] + (((b * 0x9E3779B1) >> 16) & (s - 1))
    return ("B", i >> 3)


split = tok.hf.pre_tokenizer.pre_tokenize_str
seen = set()
pieces = []
for sl in slices(corpora()[kind], 48000, 6):
    for p, _ in split(sl):
        if p not in seen and p not in vocab:
            pieces.append(p)
        seen.add(p)


def bpe_lookups(p):
    syms = [vocab[c] for c in p]  # byte-level chars are single-byte tokens
    out = []

    def look(a, b):
        out.append((a, b))
        return rank.get((a, b))

    r = [look(syms[i], syms[i + 1]) for i in range(len(syms) - 1)]
    while True:
        best = None
        for i, x in enumerate(r):
            if x is not None and (best is None or x < r[best]):
                best = i
        if best is None:
            break
        t = merged(syms[best], syms[best + 1])
        syms[best : best + 2] = [t]
        del r[best]
        if best < len(syms) - 1:
            r[best] = look(syms[best], syms[best + 1])
        if best > 0:
            r[best - 1] = look(syms[best - 1], syms[best])
    return out


def lru_misses(lines, cap):
    c = collections.OrderedDict()
    miss = 0
    for x in lines:
        if x in c:
            c.move_to_end(x)
        else:
            miss += 1
            c[x] = 1
            if len(c) > cap:
                c.popitem(last=False)
    return miss


seq = [lk for p in pieces for lk in bpe_lookups(p)]
cur = []
for a, b in seq:
    t, f = slot_line(a, b)
    cur.append(f)
    if slot_line_filter_pass(a, b):
        cur.append(t)
blk = [block_line(a, b) for a, b in seq]
hdr = [("O", a >> 3) for a, b in seq]  # the per-left header (offset, size) array: 8 per line
print(
    f"{len(pieces)} fresh pieces, {len(seq):,} pair lookups, {len(set(seq)):,} distinct pairs, {len(set(a for a, b in seq)):,} distinct lefts"
)
for cap_kb in (512, 1024, 2048):
    cap = cap_kb * 1024 // 64
    m_cur = lru_misses(cur, cap)
    m_blk = lru_misses([x for pr in zip(hdr, blk, strict=True) for x in pr], cap)
    print(
        f"  LRU {cap_kb} KB: current layout {m_cur:,} misses ({m_cur / len(seq):.2f}/lookup), block layout {m_blk:,} ({m_blk / len(seq):.2f}/lookup)"
    )
