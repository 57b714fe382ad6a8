"""The engine's 63-bit hashes, compiled, equal their formula in Python integers.

numba emits signed multiplies with LLVM's ``nsw`` flag (signed overflow is undefined), so
where LLVM can prove a product's operands non-negative it may drop the ``& M63`` that
keeps a hash in 63 bits: the compiled value would then differ from the formula a table
builder in Python computes.  Each hash is checked here on operands of the ranges the
engine gives it (piece words of 7 bytes, lengths, check-word columns)."""

from __future__ import annotations

import numba
import numpy as np

from toktier.engine import cpu
from toktier.engine.rules import CACHE_COLS, CONTENT, M63

_mix = cpu.RULES.mix
_piece_hash = cpu.RULES.piece_hash
_check_at = cpu.RULES.check_at


@numba.njit(cache=False)
def _compiled(hs, xs, words, rows, out_mix, out_piece, out_check):
    for i in range(hs.size):
        out_mix[i] = _mix(hs[i], xs[i])
        out_piece[i] = _piece_hash(words[i, 0], words[i, 1], words[i, 2])
        out_check[i] = _check_at(rows, i, CACHE_COLS, rows[i, 0])


def _mix_py(h: int, x: int) -> int:
    h = ((h ^ x) * 0x100000001B3) & M63
    return h ^ (h >> 29)


def _row_check_py(row) -> int:
    h = 0x1F3D5B79A2C4E6F7
    for k in range(CACHE_COLS - 1):
        w = ((0x1E3779B97F4A7C15 + k * 0x232BE59BD9B4E019) & M63) | 1
        x = int(row[k]) & CONTENT if k == 0 else int(row[k])  # the header's content bits
        h = (h + ((x * w) & M63)) & M63
    return h


def test_compiled_hashes_equal_their_formula():
    rng = np.random.default_rng(7)
    n = 20000
    hs = rng.integers(0, M63, n, dtype=np.int64)
    xs = rng.integers(0, 1 << 56, n, dtype=np.int64)  # piece words: 7 bytes each
    words = np.stack([rng.integers(1, 1 << 24, n), rng.integers(0, 1 << 56, n),
                      rng.integers(0, 1 << 56, n)], axis=1).astype(np.int64)  # fmt: skip
    rows = rng.integers(-(1 << 62), 1 << 62, (n, CACHE_COLS), dtype=np.int64)
    out = [np.empty(n, np.int64) for _ in range(3)]
    _compiled(hs, xs, words, rows, *out)
    want_mix = [_mix_py(int(h), int(x)) for h, x in zip(hs, xs, strict=True)]
    want_piece = [
        _mix_py(_mix_py(_mix_py(0x27D4EB2F165667C5, int(a)), int(b)), int(c)) for a, b, c in words
    ]
    want_check = [_row_check_py(r) for r in rows]
    assert out[0].tolist() == want_mix
    assert out[1].tolist() == want_piece
    assert out[2].tolist() == want_check
    assert (out[0] >= 0).all() and (out[1] >= 0).all() and (out[2] >= 0).all()


def test_piece_keys_from_word_loads_equal_the_byte_by_byte_keys():
    """On the CPU a short piece's key words come from two unaligned 8-byte loads masked to
    its length (``jit.load_word``); the GPU packs them byte by byte.  Both give the same
    (lw, w0, w1) for every length 1..16 at every offset, the array's last bytes included
    (where the loads would read past the end, the byte loop runs instead), and the
    keys equal their formula in Python integers."""
    rng = np.random.default_rng(9)
    buf = rng.integers(0, 256, 600, dtype=np.uint8)
    buf[:40] = 0xFF  # high bytes: a sign bit in any word would show
    words, bytes_ = cpu.RULES.piece_words, cpu.RULES.piece_words_bytes
    checked = 0
    for b0 in range(buf.size):
        for length in range(1, 17):
            b1 = b0 + length
            if b1 > buf.size:
                break
            got = words(buf, b0, b1)
            assert got == bytes_(buf, b0, b1), (b0, length)
            data = bytes(buf[b0:b1])
            w0 = int.from_bytes(data[:7], "little")
            w1 = int.from_bytes(data[7:14], "little")
            lw = length | (int.from_bytes(data[14:], "little") << 8 if length > 14 else 0)
            assert got == (lw, w0, w1), (b0, length)
            checked += 1
    assert checked > 9000


def test_long_piece_words_from_word_loads_equal_their_formula():
    """A long piece's (17..128 bytes) words and hash: on the CPU one masked unaligned load a
    word (``rules.long_words``), the byte loop where the last load would pass the array's
    end.  Every length at every offset of a random array (high bytes first: a sign bit in
    any word would show) gives the formula's 7-byte little-endian words and its hash in
    Python integers, on both paths."""
    rng = np.random.default_rng(11)
    buf = rng.integers(0, 256, 400, dtype=np.uint8)
    buf[:64] = 0xFF
    long_words = cpu.RULES.long_words
    w = np.zeros(32, np.int64)
    checked = tail = 0
    for b0 in range(buf.size):
        for length in range(17, 129):
            b1 = b0 + length
            if b1 > buf.size:
                break
            w.fill(-1)  # stale scratch must not leak into any word
            h = long_words(buf, b0, b1, w)
            data = bytes(buf[b0:b1])
            want = [int.from_bytes(data[k : k + 7], "little") for k in range(0, length, 7)]
            assert w[: len(want)].tolist() == want, (b0, length)
            hp = _mix_py(0x27D4EB2F165667C5, length)
            for x in want:
                hp = _mix_py(hp, x)
            assert h == hp, (b0, length)
            checked += 1
            tail += b0 + 7 * len(want) + 1 > buf.size  # the byte loop's side
    assert checked > 20000 and tail > 300
