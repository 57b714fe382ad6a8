"""A prototype of the cl100k-pattern pre-tokenizer over class masks, for ASCII text (measured,
not built): how fast can a pre-tokenizer that jumps over runs with ``cttz`` go, exactly?

The pattern (llama3, cl100k): ``(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|
\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+``.  On ASCII, each piece is
decided by its first one or two bytes; the run it then takes (letters, punctuation, CR/LF,
whitespace) ends where the run's class mask first has a 0, found with ``cttz`` on 64-bit masks
made 32 bytes at a time by ``vector_masks.range_mask32`` (letters, digits, whitespace, CR/LF;
punctuation is the rest).  Digits go three at a time; the whitespace rules back off one
character before a non-space, as the look-ahead does.

Checked against the engine's own automaton (certified against the reference) on slices of
stdlib code, the ASCII bytes of a slice of pycountry's catalogs and random ASCII strings built
from the pattern's tricky characters; then both timed on the code slice (P50 of 15).
Usage: ``.venv/bin/python tools/engine-experiments/vector_pretok.py`` (from the repository root).
"""

import sys
import time

import numba
import numpy as np

sys.path.insert(0, "tools/engine-experiments")
import hit_floor as H
from vector_masks import cttz, range_mask32

from toktier.bench.engine_targets import corpora, slices
from toktier.textcheck import utf8_array

L_, N_, S_, R_ = 0, 1, 2, 3  # mask rows: letters, digits, whitespace, CR/LF


@numba.njit(nogil=True)
def class_masks(u8, masks):
    """``masks[c, w]``: bit j set when byte ``64 * w + j`` is of class c (bytes past the end
    are of none).  Made 32 bytes at a time; the tail byte by byte."""
    n = u8.size
    full = (n // 32) * 32
    for i in range(0, full, 32):
        w = i >> 6
        sh = i & 32
        up = range_mask32(u8, i, 65, 90) | range_mask32(u8, i, 97, 122)
        masks[L_, w] |= up << sh
        masks[N_, w] |= range_mask32(u8, i, 48, 57) << sh
        sp = range_mask32(u8, i, 9, 13) | range_mask32(u8, i, 32, 32)
        masks[S_, w] |= sp << sh
        masks[R_, w] |= (range_mask32(u8, i, 10, 10) | range_mask32(u8, i, 13, 13)) << sh
    for i in range(full, n):
        b = u8[i]
        bit = 1 << (i & 63)
        w = i >> 6
        if (65 <= b <= 90) or (97 <= b <= 122):
            masks[L_, w] |= bit
        elif 48 <= b <= 57:
            masks[N_, w] |= bit
        elif (9 <= b <= 13) or b == 32:
            masks[S_, w] |= bit
            if b == 10 or b == 13:
                masks[R_, w] |= bit


@numba.njit(nogil=True)
def run_end(m, i, n):
    """First position >= i whose bit in mask row ``m`` is 0 (or n)."""
    w = i >> 6
    x = ~m[w] >> (i & 63)
    if x != 0:
        e = i + cttz(x)
        return e if e < n else n
    w += 1
    nw = m.size
    while w < nw:
        x = ~m[w]
        if x != 0:
            e = (w << 6) + cttz(x)
            return e if e < n else n
        w += 1
    return n


@numba.njit(nogil=True)
def is_bit(m, i):
    return (m[i >> 6] >> (i & 63)) & 1


@numba.njit(nogil=True)
def lower(b):
    return b | 32 if 65 <= b <= 90 else b


@numba.njit(nogil=True)
def contraction(u8, i, n):
    """Length of a contraction at ``i`` (a ``'``), or 0."""
    if i + 1 >= n:
        return 0
    a = lower(u8[i + 1])
    if a == 115 or a == 116 or a == 109 or a == 100:  # s t m d
        return 2
    if i + 2 < n:
        b = lower(u8[i + 2])
        if (a == 114 and b == 101) or (a == 118 and b == 101) or (a == 108 and b == 108):
            return 3  # re ve ll
    return 0


@numba.njit(nogil=True)
def pretok_masks(u8, masks, ends):
    """Piece ends of an ASCII text under the cl100k pattern; returns their count."""
    n = u8.size
    lm, nm, sm, rm = masks[L_], masks[N_], masks[S_], masks[R_]
    k = 0
    i = 0
    while i < n:
        c = u8[i]
        if is_bit(lm, i):
            e = run_end(lm, i + 1, n)
        elif is_bit(nm, i):
            e = i + 1
            if e < n and is_bit(nm, e):
                e += 1
                if e < n and is_bit(nm, e):
                    e += 1
        elif c == 39 and contraction(u8, i, n) > 0:
            e = i + contraction(u8, i, n)
        elif c != 10 and c != 13 and i + 1 < n and is_bit(lm, i + 1):
            e = run_end(lm, i + 2, n)  # one non-letter, non-digit, non-CR/LF, then letters
        elif not is_bit(sm, i) or (c == 32 and i + 1 < n and not is_bit(sm, i + 1)
                                   and not is_bit(nm, i + 1)):  # fmt: skip
            # ` ?[^\s\p{L}\p{N}]+[\r\n]*` (a space here is followed by punctuation: a letter
            # after it was taken above)
            j = i + 1 if c == 32 else i
            e = j + 1
            while e < n and not (is_bit(lm, e) or is_bit(nm, e) or is_bit(sm, e)):
                e += 1
            if e < n and is_bit(rm, e):
                e = run_end(rm, e, n)
        else:  # whitespace
            w = run_end(sm, i, n)
            last_nl = -1
            q = w - 1
            while q >= i:
                if is_bit(rm, q):
                    last_nl = q
                    break
                q -= 1
            if last_nl >= 0:  # \s*[\r\n]+ : up to the run's last CR/LF
                e = last_nl + 1
            elif w < n and w - i >= 2:  # \s+(?!\S): leave the last one for what follows
                e = w - 1
            else:
                e = w
        ends[k] = e
        k += 1
        i = e
    return k


def automaton_ends(eng, text: str) -> np.ndarray:
    _, ends, m = H.piece_ends(eng, utf8_array(text))
    return ends[:m].copy()


def mask_ends(text: bytes) -> tuple[np.ndarray, np.ndarray]:
    u8 = np.frombuffer(text, np.uint8).copy()
    masks = np.zeros((4, u8.size // 64 + 2), np.int64)
    class_masks(u8, masks)
    ends = np.empty(u8.size + 1, np.int64)
    k = pretok_masks(u8, masks, ends)
    return ends[:k].copy(), u8


def check(eng, text: str, label: str) -> int:
    got, _ = mask_ends(text.encode("ascii"))
    want = automaton_ends(eng, text)
    if not np.array_equal(got, want):
        bad = int(np.flatnonzero(got[: min(got.size, want.size)] != want[: min(got.size, want.size)])[0]) if min(got.size, want.size) else 0
        at = int(want[bad - 1]) if bad else 0
        raise SystemExit(f"{label}: piece {bad} differs near {text[max(0, at - 10) : at + 30]!r}: "
                         f"masks {got[bad:bad + 4].tolist()}, automaton {want[bad:bad + 4].tolist()}")  # fmt: skip
    return got.size


def main() -> None:
    eng, _ = H.warm_slice("llama3", "code")
    code = slices(corpora()["code"], 1_000_000, 8)[3].encode("ascii", "ignore").decode()
    pieces = check(eng, code, "code")
    catalogs = slices(corpora()["multilingual"], 1_000_000, 8)[3].encode("ascii", "ignore")
    pieces_m = check(eng, catalogs.decode(), "catalogs' ASCII bytes")
    rng = np.random.default_rng(0)
    alphabet = [*"aZ09 '\t\r\n.(_-sStTrRevlLdDmM", "  ", "\r\n", "'s", "'RE", "'ll"]
    fuzz = 0
    for _ in range(20_000):
        s = "".join(rng.choice(alphabet, size=int(rng.integers(1, 40))))
        check(eng, s, "fuzz")
        fuzz += 1
    print(f"equal to the automaton: 1M code ({pieces:,} pieces), the ASCII bytes of 1M of the "
          f"catalogs ({pieces_m:,} pieces) and {fuzz:,} random strings")
    u8 = np.frombuffer(code.encode(), np.uint8).copy()
    masks = np.zeros((4, u8.size // 64 + 2), np.int64)
    ends = np.empty(u8.size + 1, np.int64)

    def masks_and_pieces():
        masks.fill(0)
        class_masks(u8, masks)
        return pretok_masks(u8, masks, ends)

    ua = utf8_array(code)
    p = eng.prepare(ua)
    t, bt = eng.tables, eng.bpe
    aends = np.empty(p.n + 1, np.int64)
    rows = (("automaton (the engine's)", lambda: H.pretokenize(p.cps, p.fl, t.fold, p.n,
                                                               t.family_code, bt, aends)),
            ("class masks alone", lambda: class_masks(u8, masks)),
            ("masks + pieces", masks_and_pieces))  # fmt: skip
    for label, fn in rows:
        fn()
        out = []
        for _ in range(15):
            t0 = time.perf_counter_ns()
            fn()
            out.append((time.perf_counter_ns() - t0) / 1e6)
        ms = float(np.median(out))
        print(f"  {label:26s} {ms:6.3f} ms  {ms * 1e6 / u8.size:5.2f} ns/char")


if __name__ == "__main__":
    main()
