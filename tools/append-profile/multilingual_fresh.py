"""Where a multilingual append's compiled call goes: text the engine meets for the first time.

Experiment 10's 48K cells (60 sessions, four appends each after an untimed one): for each
append, ``Planner.first_window_call`` is made twice, first unapplied (the window's pieces met
for the first time: the real cost) and then for real (the same window again: every piece in
the piece caches), both timed.  Then, from the reference's pre-tokenizer, the append's pieces
the engine has not met (not in the stream's 48K warm-up, the session's seed or an earlier
append) and the ones of those that are no single token (what must be merged), and the engine's
own ``merges_only`` over the never-met pieces of 20 sessions in a compiled loop with its tables
hot (so: the merges' own cost, not their memory).
Usage: ``.venv/bin/python tools/append-profile/multilingual_fresh.py [NAME [CORPUS]]``.
"""

import sys
import time

import numba
import numpy as np
from session_loop import protocol_tier

from toktier.bench import continuation as C
from toktier.engine import cpu


def first_and_again(tier, cells) -> np.ndarray:
    """Per append: (first-meeting us, again us, window bytes, delta bytes per char)."""
    pl = tier._planner
    call = pl.first_window_call
    rec = []

    def both(state, u8, ws, new_len, ctx, apply_now):
        t0 = time.perf_counter_ns()
        call(state, u8, ws, new_len, ctx, False)
        t1 = time.perf_counter_ns()
        r = call(state, u8, ws, new_len, ctx, apply_now)
        t2 = time.perf_counter_ns()
        rec.append(((t1 - t0) / 1e3, (t2 - t1) / 1e3, u8.size))
        return r

    pl.first_window_call = both
    rows = []
    try:
        for prefix, deltas in cells:
            tier.close("x")
            tier.encode(prefix, session="x")
            tier.append("x", deltas[0])
            for d in deltas[1:]:
                rec.clear()
                tier.append("x", d)
                if rec:
                    rows.append((*rec[0], len(d.encode()) / len(d)))
    finally:
        pl.first_window_call = call
    return np.array(rows)


def fresh_pieces(tok, stream, cells):
    """(per-append counts [pieces, never met, never met and not one token, their bytes],
    the never-met multi-token pieces' bytes of the first 20 sessions)."""
    split = tok.hf.pre_tokenizer.pre_tokenize_str
    vocab = tok.hf.get_vocab()
    byte_of = byte_level_bytes()
    seen0 = {p for p, _ in split(stream[:48000])}
    counts, pieces = [], []
    for s, (prefix, deltas) in enumerate(cells):
        seen = seen0 | {p for p, _ in split(prefix)} | {p for p, _ in split(deltas[0])}
        for d in deltas[1:]:
            ps = [p for p, _ in split(d)]
            new = [p for p in ps if p not in seen]
            merged = [p for p in new if p not in vocab]
            counts.append((len(ps), len(new), len(merged), sum(len(p) for p in merged)))
            if s < 20:
                pieces += [bytes(byte_of[c] for c in p) for p in set(merged)]
            seen |= set(ps)
    return np.array(counts), pieces


def byte_level_bytes() -> dict:
    """The byte-level alphabet's character -> its byte (GPT-2's table)."""
    bs = [*range(33, 127), *range(161, 173), *range(174, 256)]
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=True)}


merges_only = cpu.RULES.merges_only


@numba.njit(nogil=True, _nrt=False)
def _merge_all(buf, offs, bt, sym, rank, nxt, prv, heap, out):
    tot = 0
    for i in range(offs.size - 1):
        tot += merges_only(buf, offs[i], offs[i + 1], bt, sym, rank, nxt, prv, heap, out, 0)
    return tot


def merge_cost(bt, pieces) -> tuple[float, int]:
    """ns per piece of ``merges_only`` over ``pieces``, tables hot (best of 20), and tokens."""
    buf = np.frombuffer(b"".join(pieces) + bytes(16), dtype=np.uint8)
    offs = np.cumsum([0] + [len(p) for p in pieces]).astype(np.int64)
    w = [np.empty(4096, np.int64) for _ in range(6)]
    ntok = _merge_all(buf, offs, bt, *w)
    best = min(_timed(lambda: _merge_all(buf, offs, bt, *w)) for _ in range(20))
    return best / len(pieces), ntok


def _timed(fn) -> float:
    t0 = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - t0


def main(name: str, corp: str) -> None:
    streams, tier = protocol_tier(name)
    tails = C.continuation_tails([48000], 1100, 5, 60)
    cells = C.session_cells(streams[corp], 48000, 1100, 5, 60, tails[48000])
    a = first_and_again(tier, cells)
    print(f"{name} {corp}, 48K: {len(a)} appends; compiled window call P50 us: first meeting "
          f"{np.median(a[:, 0]):.1f}, again {np.median(a[:, 1]):.1f}; window "
          f"{np.median(a[:, 2]):.0f} bytes, delta {np.median(a[:, 3]):.2f} bytes a character")  # fmt: skip
    counts, pieces = fresh_pieces(tier.tokenizer, streams[corp], cells)
    med = np.median(counts, axis=0)
    print(f"  per append (P50): {med[0]:.0f} pieces, {med[1]:.0f} never met, {med[2]:.0f} of them "
          f"not one token ({med[3]:.0f} bytes)")  # fmt: skip
    ns, ntok = merge_cost(tier.engine.bpe, pieces)
    nbytes = sum(len(p) for p in pieces)
    print(f"  merges_only, tables hot, over the {len(pieces):,} such pieces of 20 sessions "
          f"({nbytes:,} bytes -> {ntok:,} tokens): {ns:.0f} ns a piece, {ns * len(pieces) / nbytes:.1f} "
          f"ns a byte; x {med[2]:.0f} = {ns * med[2] / 1e3:.1f} us an append")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "llama3",
         sys.argv[2] if len(sys.argv) > 2 else "multilingual")  # fmt: skip
