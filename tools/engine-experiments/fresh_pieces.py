"""What a fresh 1M slice costs beyond a seen one (issue #12's llama3 code cells), measured
2026-11-27.

Three parts, on ``bench-engine-targets``' slices (each a different 1M stretch of the corpus):
(1) each slice encoded once after a 1 GB sweep of the CPU caches (fresh: the engine's piece
caches hold the earlier slices only), then again at once, then again after another sweep --
what the new pieces cost against what cold memory costs; (2) the pieces of slice 1 that
slice 0 did not have (the bench's view of a fresh request), by kind and length; (3) the
merges of those pieces alone, through the engine's own compiled functions, hot and after a
sweep, with a merge loop without shifting (linked positions) beside the engine's.
Usage: ``.venv/bin/python tools/engine-experiments/fresh_pieces.py [NAME] [code|multilingual]``.
"""

import sys
import time

import numba
import numpy as np

from toktier import load
from toktier.bench import engine_targets as E
from toktier.engine import cpu, rules

name = sys.argv[1] if len(sys.argv) > 1 else "llama3"
kind = sys.argv[2] if len(sys.argv) > 2 else "code"
tok = load(name)
eng = cpu.CpuEngine(tok)
eng.warmup()
R = cpu.RULES
NO_PAIR = rules.NO_PAIR
merges_only, pair_code, merged_token = R.merges_only, R.pair_code, R.merged_token
slices = E.slices(E.corpora()[kind], 1_000_000, 6)
big = np.ones(1 << 30, np.uint8)


def sweep():
    big[::64] += 1  # a store to every line of 1 GB: no cache level keeps the engine's tables


def ms(t0, t1):
    return 1e3 * (t1 - t0)


# (1) fresh vs seen vs cold memory
eng.encode_ids(slices[0], threads=1)
for k, x in enumerate(slices[1:], 1):
    sweep()
    t0 = time.perf_counter()
    eng.encode_ids(x, threads=1)
    t1 = time.perf_counter()
    eng.encode_ids(x, threads=1)
    t2 = time.perf_counter()
    sweep()
    t3 = time.perf_counter()
    eng.encode_ids(x, threads=1)
    t4 = time.perf_counter()
    print(f"{name} {kind} slice {k}: fresh {ms(t0, t1):.1f} ms, again {ms(t1, t2):.1f}, "
          f"again after a 1 GB sweep {ms(t3, t4):.1f}")  # fmt: skip


# (2) the pieces slice 1 brings that slice 0 did not have
def pieces(text):
    s, e = eng.split(text)
    return [text[a:b] for a, b in zip(s.tolist(), e.tolist(), strict=True)]


def n_tokens(p):
    return len(tok.hf.encode(p, add_special_tokens=False).ids)


seen = set(pieces(slices[0]))
ps = pieces(slices[1])
fresh = [p for p in dict.fromkeys(ps) if p not in seen and len(p.encode()) > 1]
short = [p for p in fresh if len(p.encode()) <= rules.CACHE_MAX_BYTES]
multi = [p for p in short if n_tokens(p) > 1]
long_ = [p for p in fresh if len(p.encode()) > rules.CACHE_MAX_BYTES]
print(f"slice 1: {len(ps):,} pieces, {len(set(ps)):,} distinct, {len(fresh):,} unseen of 2+ bytes: "
      f"{len(short) - len(multi):,} single-token (short-piece map), {len(multi):,} multi-token "
      f"of <= {rules.CACHE_MAX_BYTES} bytes, {len(long_)} longer")  # fmt: skip


@numba.njit(cache=False, _nrt=False)
def engine_merges(u8, offs, bt, sym, rank, nxt, prv, heap, out):
    n = 0
    for i in range(offs.size - 1):
        n = merges_only(u8, offs[i], offs[i + 1], bt, sym, rank, nxt, prv, heap, out, n)
    return n


@numba.njit(cache=False, _nrt=False)
def linked_merges(u8, offs, bt, sym, rank, nxt, prv, heap, out):
    """The rank-array merges without shifting: merged-away positions stay, ranked NO_PAIR,
    neighbours by links, every scan over the piece's first length."""
    n = 0
    for i in range(offs.size - 1):
        b0, length = offs[i], offs[i + 1] - offs[i]
        for k in range(length):
            sym[k] = bt.byte_ids[u8[b0 + k]]
            nxt[k] = k + 1
            prv[k] = k - 1
        for k in range(length - 1):
            rank[k] = bt.byte_pairs[(int(u8[b0 + k]) << 8) | int(u8[b0 + k + 1])]
        rank[length - 1] = NO_PAIR
        while True:
            low = rank[0]
            for k in range(1, length - 1):
                low = min(low, rank[k] | k)
            if low >= NO_PAIR:
                break
            b = low & 0xFFFFFFFF
            j = nxt[b]
            sym[b] = merged_token(bt, rank[b])
            sym[j] = -1
            rank[j] = NO_PAIR
            nj = nxt[j]
            nxt[b] = nj
            if nj < length:
                prv[nj] = b
                rank[b] = pair_code(bt, sym[b], sym[nj])
            else:
                rank[b] = NO_PAIR
            if prv[b] >= 0:
                rank[prv[b]] = pair_code(bt, sym[prv[b]], sym[b])
        for k in range(length):
            if sym[k] >= 0:
                out[n] = sym[k]
                n += 1
    return n


def packed(lst):
    bs = [p.encode() for p in lst]
    offs = np.zeros(len(bs) + 1, np.int64)
    offs[1:] = np.cumsum([len(b) for b in bs])
    return np.frombuffer(b"".join(bs), np.uint8), offs


ws = [np.empty(1 << 16, np.int64) for _ in range(5)]
out, out2 = np.empty(1 << 20, np.int64), np.empty(1 << 20, np.int64)
for label, lst in ((f"multi-token <= {rules.CACHE_MAX_BYTES} B", multi), ("longer", long_)):
    u8, offs = packed(lst)
    n = engine_merges(u8, offs, eng.bpe, *ws, out)
    cold, hot = [], []
    for _ in range(5):
        sweep()
        t0 = time.perf_counter()
        engine_merges(u8, offs, eng.bpe, *ws, out)
        t1 = time.perf_counter()
        engine_merges(u8, offs, eng.bpe, *ws, out)
        t2 = time.perf_counter()
        cold.append(ms(t0, t1))
        hot.append(ms(t1, t2))
    print(f"merges of the {len(lst):,} {label} pieces ({u8.size:,} bytes, {n:,} tokens, "
          f"{u8.size - n:,} merges): {min(hot):.2f} ms hot "
          f"({1e6 * min(hot) / max(1, u8.size - n):.0f} ns a merge), {min(cold):.2f} ms after a "
          f"sweep")  # fmt: skip
    if lst is multi:
        m = linked_merges(u8, offs, eng.bpe, *ws, out2)
        assert m == n and (out2[:m] == out[:n]).all(), "linked merges differ"
        t = {engine_merges: [], linked_merges: []}
        for _ in range(15):  # alternated, hot: this VM's speed drifts within a minute
            for f in t:
                t0 = time.perf_counter()
                f(u8, offs, eng.bpe, *ws, out2)
                t[f].append(ms(t0, time.perf_counter()))
        a, b = (float(np.median(v)) for v in t.values())
        print(f"  alternated, hot, median of 15: the engine's merges {a:.2f} ms, without "
              f"shifting (linked positions; equal output) {b:.2f} ms")  # fmt: skip
