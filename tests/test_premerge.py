"""Byte pairs merged before the merge loop (``tables.build_premerge``, ``rules.premerged_start``).

The up-front merges must never change a piece's tokens: every piece gives the same tokens
with them as without them (hypothesis, on UTF-8 of every script and on raw bytes), and every
table row holds exactly the conditions its proof needs, recomputed here from the tokenizer
file's merge list by a separate, plain implementation.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import toktier
from toktier.convert import CHAR_TO_BYTE
from toktier.engine import cpu
from toktier.engine import rules as R
from toktier.engine.cpu import engine_for

BYTE_BPE = ["llama3", "deepseek-v4", "qwen3", "qwen3.6", "gpt-oss", "cl100k", "tekken"]
_merges_only = cpu.RULES.merges_only


@numba.njit(cache=False)
def _merge_pieces(u8, bounds, bt, out, offs):
    """Each piece ``u8[bounds[p]:bounds[p + 1]]`` through ``merges_only``; ``offs`` its tokens' starts."""
    sym = np.empty(u8.size + 1, np.int64)
    rank = np.empty(u8.size + 1, np.int64)
    nxt = np.empty(u8.size + 1, np.int64)
    prv = np.empty(u8.size + 1, np.int64)
    heap = np.empty(3 * u8.size + 3, np.int64)
    n = 0
    for p in range(bounds.size - 1):
        offs[p] = n
        n = _merges_only(u8, bounds[p], bounds[p + 1], bt, sym, rank, nxt, prv, heap, out, n)
    offs[bounds.size - 1] = n
    return n


def _both_ways(bt, pieces: list[bytes]):
    """(tokens with up-front merges, tokens without) of each piece."""
    u8 = np.frombuffer(b"".join(pieces), np.uint8)
    bounds = np.cumsum([0] + [len(p) for p in pieces]).astype(np.int64)
    results = []
    for tables in (bt, bt._replace(pm_index=R.premerge_off()[0], pm_rows=R.premerge_off()[1])):
        out = np.empty(u8.size + 1, np.int64)
        offs = np.empty(bounds.size, np.int64)
        _merge_pieces(u8, bounds, tables, out, offs)
        results.append([out[offs[p] : offs[p + 1]].tolist() for p in range(len(pieces))])
    return results


_merge_small = cpu.RULES.merge_small
_merge_large = cpu.RULES.merge_large


@numba.njit(cache=False)
def _merge_both(u8, bt):
    """The tokens of the piece ``u8`` from the heap loop and from the rank-array loop."""
    n = u8.size
    out = []
    for large in (True, False):
        sym = np.empty(n + 1, np.int64)
        rank = np.empty(n + 1, np.int64)
        nxt = np.empty(n + 1, np.int64)
        prv = np.empty(n + 1, np.int64)
        heap = np.empty(3 * n + 3, np.int64)
        for k in range(n):
            sym[k] = bt.byte_ids[u8[k]]
        for k in range(n - 1):
            rank[k] = bt.byte_pairs[(int(u8[k]) << 8) | int(u8[k + 1])]
        if large:
            m = _merge_large(sym, rank, nxt, prv, heap, n, bt)
        else:
            m = _merge_small(sym, rank, n, bt)
        out.append(sym[:m].copy())
    return out[0], out[1]


_long_pieces = st.one_of(
    st.text(st.characters(codec="utf-8", categories=("L", "M", "N", "P", "S", "Zs")),
            min_size=9, max_size=120).map(lambda s: s.encode("utf-8")),
    st.binary(min_size=25, max_size=300),
    st.builds(lambda w, k: (w * k)[:400], st.binary(min_size=1, max_size=6),
              st.integers(5, 120)),  # repeats: many equal ranks, many stale heap entries
).filter(lambda b: len(b) > R.SMALL_PIECE)


@given(piece=_long_pieces)
def test_heap_merges_equal_the_rank_array_merges(engine, piece):
    """``merge_large`` (a piece over SMALL_PIECE bytes) gives exactly ``merge_small``'s
    tokens: lowest rank first, leftmost among equals, stale heap entries skipped."""
    heap_ids, scan_ids = _merge_both(np.frombuffer(piece, np.uint8), engine.bpe)
    assert heap_ids.tolist() == scan_ids.tolist()


@pytest.fixture(scope="module", params=BYTE_BPE)
def engine(request):
    return engine_for(toktier.load(request.param))


def test_the_engines_merge_pairs_up_front(engine):
    bt = engine.bpe
    assert bt.pm_index.size == 65536 and bt.pm_rows.shape[1] == 9
    assert (bt.pm_index >= 0).sum() == bt.pm_rows.shape[0] > 100  # thousands in practice


_script_text = st.text(
    st.characters(codec="utf-8", categories=("L", "M", "N", "P", "S", "Zs")), max_size=40
)
_pieces = st.lists(
    st.one_of(_script_text.map(lambda s: s.encode("utf-8")), st.binary(max_size=40)),
    min_size=1,
    max_size=30,
).map(lambda ps: [p for p in ps if p]).filter(bool)


@given(pieces=_pieces)
def test_up_front_merges_change_no_piece(engine, pieces):
    with_pm, without = _both_ways(engine.bpe, pieces)
    assert with_pm == without


def test_up_front_merges_change_no_piece_of_any_row(engine):
    """Every row's pair between every kind of neighbour byte: the masks' edges exactly."""
    bt = engine.bpe
    rows = np.flatnonzero(bt.pm_index >= 0)
    rng = np.random.default_rng(0)
    pieces = []
    for pair in rng.choice(rows, size=min(rows.size, 300), replace=False):
        a, b = int(pair) >> 8, int(pair) & 255
        for c in rng.choice(256, size=24, replace=False):
            d = int(rng.integers(256))
            pieces += [bytes([c, a, b]), bytes([a, b, d]), bytes([c, a, b, d]), bytes([a, b])]
    with_pm, without = _both_ways(bt, pieces)
    assert with_pm == without


BYTE_TO_CHAR = {b: c for c, b in CHAR_TO_BYTE.items()}


def _plain_rows(tok) -> dict[int, tuple[int, set[int], set[int]]]:
    """The rows as the proof states them, straight from the file's merge list: pair
    a << 8 | b -> (merged token, bytes before that forbid it, bytes after that forbid it)."""
    model = tok.document()["model"]
    vocab = model["vocab"]
    raw = {
        i: bytes(CHAR_TO_BYTE[c] for c in t)
        for t, i in vocab.items()
        if all(c in CHAR_TO_BYTE for c in t)
    }
    rank: dict[tuple[int, int], int] = {}
    for r, m in enumerate(model["merges"]):
        x, y = m.split(" ", 1) if isinstance(m, str) else m
        rank.setdefault((vocab[x], vocab[y]), r)
    lowest: dict[int, int] = {}
    as_right: dict[int, list[tuple[int, int]]] = {}
    as_left: dict[int, list[tuple[int, int]]] = {}
    for (x, y), r in rank.items():
        lowest[x] = min(lowest.get(x, r), r)
        lowest[y] = min(lowest.get(y, r), r)
        as_right.setdefault(y, []).append((x, r))
        as_left.setdefault(x, []).append((y, r))
    byte_tok = {raw[i][0]: i for i in raw if len(raw[i]) == 1}
    rows = {}
    for a in range(256):
        for b in range(256):
            ta, tb = byte_tok[a], byte_tok[b]
            r = rank.get((ta, tb))
            if a == b or r is None:
                continue
            t = vocab["".join(BYTE_TO_CHAR[x] for x in raw[ta] + raw[tb])]
            if lowest.get(t, r + 1) <= r:
                continue
            before = {
                raw[x][-1] for x, rx in as_right.get(ta, []) if rx < r and x in raw and raw[x]
            }
            after = {raw[z][0] for z, rz in as_left.get(tb, []) if rz < r and z in raw and raw[z]}
            rows[(a << 8) | b] = (t, before, after)
    return rows


def _mask_set(words) -> set[int]:
    return {c for c in range(256) if (int(words[c >> 6]) >> (c & 63)) & 1}


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_rows_hold_the_proofs_conditions(name):
    tok = toktier.load(name)
    bt = engine_for(tok).bpe
    plain = _plain_rows(tok)
    table = {int(p): int(bt.pm_index[p]) for p in np.flatnonzero(bt.pm_index >= 0)}
    assert set(table) == set(plain)
    for pair, i in table.items():
        row = bt.pm_rows[i]
        t, before, after = plain[pair]
        assert int(row[8]) == t
        assert _mask_set(row[0:4]) == before and _mask_set(row[4:8]) == after, hex(pair)
