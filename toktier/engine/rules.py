"""The engine's rules, written once as plain functions over integer arrays.

``make(jit)`` returns the rule functions compiled by ``jit``: ``numba.njit`` for
the CPU engine, ``numba.cuda.jit(device=True)`` for GPU kernels (and the CUDA
simulator in CI).  Nothing here allocates, raises or touches Python objects, so
the same source compiles for both targets.

Inputs shared by all rules:

- ``cps``: uint32 code points of the text; ``fl``: uint16 class bits per
  character (``families.classes`` bits gathered by code point, probed from the
  reference); ``fold``: uint8 per code point, the ASCII letter a character
  matches under the reference regex's case-insensitive mode (0 if none).
- a segment ``[lo, hi)``: an added-token literal (or a stage cut) ends the
  regex's input, exactly as the reference splits before pre-tokenizing.

Pre-tokenization (``*_next``): from a piece start ``i`` each family's matcher
returns the end of the piece the reference regex matches there, trying the
pattern's alternatives in order with the backtracking the regex engine would do
(derivations in the comments; ``families.patterns`` holds the patterns).  Each
alternative consumes maximal class runs, so a piece is a run or a run plus one
leading character: the run decomposition of the paper, evaluated left to right.

BPE (``bpe_piece``): byte-level merges by lowest rank, leftmost first; an
O(L^2) rank-array loop for short pieces and an O(L log L) heap for long ones.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Class bits (must equal families.classes.CLASS_BITS).
B_L = 1
B_N = 2
B_M = 4
B_LU = 8
B_LT = 16
B_LL = 32
B_LM = 64
B_LO = 128
B_P = 256
B_S = 512
B_WS = 1024
NFC_UNSAFE = 1 << 12  # must equal families.classes.NFC_UNSAFE (NFC may not cut here)

# Family codes.
F_CL100K = 0  # \p{N}{1,3}
F_QWEN = 1  # \p{N}
F_QWEN_LM = 2  # \p{N}, marks inside letter runs
F_O200K = 3
F_DEEPSEEK = 4
F_TEKKEN = 5  # o200k without contractions, \p{N}
F_SENTENCEPIECE = 6  # no pre-tokenizer: rules.sp_* (SentencePiece BPE with byte fallback)

# SentencePiece character classes (families.stability's SPACE / OTHER / BYTES) and "▁".
SP_OTHER = 0
SP_SPACE = 1
SP_BYTES = 2
METASPACE = 0x2581

EMPTY_KEY = -1
CACHE_SLOTS = 524288  # short-piece cache rows on the CPU, in 2-way sets (any power of two >= 2;
# 262,144 lost 6.5% of the multi-token short pieces of 4.4M multilingual characters to set
# conflicts on a second pass, 2.3% at this size: results/runs/engine-ab/cache-sets.txt)
CACHE_MAX_BYTES = 16  # pieces up to this long are cached (two packed words)
# Keys are a piece's exact bytes packed 7 to a word, so every word (and every hash, kept to
# 63 bits) is the same non-negative int64 on the CPU and under the CUDA simulator's Python
# ints.  A short piece (<= 16 bytes) is (lw, w0, w1): lw = length | bytes 14..15 << 8.
CACHE_TOKENS = 7  # a short-cache row holds pieces of up to this many tokens
CACHE_COLS = 8  # one 64-byte row: header, w0, w1, ids packed two per word (4 words), check
# header = lw | token count << 24 | (byte length of token k) - 1 << (28 + 4k); ids < 2**31
LONG_MAX_BYTES = 128  # pieces of 17..128 bytes go to the long-piece cache
LONG_TOKENS = 16
LONG_WORDS = 19  # ceil(128 / 7)
LONG_LEN_WORDS = 3  # token byte lengths, 7 per word
LONG_COLS = 40  # header, bytes[LONG_WORDS], token lengths[LONG_LEN_WORDS], ids[16], check
LONG_SLOTS = 65536  # long-piece cache rows on the CPU, in 2-way sets (any power of two >= 2;
# 32,768 direct-mapped rows lost 29% of the long pieces of 4.4M multilingual characters to
# collisions on a second pass, 32,768 sets of two 7.9% -- and 65,536 sets 2.3%, but no faster
# in a timed A/B: results/runs/engine-ab/cache-sets.txt)
# Every cache row ends in a check word over the rest: a row whose check does not match
# (never written, torn, or corrupted) is a miss, so no row can change the output.
# The caches are shared by every thread of an engine; each row is its own seqlock.  Its
# header's bits 56..62 count its writes: odd while a writer holds the row.  A writer
# takes the row by compare-and-swap (or skips the store), writes, and publishes the
# header with the count two higher; a reader that found an even count re-reads the
# header after using the row and discards what it read if the header changed.  So a
# row is used only when no write overlapped the read (and its check word holds).
SEQ_SHIFT = 56
SEQ_BIT = 1 << SEQ_SHIFT  # the count's low bit: set while a writer holds the row
CONTENT = SEQ_BIT - 1  # a header's content bits (the check word covers only these)
SHORT_COLS = 4  # short-piece map row: lw (0: empty), w0, w1, token id
M63 = (1 << 63) - 1
SMALL_PIECE = 24  # bytes: at or below, the rank-array loop beats the heap
PRIO_GROUP_BITS = 9  # must equal tables.PRIO_GROUP_BITS
NO_RANK = (1 << 31) - 1
NO_PAIR = NO_RANK << 32  # ``pair_code`` of a pair with no merge (orders after every real code)


class BpeTables(NamedTuple):
    """Everything byte-level BPE reads, passed as one argument (``cpu.CpuEngine.bpe``)."""

    byte_ids: np.ndarray  # int64[256]: the token of each single byte
    merges: np.ndarray  # int64[cap]: (left << 18 | right) << 27 | priority (tables.build_merge_table)
    merged: np.ndarray  # int32[n_merges]: the token the merge of each rank makes (not direct)
    pair_filter: np.ndarray  # int64 bit set: a 0 bit means "no such merge" (tables.build_pair_filter)
    byte_pairs: np.ndarray  # int64[65536]: pair_code of the tokens of bytes (a, b) at a << 8 | b
    vkeys: np.ndarray  # vocabulary hash table (ignore_merges): hashes
    vids: np.ndarray  # ... and ids, -1 empty
    pool: np.ndarray  # uint8: every token's bytes
    pool_off: np.ndarray  # int64[n_ids + 1]
    ignore_merges: bool
    nbytes: np.ndarray  # int64: byte length of each token
    smap: np.ndarray  # the read-only short-piece map (cpu.build_short_map)
    # The pre-tokenizer as an automaton (``pretok_dfa``), read by ``pretokenize_range``
    # in the piece loop: uint8 class per code point, the transition table and the table of
    # two characters a read (int16); one-element arrays where it is off (other families; the
    # GPU, certified with the family matchers).
    pre_classes: np.ndarray
    pre_table: np.ndarray
    pre_pairs: np.ndarray
    # Byte pairs merged before the merge loop where the tables prove BPE would merge them
    # first (``tables.build_premerge``): int64[65536] row of each pair (a << 8 | b) or -1,
    # and int64[rows, 9] (the bytes before / after that forbid it, two 256-bit masks; the
    # merged token).  One-element arrays where it is off (the GPU, SentencePiece).
    pm_index: np.ndarray
    pm_rows: np.ndarray
    direct: bool = False  # priorities are merged id << PRIO_GROUP_BITS | g (tables.direct_priorities)
    # An all-ASCII range's pre-tokenizer: the bit-parallel one (``ascii_pretok``) of the cl100k
    # lineage, o200k or tekken -- the digits of a piece (3 or 1) | the variant << 2 --, or 0
    # for the automaton (``ascii_pretok.ascii_mode``).
    ascii_pre: int = 0


def premerge_off() -> tuple[np.ndarray, np.ndarray]:
    """``BpeTables.pm_index`` / ``pm_rows`` for tables that merge no pair up front."""
    return np.full(1, -1, np.int64), np.zeros((1, 9), np.int64)


class SpTables(NamedTuple):
    """What the SentencePiece rules read besides the merges (``BpeTables``)."""

    char_ids: np.ndarray  # int64[max code point + 1]: id of the one-character entry, -1 none
    byte_tok: np.ndarray  # int64[256]: id of <0xXX>
    nchars: np.ndarray  # int64[n_ids]: a token's length in normalized characters
    ones: np.ndarray  # int64[n_ids] of 1 (the piece cache's per-token byte lengths: unused)
    space_id: int  # id of "▁"
    bigrams: np.ndarray  # int64 hash set of (a << 21 | b): characters adjacent in some entry
    ascii_pairs: np.ndarray  # int64[256]: the same for two ASCII characters, bit a << 7 | b


ASCII_PRETOK_MIN = 16  # characters: below this an ASCII range keeps the automaton (few steps)
ASCII_DEEPSEEK = 3  # ``ascii_pretok.DEEPSEEK``: its variant, which takes ASCII ranges of any length
PREFETCH_AHEAD = 8  # pieces: how far ahead the piece loop asks for its table rows (rules.encode_range)
RING_SLOTS = 16  # keys kept for the pieces in between (a power of two > PREFETCH_AHEAD)
RING_WORDS = 4 * RING_SLOTS  # an encode_range ring: (lw, w0, w1, hash) per slot
# A key must still be in its slot when its piece is reached: a slot reused earlier would hand
# the piece another piece's key, and the lookups would answer for that piece.
if RING_SLOTS & (RING_SLOTS - 1) or RING_SLOTS <= PREFETCH_AHEAD:
    raise ValueError("RING_SLOTS must be a power of two above PREFETCH_AHEAD")


def make(jit, prefetch_row=None, atomics=None, load_word=None, jit_inline=None,
         ascii_pretok=None, ascii_scratch=None, cps_pretok=None, cps_scratch=None):
    """Compile the rules with ``jit``; returns a namespace object of compiled functions.

    ``jit_inline`` (default ``jit``) compiles ``merges_only`` and ``merge_small``, which a
    fresh piece calls once each, to be inlined into their callers (numba's
    ``inline="always"`` on the CPU): as real calls each copied the whole ``BpeTables``
    tuple onto the stack, and the merges of 54K distinct pieces took ~30% longer
    (``tools/engine-experiments/merge_calls.py``).

    ``prefetch_row(array, row)`` is a memory hint (``jit.prefetch_row`` on the CPU);
    without one (GPU, simulator) it compiles to nothing.  Hints never change results.
    ``load_word(u8, i)``: the 8 bytes from ``i`` as one little-endian int64
    (``jit.load_word`` on the CPU); without it, piece keys are packed byte by byte.
    ``atomics``: the accesses of piece-cache rows (``jit.Atomics`` on the CPU, where
    threads share the caches); without it, plain accesses (the GPU's ranges give
    each thread its own caches).
    ``ascii_pretok`` / ``ascii_scratch``: the bit-parallel pre-tokenizer of an all-ASCII
    range and its scratch size (``ascii_pretok.pretokenize_ascii``, ``scratch_words``; the
    CPU's, used where ``BpeTables.ascii_pre`` says so); without them, the automaton.
    ``cps_pretok`` / ``cps_scratch``: deepseek's bit-parallel pre-tokenizer over decoded
    text and its scratch size (``ascii_pretok.pretokenize_deepseek_cps``, the CPU's, used
    where ``BpeTables.ascii_pre`` is deepseek's); without them, the family matcher.
    """
    if jit_inline is None:
        jit_inline = jit
    if ascii_pretok is None:

        @jit
        def ascii_pretok(u8, lo, hi, fold, mode, scratch, ends, n):
            return n

        @jit
        def ascii_scratch(nchars):
            return 1 << 62

    if cps_pretok is None:

        @jit
        def cps_pretok(cps, fl, lo, hi, scratch, ends, n):
            return n

        @jit
        def cps_scratch(nchars):
            return 1 << 62
    if prefetch_row is None:

        @jit
        def prefetch_row(arr, row):
            pass

    if atomics is None:

        @jit
        def load_relaxed(arr, r, c):
            return arr[r, c]

        @jit
        def store_relaxed(arr, r, c, v):
            arr[r, c] = v

        @jit
        def cas_acquire(arr, r, c, expected, new):
            if arr[r, c] != expected:
                return False
            arr[r, c] = new
            return True

        @jit
        def fence_acquire():
            pass

        load_acquire = load_relaxed
        store_release = store_relaxed
        fence_release = fence_acquire
    else:
        load_relaxed, load_acquire = atomics.load_relaxed, atomics.load_acquire
        store_relaxed, store_release = atomics.store_relaxed, atomics.store_release
        cas_acquire = atomics.cas_acquire
        fence_acquire, fence_release = atomics.fence_acquire, atomics.fence_release

    # --- small helpers ----------------------------------------------------------------
    @jit
    def is_crlf(c):
        return c == 10 or c == 13

    @jit
    def run_with(fl, i, hi, mask):
        """End of the run of characters having any bit of ``mask``, from ``i``."""
        while i < hi and (fl[i] & mask) != 0:
            i += 1
        return i

    @jit
    def run_without(fl, i, hi, mask):
        """End of the run of characters having no bit of ``mask``, from ``i``."""
        while i < hi and (fl[i] & mask) == 0:
            i += 1
        return i

    @jit
    def crlf_tail(cps, j, hi, slash):
        """``[\\r\\n]*`` (or ``[\\r\\n/]*`` for o200k) after a punctuation run."""
        while j < hi and (cps[j] == 10 or cps[j] == 13 or (slash and cps[j] == 47)):
            j += 1
        return j

    @jit
    def contraction(cps, fold, j, hi):
        """``(?i:'s|'t|'re|'ve|'m|'ll|'d)`` at ``j``: its end, or -1."""
        if j + 1 >= hi or cps[j] != 39:
            return -1
        a = fold[cps[j + 1]]
        if a == 115 or a == 116 or a == 109 or a == 100:  # s t m d
            return j + 2
        if j + 2 < hi:
            b = fold[cps[j + 2]]
            if (a == 114 and b == 101) or (a == 118 and b == 101) or (a == 108 and b == 108):
                return j + 3  # re ve ll
        return -1

    @jit
    def whitespace_piece(cps, fl, i, hi):
        """``\\s*[\\r\\n]+ | \\s+(?!\\S) | \\s+`` at a whitespace character ``i``.

        ``\\s*[\\r\\n]+`` backtracks to the last CR/LF of the whitespace run; else
        ``\\s+(?!\\S)`` takes the run (at the end of input) or all but its last
        character (which then starts the next piece); else the lone character.
        """
        e = run_with(fl, i, hi, B_WS)
        k = e - 1
        while k >= i:
            if cps[k] == 10 or cps[k] == 13:
                return k + 1
            k -= 1
        if e == hi:
            return e
        if e - 1 > i:
            return e - 1
        return e

    @jit
    def shared_tail(cps, fl, i, hi, dmax, other, slash):
        """The alternatives after the letter ones, shared by the cl100k lineage and o200k.

        Digits in groups of up to ``dmax``, then an optional space and a run of the
        classes not in ``other`` followed by CR/LF (and ``/`` for o200k), then whitespace.
        """
        if (fl[i] & B_N) != 0:
            j = i + 1
            while j < hi and j - i < dmax and (fl[j] & B_N) != 0:
                j += 1
            return j
        if cps[i] == 32 and i + 1 < hi and (fl[i + 1] & other) == 0:
            return crlf_tail(cps, run_without(fl, i + 1, hi, other), hi, slash)
        if (fl[i] & other) == 0:
            return crlf_tail(cps, run_without(fl, i, hi, other), hi, slash)
        return whitespace_piece(cps, fl, i, hi)

    # --- cl100k lineage (llama3, cl100k, qwen3, qwen3.6) --------------------------------
    @jit
    def cl_next(cps, fl, fold, i, hi, dmax, marks_in_letters):
        """(?i:'s|...)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,dmax}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|ws."""
        c = cps[i]
        f = fl[i]
        if c == 39:
            e = contraction(cps, fold, i, hi)
            if e >= 0:
                return e
        letter = B_L
        other = B_WS | B_L | B_N
        if marks_in_letters:
            letter = B_L | B_M
            other = B_WS | B_L | B_N | B_M
        if (f & letter) != 0:
            # With or without the optional leading character the run ends at the same place.
            return run_with(fl, i, hi, letter)
        if not is_crlf(c) and (f & (B_L | B_N)) == 0 and i + 1 < hi and (fl[i + 1] & letter) != 0:
            return run_with(fl, i + 1, hi, letter)
        return shared_tail(cps, fl, i, hi, dmax, other, False)

    # --- o200k (gpt-oss) ----------------------------------------------------------------
    @jit
    def o200k_words(cps, fl, fold, i, hi, contractions):
        """``[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(contraction)?`` at i
        (no contraction suffix for tekken: ``contractions`` False).

        The star is greedy; if no lowercase letter follows it, backtracking hands
        the star's last Lm/Lo/M character to the plus (the only characters both
        classes share).  Returns the end, or -1.
        """
        upperish = B_LU | B_LT | B_LM | B_LO | B_M
        lowerish = B_LL | B_LM | B_LO | B_M
        shared = B_LM | B_LO | B_M
        e = run_with(fl, i, hi, upperish)
        if e < hi and (fl[e] & B_LL) != 0:
            j = run_with(fl, e, hi, lowerish)
        else:
            k = e - 1
            while k >= i and (fl[k] & shared) == 0:
                k -= 1
            if k < i:
                return -1
            j = k + 1
        if not contractions:
            return j
        t = contraction(cps, fold, j, hi)
        return t if t >= 0 else j

    @jit
    def o200k_caps(cps, fl, fold, i, hi, contractions):
        """``[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(contraction)?`` at i."""
        e = run_with(fl, i, hi, B_LU | B_LT | B_LM | B_LO | B_M)
        if e == i:
            return -1
        j = run_with(fl, e, hi, B_LL | B_LM | B_LO | B_M)
        if not contractions:
            return j
        t = contraction(cps, fold, j, hi)
        return t if t >= 0 else j

    @jit
    def o200k_next(cps, fl, fold, i, hi, contractions, dmax):
        """o200k (contractions, digit groups of dmax = 3) or tekken (neither, dmax = 1)."""
        c = cps[i]
        f = fl[i]
        lead = not is_crlf(c) and (f & (B_L | B_N)) == 0  # may be the optional leading char
        if lead:
            e = o200k_words(cps, fl, fold, i + 1, hi, contractions)
            if e >= 0:
                return e
        e = o200k_words(cps, fl, fold, i, hi, contractions)
        if e >= 0:
            return e
        if lead:
            e = o200k_caps(cps, fl, fold, i + 1, hi, contractions)
            if e >= 0:
                return e
        e = o200k_caps(cps, fl, fold, i, hi, contractions)
        if e >= 0:
            return e
        return shared_tail(cps, fl, i, hi, dmax, B_WS | B_L | B_N, True)

    # --- deepseek stage 3 -----------------------------------------------------------------
    @jit
    def is_ascii_punct(c):
        return (33 <= c <= 47) or (58 <= c <= 64) or (91 <= c <= 96) or (123 <= c <= 126)

    @jit
    def is_ascii_letter(c):
        return (65 <= c <= 90) or (97 <= c <= 122)

    @jit
    def is_deepseek_cjk(c):
        return (0x4E00 <= c <= 0x9FA5) or (0x3040 <= c <= 0x309F) or (0x30A0 <= c <= 0x30FF)

    @jit
    def deepseek_match(cps, fl, i, hi):
        """The third Split regex at ``i``: the match end, or -1 when none starts here."""
        c = cps[i]
        f = fl[i]
        if is_ascii_punct(c) and i + 1 < hi and is_ascii_letter(cps[i + 1]):
            j = i + 2
            while j < hi and is_ascii_letter(cps[j]):
                j += 1
            return j
        lm = B_L | B_M
        if (f & lm) != 0:
            return run_with(fl, i, hi, lm)
        if not is_crlf(c) and (f & (B_L | B_P | B_S)) == 0 and i + 1 < hi and (fl[i + 1] & lm) != 0:
            return run_with(fl, i + 1, hi, lm)
        ps = B_P | B_S
        if c == 32 and i + 1 < hi and (fl[i + 1] & ps) != 0:
            return crlf_tail(cps, run_with(fl, i + 1, hi, ps), hi, False)
        if (f & ps) != 0:
            return crlf_tail(cps, run_with(fl, i, hi, ps), hi, False)
        if (f & B_WS) != 0:
            return whitespace_piece(cps, fl, i, hi)
        return -1

    @jit
    def deepseek_stage3(cps, fl, lo, hi, ends, n):
        """Pieces of one stage-3 input: matches, and the unmatched stretches between them."""
        i = lo
        while i < hi:
            e = deepseek_match(cps, fl, i, hi)
            if e < 0:
                e = i + 1
                while e < hi and deepseek_match(cps, fl, e, hi) < 0:
                    e += 1
            ends[n] = e
            n += 1
            i = e
        return n

    @jit
    def deepseek_stage2(cps, fl, lo, hi, ends, n):
        """Isolate CJK runs, then stage 3 on every resulting piece."""
        i = lo
        while i < hi:
            j = i + 1
            cjk = is_deepseek_cjk(cps[i])
            while j < hi and is_deepseek_cjk(cps[j]) == cjk:
                j += 1
            n = deepseek_stage3(cps, fl, i, j, ends, n)
            i = j
        return n

    @jit
    def deepseek_segment(cps, fl, lo, hi, ends, n):
        """Stage 1 isolates ``\\p{N}{1,3}`` (groups counted from each digit run's start)."""
        i = lo
        while i < hi:
            if (fl[i] & B_N) != 0:
                r = run_with(fl, i, hi, B_N)
                while i < r:
                    g = min(i + 3, r)
                    n = deepseek_stage2(cps, fl, i, g, ends, n)
                    i = g
            else:
                j = run_without(fl, i, hi, B_N)
                n = deepseek_stage2(cps, fl, i, j, ends, n)
                i = j
        return n

    # --- one pre-tokenizer input ----------------------------------------------------------
    @jit
    def piece_end(cps, fl, fold, i, hi, family):
        """End of the piece starting at ``i`` (families but deepseek, whose stages are not
        one matcher)."""
        if family == F_O200K:
            return o200k_next(cps, fl, fold, i, hi, True, 3)
        if family == F_TEKKEN:
            return o200k_next(cps, fl, fold, i, hi, False, 1)
        if family == F_CL100K:
            return cl_next(cps, fl, fold, i, hi, 3, False)
        if family == F_QWEN:
            return cl_next(cps, fl, fold, i, hi, 1, False)
        return cl_next(cps, fl, fold, i, hi, 1, True)

    @jit
    def pretokenize_segment(cps, fl, fold, lo, hi, family, ends, n):
        """Append the ends of the pieces of ``[lo, hi)`` to ``ends[n:]``; returns the new n."""
        if family == F_DEEPSEEK:
            return deepseek_segment(cps, fl, lo, hi, ends, n)
        i = lo
        while i < hi:
            e = piece_end(cps, fl, fold, i, hi, family)
            ends[n] = e
            n += 1
            i = e
        return n

    @jit
    def after_last_crlf(cps, j):
        """The position after the last CR/LF at or before ``j`` (one is there: a run's state says so)."""
        while cps[j] != 10 and cps[j] != 13:
            j -= 1
        return j + 1

    @jit
    def boundaries_behind(cps, flags, i, ends, n):
        """The boundaries an automaton entry places behind position ``i``, in order: before
        ``i - 2`` (a failed contraction), after a whitespace run's last CR/LF, before ``i - 1``."""
        if flags & 16:
            ends[n] = i - 2
            n += 1
        if flags & 4:
            ends[n] = after_last_crlf(cps, i - 1)
            n += 1
        if flags & 2:
            ends[n] = i - 1
            n += 1
        return n

    @jit
    def dfa_segment(cps, fl, fold, family, classes, table, pairs, lo, hi, ends, n):
        """``pretokenize_segment`` as an automaton (``pretok_dfa``): one table load per
        character -- or per two, from ``pairs`` where it has more than one entry --
        boundaries written without a branch (the slot is written every time, the count
        moves when the entry says so).  Only the rare entries branch: boundaries behind the
        character (a whitespace run's end, a failed contraction) and DEFER, where the
        family's matcher takes the pieces from the last boundary on (o200k's words with
        Lm/Lo/M characters), until a piece ends before an ASCII character."""
        n0 = n
        st = 0  # the state's pair-table row offset (state * 1024); its single row: st >> 5
        i = lo
        two = pairs.size > 1
        while i < hi:
            if two and i + 1 < hi:  # two characters in one read, unless a step has flags
                # (pretok_dfa: row st + (class << 5 | class); bits P0 1, P1 2, PSLOW 4; the
                # entry's state is a row offset already, so the chain of reads is one add
                # and one load a pair: ~8% faster than shifting a single-table offset).
                # The index is unsigned: with a signed one numba adds a negative-index
                # wraparound (a compare and a select) to the chain of reads: the stage is
                # 0-24% faster without it (results/runs/engine-ab/pretok-unsigned-index.txt).
                # A narrow class or state shifted left must not wrap either: the simulator
                # computes in the arrays' own types.
                y = pairs[np.uint64(st) + (np.uint64(classes[cps[i]]) << np.uint64(5))
                          + np.uint64(classes[cps[i + 1]])]
                if (y & 4) == 0:
                    ends[n] = i
                    n += y & 1
                    ends[n] = i + 1
                    n += (y >> 1) & 1
                    st = y & ~7
                    i += 2
                    continue
            x = table[(st >> 5) + classes[cps[i]]]
            if x & 30:
                n = boundaries_behind(cps, x, i, ends, n)
                if x & 8:
                    ends[n] = i
                    n += x & 1
                    e = ends[n - 1] if n > n0 else lo
                    while True:
                        e = piece_end(cps, fl, fold, e, hi, family)
                        ends[n] = e
                        n += 1
                        if e >= hi or cps[e] < 128:
                            break
                    i = e
                    st = 0
                    continue
            ends[n] = i
            n += x & 1
            st = (x & ~31) << 5
            i += 1
        if (hi > lo and n == n0) or (n > n0 and ends[n - 1] < hi):
            n = boundaries_behind(cps, table[(st >> 5) + 31], hi, ends, n)
            ends[n] = hi
            n += 1
        return n

    @jit
    def pretokenize_range(cps, fl, fold, lo, hi, family, bt, ends, n):
        """The piece loop's pre-tokenizer: the automaton where ``bt`` carries one, else the
        family's matcher (the same ends: ``tests/test_pretok_dfa.py``)."""
        if bt.pre_table.size > 1:
            return dfa_segment(cps, fl, fold, family, bt.pre_classes, bt.pre_table, bt.pre_pairs,
                               lo, hi, ends, n)  # fmt: skip
        return pretokenize_segment(cps, fl, fold, lo, hi, family, ends, n)

    # --- hash tables ----------------------------------------------------------------------
    @jit
    def pair_slot(keys, left, right):
        """Slot of the pair (left, right) in the open-addressing pair table, or -1."""
        key = (int(left) << 32) | int(right)  # int(): no narrow-dtype overflow (simulator)
        mask = keys.size - 1
        h = ((key * 0x9E3779B1) >> 20) & mask  # tables.build_pair_table hashes the same way
        while True:
            k = keys[h]
            if k == key:
                return h
            if k == EMPTY_KEY:
                return -1
            h = (h + 1) & mask

    @jit
    def vocab_lookup(u8, b0, b1, vkeys, vids, pool, pool_off):
        """Token id whose bytes are exactly ``u8[b0:b1]``, or -1 (hash: ``tables.bytes_hash``)."""
        h = 0
        for k in range(b0, b1):
            h = (h * 1000003 + int(u8[k]) + 1) & 0x7FFFFFFFFFF
        mask = vkeys.size - 1
        s = ((h * 0x9E3779B1) >> 11) & mask
        while True:
            t = vids[s]
            if t < 0:
                return -1
            if vkeys[s] == h:
                a = pool_off[t]
                if pool_off[t + 1] - a == b1 - b0:
                    same = True
                    for q in range(b1 - b0):
                        if pool[a + q] != u8[b0 + q]:
                            same = False
                            break
                    if same:
                        return t
            s = (s + 1) & mask

    # --- BPE ------------------------------------------------------------------------------
    @jit
    def pair_code(bt, left, right):
        """``priority << 32`` of the pair (left, right), or NO_PAIR: codes order as ranks do
        (the priority is the rank, or ``tables.direct_priorities``, which orders the same).

        Most lookups during merges ask for pairs that have no merge (about 60% on
        multilingual text), so a small bit set answers those first: a 0 bit is a sure
        "no merge" (every merge's bit is set), read from a table a tenth the size of the
        merge table.  Otherwise one probe sequence in the compact merge table
        (``tables.build_merge_table``): each slot holds the pair's key and priority in
        one word, and the slot's line is requested before the filter is read, so for a
        pair that merges the two reads overlap (3-4% less time per merged piece in
        isolation).  The merged token is ``merged_token(bt, code)``.
        """
        key = (int(left) << 18) | int(right)  # int(): no narrow-dtype overflow (simulator)
        prod = key * 0x9E3779B1  # the table and the filter hash the same product (tables.py)
        mt = bt.merges
        mask = mt.shape[0] - 1
        h = (prod >> 20) & mask
        prefetch_row(mt, h)  # in flight while the filter answers: the two reads overlap
        pf = bt.pair_filter
        b = (prod >> 40) & (pf.shape[0] * 64 - 1)
        if (pf[b >> 6] >> (b & 63)) & 1 == 0:
            return NO_PAIR
        while True:
            s = mt[h]
            if s == EMPTY_KEY:
                return NO_PAIR
            if (s >> 27) == key:
                return (s & 0x7FFFFFF) << 32
            h = (h + 1) & mask

    @jit
    def merged_token(bt, code):
        """The token the merge of pair code ``code`` (a real merge) makes: read off a direct
        priority, else ``merged[rank]``."""
        if bt.direct:
            return code >> (32 + PRIO_GROUP_BITS)
        return bt.merged[code >> 32]

    @jit_inline
    def merge_small(sym, rank, n, bt):
        """Merge ``sym[:n]`` in place, ``rank[:n - 1]`` holding the pairs' codes (linear min
        search); returns the new length.  Lowest rank first, leftmost among equals (the
        strict ``<``)."""
        while n > 1:
            # Codes are rank << 32: or-ing the position in makes the minimum unique and
            # the leftmost among equal ranks, so the scan needs no branch.
            low = rank[0]
            for k in range(1, n - 1):
                low = min(low, rank[k] | k)
            if low >= NO_PAIR:
                break
            best = low & 0xFFFFFFFF
            sym[best] = merged_token(bt, rank[best])
            for k in range(best + 1, n - 1):
                sym[k] = sym[k + 1]
                rank[k] = rank[k + 1]
            n -= 1
            if best + 1 < n:
                rank[best] = pair_code(bt, sym[best], sym[best + 1])
            else:
                rank[best] = NO_PAIR
            if best > 0:
                rank[best - 1] = pair_code(bt, sym[best - 1], sym[best])
        return n

    @jit
    def heap_push(heap, size, key):
        k = size
        heap[k] = key
        while k > 0:
            p = (k - 1) >> 1
            if heap[p] <= heap[k]:
                break
            t = heap[p]
            heap[p] = heap[k]
            heap[k] = t
            k = p
        return size + 1

    @jit
    def heap_pop(heap, size):
        """Remove the minimum (returned by the caller from heap[0] before); returns the new size."""
        size -= 1
        heap[0] = heap[size]
        k = 0
        while True:
            a = 2 * k + 1
            if a >= size:
                break
            b = a + 1
            m = b if b < size and heap[b] < heap[a] else a
            if heap[k] <= heap[m]:
                break
            t = heap[m]
            heap[m] = heap[k]
            heap[k] = t
            k = m
        return size

    @jit
    def merge_large(sym, rank, nxt, prv, heap, n, bt):
        """O(L log L) merges: a linked list of symbols and a heap of (rank, position) keys
        (``rank[:n - 1]`` holds the initial pairs' codes).

        Entries go stale when a neighbour merges; a popped entry is used only if
        its position is still alive and its pair still has the recorded rank (a
        rank names one pair).  Returns the new length after compacting ``sym``.
        """
        size = 0
        for k in range(n):
            nxt[k] = k + 1 if k + 1 < n else -1
            prv[k] = k - 1
        for k in range(n - 1):
            c = rank[k]
            if c < NO_PAIR:
                size = heap_push(heap, size, (c >> 32 << 32) | k)
        while size > 0:
            top = heap[0]
            size = heap_pop(heap, size)
            r = top >> 32
            k = top & 0xFFFFFFFF
            if sym[k] < 0 or nxt[k] < 0:
                continue
            j = nxt[k]
            c = pair_code(bt, sym[k], sym[j])
            if (c >> 32) != r:
                continue  # stale: a neighbour merged since this entry was pushed
            nj = merge_link(sym, nxt, prv, k, merged_token(bt, c))
            if nj >= 0:
                c2 = pair_code(bt, sym[k], sym[nj])
                if c2 < NO_PAIR:
                    size = heap_push(heap, size, (c2 >> 32 << 32) | k)
            p = prv[k]
            if p >= 0:
                c2 = pair_code(bt, sym[p], sym[k])
                if c2 < NO_PAIR:
                    size = heap_push(heap, size, (c2 >> 32 << 32) | p)
        m = 0
        for k in range(n):
            if sym[k] >= 0:
                sym[m] = sym[k]
                m += 1
        return m

    @jit
    def bpe_merge(u8, b0, b1, bt, sym, rank, nxt, prv, heap, out, n_out):
        """The merges of the bytes ``u8[b0:b1]`` (no cache): ids appended to ``out``."""
        if bt.ignore_merges:
            t = vocab_lookup(u8, b0, b1, bt.vkeys, bt.vids, bt.pool, bt.pool_off)
            if t >= 0:
                out[n_out] = t
                return n_out + 1
        return merges_only(u8, b0, b1, bt, sym, rank, nxt, prv, heap, out, n_out)

    @jit
    def pm_forbids(rows, i, col, c):
        """Is byte ``c`` set in the 256-bit mask of row ``i`` that starts at column ``col``?"""
        return (rows[i, col + (c >> 6)] >> (c & 63)) & 1 == 1

    @jit
    def premerged_start(u8, b0, b1, bt, sym, rank):
        """The piece's first symbols with its proven byte pairs already merged: their count,
        ``rank[:n - 1]`` the codes of their pairs.

        A pair (a, b) at bytes k, k + 1 is merged up front when its row exists (BPE would
        merge it, and no merge taking its token has a lower rank) and neither neighbour
        byte is in its masks: no token ending in the byte before could take ``a`` by a merge
        of lower rank, none starting with the byte after could take ``b``.  Then BPE merges
        that pair before anything touches its two bytes, and doing it first changes nothing
        (``tables.build_premerge`` gives the argument; tests compare both ways).  Two such
        pairs never overlap (each would need a lower rank than the other).
        """
        pm_index, rows = bt.pm_index, bt.pm_rows
        n = 0
        prev_byte = -1  # the last symbol's byte while it is a single-byte token, else -1
        k = b0
        while k < b1:
            b = int(u8[k])
            t = -1
            if k + 1 < b1:
                i = pm_index[(b << 8) | int(u8[k + 1])]
                if i >= 0 and not (k > b0 and pm_forbids(rows, i, 0, int(u8[k - 1]))) and not (
                    k + 2 < b1 and pm_forbids(rows, i, 4, int(u8[k + 2]))
                ):
                    t = rows[i, 8]
            if t >= 0:
                sym[n] = t
                if n > 0:
                    rank[n - 1] = pair_code(bt, sym[n - 1], t)
                prev_byte = -1
                k += 2
            else:
                sym[n] = bt.byte_ids[b]
                if n > 0:
                    if prev_byte >= 0:
                        rank[n - 1] = bt.byte_pairs[(prev_byte << 8) | b]
                    else:
                        rank[n - 1] = pair_code(bt, sym[n - 1], sym[n])
                prev_byte = b
                k += 1
            n += 1
        return n

    @jit_inline
    def merges_only(u8, b0, b1, bt, sym, rank, nxt, prv, heap, out, n_out):
        """``bpe_merge`` without the ``ignore_merges`` vocabulary check."""
        length = b1 - b0
        if bt.pm_index.size > 1:
            length = premerged_start(u8, b0, b1, bt, sym, rank)
        else:
            # The first pairs are all pairs of single-byte tokens: read from the small direct
            # table (256 x 256) instead of the merge hash table.
            for k in range(length):
                sym[k] = bt.byte_ids[u8[b0 + k]]
            for k in range(length - 1):
                rank[k] = bt.byte_pairs[(int(u8[b0 + k]) << 8) | int(u8[b0 + k + 1])]
        if length <= SMALL_PIECE:
            m = merge_small(sym, rank, length, bt)
        else:
            m = merge_large(sym, rank, nxt, prv, heap, length, bt)
        for k in range(m):
            out[n_out + k] = sym[k]
        return n_out + m

    @jit
    def mix(h, x):
        """One step of the 63-bit hash every key and check word uses."""
        h = ((h ^ x) * 0x100000001B3) & M63
        return h ^ (h >> 29)

    words_at_once = load_word is not None  # a compile-time constant
    if load_word is None:

        @jit
        def load_word(u8, i):
            return 0

    @jit
    def piece_words(u8, b0, b1):
        """A short piece's exact key (lw, w0, w1): its length and bytes, 7 to a word.

        With ``load_word``, a piece of at most 14 bytes that has 8 readable bytes at
        each word's start gets its words from two unaligned loads, masked to its length
        (the same key; ``tests/test_engine_hashes.py`` compares both ways).
        """
        lw = b1 - b0
        if words_at_once and lw <= 14 and b0 + 15 <= u8.size:
            w0 = load_word(u8, b0) & ((1 << (8 * min(lw, 7))) - 1)
            w1 = 0
            if lw > 7:
                w1 = load_word(u8, b0 + 7) & ((1 << (8 * (lw - 7))) - 1)
            return lw, w0, w1
        return piece_words_bytes(u8, b0, b1)

    @jit
    def piece_words_bytes(u8, b0, b1):
        """``piece_words`` one byte at a time (the GPU's, and near the array's end)."""
        w0 = 0
        w1 = 0
        lw = b1 - b0
        for k in range(b0, b1):
            d = k - b0
            if d < 7:
                w0 = w0 | (int(u8[k]) << (8 * d))
            elif d < 14:
                w1 = w1 | (int(u8[k]) << (8 * (d - 7)))
            else:
                lw = lw | (int(u8[k]) << (8 * (d - 13)))
        return lw, w0, w1

    @jit
    def piece_hash(lw, w0, w1):
        return mix(mix(mix(0x27D4EB2F165667C5, lw), w0), w1)

    @jit
    def short_lookup(smap, lw, w0, w1, h):
        """Token id of a short piece from the read-only short-piece map, or -1.

        The map is a memo of ``bpe_merge`` itself for every vocabulary entry of
        2..16 bytes whose encoding is that single token (``cpu.build_short_map``):
        a hit returns exactly what the merges would.  Keys are the exact bytes.
        """
        mask = smap.shape[0] - 1
        s = h & mask
        while True:
            lw_s = smap[s, 0]
            if lw_s == 0:
                return -1
            if lw_s == lw and smap[s, 1] == w0 and smap[s, 2] == w1:
                return smap[s, 3]
            s = (s + 1) & mask

    @jit
    def check_at(cache, r, ncols, hdr):
        """Check word over row ``r``: its header ``hdr`` (content bits) and columns
        ``1..ncols - 2`` (the last column holds the check).

        A weighted sum mod 2**63 with a distinct odd weight per column: the products are
        independent (no serial hash chain on the hit path), any change to one word changes
        the sum (odd weights are invertible), and a never-written row (all zero) fails
        it (the sum starts from a nonzero constant).  Kept to 63 bits, as every key is.
        """
        h = 0x1F3D5B79A2C4E6F7
        for k in range(ncols - 1):
            x = hdr & CONTENT if k == 0 else load_relaxed(cache, r, k)
            w = ((0x1E3779B97F4A7C15 + k * 0x232BE59BD9B4E019) & M63) | 1
            h = (h + ((x * w) & M63)) & M63
        return h

    @jit
    def row_take(cache, r):
        """Take row ``r`` for writing: its header before (even count), or -1 when a writer
        holds it or took it first (the store is then skipped: a cache may forget)."""
        h = load_relaxed(cache, r, 0)
        if h & SEQ_BIT:
            return -1
        if not cas_acquire(cache, r, 0, h, h ^ SEQ_BIT):  # count + 1: odd
            return -1
        fence_release()  # the row's new words become visible only after the odd count
        return h

    @jit
    def row_publish(cache, r, taken, content):
        """Release row ``r`` (taken with header ``taken``): header ``content``, count + 2."""
        seq = ((taken >> SEQ_SHIFT) + 2) & 0x7F
        store_release(cache, r, 0, content | (seq << SEQ_SHIFT))

    @jit
    def row_unchanged(cache, r, hdr):
        """After using row ``r`` read under header ``hdr``: did no write overlap the reads?"""
        fence_acquire()
        return load_relaxed(cache, r, 0) == hdr

    @jit
    def set_take(cache, a, ncols):
        """Take both rows of the 2-way set at rows ``a``, ``a + 1`` for a store, way 0's row
        moved to way 1 (most recent first): (way 0's header, way 1's header, way 1's new
        content bits), to publish after writing way 0; (-1, -1, 0) when another thread
        holds either row -- the set is then exactly as it was and the store is skipped."""
        t1 = row_take(cache, a + 1)
        if t1 < 0:
            return -1, -1, 0
        t0 = row_take(cache, a)
        if t0 < 0:
            store_release(cache, a + 1, 0, t1)  # untouched: back exactly as it was
            return -1, -1, 0
        old = t1 & CONTENT
        if (t0 & CONTENT) != 0:  # way 0 holds a piece: it moves to way 1
            for k in range(1, ncols):
                store_relaxed(cache, a + 1, k, load_relaxed(cache, a, k))
            old = t0 & CONTENT
        return t0, t1, old

    @jit
    def cache_store(cache, h, lw, w0, w1, out, n0, m, nbytes):
        """Remember a short piece's tokens (at most CACHE_TOKENS) in its 2-way set.

        The new row goes to way 0 and the row there moves to way 1 (most recent
        first).  Both rows are taken first; when another thread holds either, the
        piece is not stored (it will be merged again next time).
        """
        count = m - n0
        if count > CACHE_TOKENS:
            return
        a = (h << 1) & (cache.shape[0] - 1)
        t0, t1, old = set_take(cache, a, CACHE_COLS)
        if t0 < 0:
            return
        hdr = lw | (count << 24)
        ids0 = 0
        ids1 = 0
        ids2 = 0
        ids3 = 0
        for k in range(count):
            t = out[n0 + k]
            hdr = hdr | ((int(nbytes[t]) - 1) << (28 + 4 * k))
            v = int(t) << (32 * (k & 1))
            q = k >> 1
            if q == 0:
                ids0 |= v
            elif q == 1:
                ids1 |= v
            elif q == 2:
                ids2 |= v
            else:
                ids3 |= v
        store_relaxed(cache, a, 1, w0)
        store_relaxed(cache, a, 2, w1)
        store_relaxed(cache, a, 3, ids0)
        store_relaxed(cache, a, 4, ids1)
        store_relaxed(cache, a, 5, ids2)
        store_relaxed(cache, a, 6, ids3)
        store_relaxed(cache, a, CACHE_COLS - 1, check_at(cache, a, CACHE_COLS, hdr))
        row_publish(cache, a + 1, t1, old)
        row_publish(cache, a, t0, hdr)

    @jit
    def cache_find(cache, h, lw, w0, w1):
        """(row, header) of the short-piece cache's row holding exactly this piece (check
        word valid), or (-1, 0).  The caller reads the row's tokens, then asks
        ``row_unchanged(cache, row, header)`` before it trusts them."""
        a = (h << 1) & (cache.shape[0] - 1)
        for r in range(a, a + 2):
            hdr = load_acquire(cache, r, 0)
            if (
                (hdr & SEQ_BIT) == 0
                and (hdr & 0xFFFFFF) == lw
                and load_relaxed(cache, r, 1) == w0
                and load_relaxed(cache, r, 2) == w1
                and load_relaxed(cache, r, CACHE_COLS - 1) == check_at(cache, r, CACHE_COLS, hdr)
            ):
                return r, hdr
        return -1, 0

    @jit
    def long_words(u8, b0, b1, words):
        """A long piece's bytes packed 7 to a word into ``words[:ceil(L/7)]`` (L <= len(words)
        holds for any scratch of the piece's size); returns its hash.

        With ``load_word``, each word is one unaligned load masked to its 7 bytes (or the
        last word's fewer) when the piece has 8 readable bytes at its last word's start:
        the same words and hash, ~6x fewer instructions than the byte loop (o200k's pieces
        of 17+ bytes are 13% of multilingual prose's pieces)."""
        nw = (b1 - b0 + 6) // 7
        if words_at_once and b0 + 7 * nw + 1 <= u8.size:
            for k in range(nw):
                rest = min(b1 - b0 - 7 * k, 7)
                words[k] = load_word(u8, b0 + 7 * k) & ((1 << (8 * rest)) - 1)
        else:
            for k in range(nw):
                words[k] = 0
            for k in range(b0, b1):
                d = k - b0
                q = d // 7
                words[q] = words[q] | (int(u8[k]) << (8 * (d - 7 * q)))
        # The hash reads the words back from the array: mixed straight from the masked
        # loads, LLVM proved the product's operands non-negative and dropped mix's
        # ``& M63`` (numba's signed multiply has ``nsw``): a different hash
        # (tests/test_engine_hashes.py).
        h = mix(0x27D4EB2F165667C5, b1 - b0)
        for k in range(nw):
            h = mix(h, words[k])
        return h

    @jit
    def long_lookup(lcache, length, words, h):
        """(row, header) of the long-piece cache's row holding exactly these bytes (check
        word valid), or (-1, 0); the caller confirms with ``row_unchanged`` after use.

        Rows come in 2-way sets (rows ``a`` and ``a + 1``), as the short cache's: a
        direct-mapped table lost 29% of the long pieces of 4.4M multilingual characters to
        collisions at 32,768 rows, 32,768 sets of two 7.9% (``cache-sets.txt``).
        Rows are stored zero-padded and the check word covers every column, so equal
        length, equal leading words and a valid check mean equal bytes.
        """
        a = (h << 1) & (lcache.shape[0] - 1)
        for r in range(a, a + 2):
            hdr = load_acquire(lcache, r, 0)
            if (hdr & SEQ_BIT) != 0 or (hdr & 0xFF) != length:
                continue
            same = True
            for k in range((length + 6) // 7):
                if load_relaxed(lcache, r, 1 + k) != words[k]:
                    same = False
                    break
            if same and load_relaxed(lcache, r, LONG_COLS - 1) == check_at(lcache, r, LONG_COLS,
                                                                           hdr):  # fmt: skip
                return r, hdr
        return -1, 0

    @jit
    def long_store(lcache, length, words, h, out, n0, m, nbytes):
        """Remember a long piece's tokens in way 0 of its set, the row there moving to way 1
        (skipped while another thread holds either row), as ``cache_store``."""
        count = m - n0
        if count > LONG_TOKENS:
            return
        a = (h << 1) & (lcache.shape[0] - 1)
        t0, t1, old = set_take(lcache, a, LONG_COLS)
        if t0 < 0:
            return
        nw = (length + 6) // 7
        for k in range(LONG_WORDS):
            store_relaxed(lcache, a, 1 + k, words[k] if k < nw else 0)
        for k in range(LONG_LEN_WORDS):
            lens = 0
            for j in range(7):
                q = 7 * k + j
                if q < count:
                    lens |= int(nbytes[out[n0 + q]]) << (8 * j)
            store_relaxed(lcache, a, 1 + LONG_WORDS + k, lens)
        for k in range(LONG_TOKENS):
            t = out[n0 + k] if k < count else 0
            store_relaxed(lcache, a, 1 + LONG_WORDS + LONG_LEN_WORDS + k, t)
        hdr = length | (count << 8)
        store_relaxed(lcache, a, LONG_COLS - 1, check_at(lcache, a, LONG_COLS, hdr))
        row_publish(lcache, a + 1, t1, old)
        row_publish(lcache, a, t0, hdr)

    @jit
    def bpe_piece(u8, b0, b1, bt, sym, rank, nxt, prv, heap, cache, lcache, out, n_out):
        """Encode the bytes ``u8[b0:b1]`` of one piece; append ids to ``out``; returns n_out.

        A piece's result is remembered in the short or long piece cache, keyed by its
        exact bytes (``encode_range`` looks it up before calling here), so a later hit
        returns exactly what the merges would.
        """
        length = b1 - b0
        if length == 1:
            out[n_out] = bt.byte_ids[u8[b0]]
            return n_out + 1
        if length <= CACHE_MAX_BYTES and bt.smap.shape[0] > 1:
            # Callers looked the piece up in the short-piece map first, and the map holds
            # every vocabulary entry of this size that encodes to itself -- with
            # ignore_merges, every one -- so the vocabulary check would miss.
            m = merges_only(u8, b0, b1, bt, sym, rank, nxt, prv, heap, out, n_out)
        else:
            m = bpe_merge(u8, b0, b1, bt, sym, rank, nxt, prv, heap, out, n_out)
        if length <= CACHE_MAX_BYTES:
            lw, w0, w1 = piece_words(u8, b0, b1)
            cache_store(cache, piece_hash(lw, w0, w1), lw, w0, w1, out, n_out, m, bt.nbytes)
        elif length <= LONG_MAX_BYTES:
            h = long_words(u8, b0, b1, sym)  # sym is free again: the merges are done
            long_store(lcache, length, sym, h, out, n_out, m, bt.nbytes)
        return m

    @jit
    def literal_at(cps, i, hi, first, tkeys, tchild, term):
        """Longest literal of the trie starting at ``i`` (ending <= hi): (end, id) or (-1, -1)."""
        if first[cps[i]] == 0:
            return -1, -1
        node = 0
        j = i
        best_e = -1
        best_id = -1
        while j < hi:
            s = pair_slot(tkeys, node, cps[j])
            if s < 0:
                break
            node = tchild[s]
            j += 1
            if term[node] >= 0:
                best_e = j
                best_id = term[node]
        return best_e, best_id

    @jit
    def literal_scan(cps, lo, hi, first, tkeys, tchild, term, ls, le, lid, n):
        """Leftmost-longest literal occurrences in ``[lo, hi)`` appended to (ls, le, lid)."""
        pos = lo
        for i in range(lo, hi):
            if first[cps[i]] != 0:  # no literal starts at any other position
                pos, n = literal_take(cps, i, pos, hi, first, tkeys, tchild, term, ls, le, lid, n)
        return n

    # --- one range of text: literals, pieces, BPE, spans -------------------------------------
    @jit
    def emit_piece(u8, char_start, ps, pe, bt, sym, rank, nxt, prv, heap, cache, lcache, out_ids,
                   out_s, out_e, n, spans):  # fmt: skip
        """BPE one piece (characters ``[ps, pe)``) and record each token's character span
        (unless ``spans`` is False).

        A token's span runs from the character holding its first byte to the one
        holding its last byte (a token may cut a character: both halves get it).
        """
        b = char_start[ps]
        m = bpe_piece(
            u8, b, char_start[pe], bt, sym, rank, nxt, prv, heap, cache, lcache, out_ids, n
        )
        if not spans:
            return m
        ci = ps
        cj = ps
        for t in range(n, m):
            last = b + bt.nbytes[out_ids[t]] - 1
            ci, cj = token_chars(char_start, b, last, ci, cj)
            out_s[t] = ci
            out_e[t] = cj + 1
            b = last + 1
        return m

    @jit
    def piece_key(q, np_, lo, ends, char_start, u8, smap, cache, byte_offsets):
        """Exact key (lw, w0, w1, hash) of piece ``q`` of a segment starting at character
        ``lo`` when it has 2..CACHE_MAX_BYTES bytes, else all zero; for such a piece, also
        start loading the short-map and piece-cache rows its lookup will read.
        ``byte_offsets``: character i starts at byte i (``encode_range``)."""
        if q >= np_:
            return 0, 0, 0, 0
        ps = ends[q - 1] if q > 0 else lo
        if byte_offsets:
            b0 = ps
            length = ends[q] - ps
        else:
            b0 = char_start[ps]
            length = char_start[ends[q]] - b0
        if length < 2 or length > CACHE_MAX_BYTES:
            return 0, 0, 0, 0
        lw, w0, w1 = piece_words(u8, b0, b0 + length)
        h = piece_hash(lw, w0, w1)
        prefetch_row(smap, h & (smap.shape[0] - 1))
        a = (h << 1) & (cache.shape[0] - 1)
        prefetch_row(cache, a)
        prefetch_row(cache, a + 1)
        return lw, w0, w1, h

    @jit
    def ring_put(ring, q, key):
        """Keep piece ``q``'s key (lw, w0, w1, hash) in its slot of ``ring``."""
        r = (q & (RING_SLOTS - 1)) * 4
        ring[r] = key[0]
        ring[r + 1] = key[1]
        ring[r + 2] = key[2]
        ring[r + 3] = key[3]

    @jit
    def ring_get(ring, q):
        r = (q & (RING_SLOTS - 1)) * 4
        return ring[r], ring[r + 1], ring[r + 2], ring[r + 3]

    @jit
    def encode_range(c0, c1, cps, fl, fold, family, u8, char_start, ls, le, lid, lit0, nlit, bt,
                     ends, sym, rank, nxt, prv, heap, cache, lcache, out_ids, out_s, out_e,
                     n, spans, ring, byte_offsets):  # fmt: skip
        """Tokens of characters ``[c0, c1)``: literals ``lit0..`` inside it, pieces between them.

        ``spans`` False: only ``out_ids`` is written (``out_s``/``out_e`` are left as they
        were) -- the ids-only path, 6-12% faster warm (no character-span lifting).

        ``[c0, c1)`` must start and end at certified cuts (or the text's ends).
        Workspaces: ``ends`` >= c1 - c0 entries, ``sym``/``rank``/``nxt``/``prv`` >=
        the range's bytes, ``heap`` >= 3x that, ``cache`` int64[CACHE_SLOTS, CACHE_COLS]
        (zeroed or carried over from earlier calls of the same tokenizer), ``lcache``
        int64[LONG_SLOTS, LONG_COLS] likewise; ``bt`` the tokenizer's ``BpeTables``;
        ``ring`` int64[RING_WORDS], the keys of the pieces whose rows are on their way.
        ``byte_offsets``: character i starts at byte i (an all-ASCII text: ``char_start`` is
        then 0, 1, 2, ... and the piece loop does not read it -- one int64 fewer per
        character streamed through the caches; spans still read it).
        Returns the new token count.
        """
        k = lit0
        pos = c0
        while pos < c1:
            seg_end = c1
            if k < nlit and ls[k] < c1:
                seg_end = ls[k]
            if seg_end > pos:
                # With no automaton (deepseek) an all-ASCII text read as bytes has no class
                # bits for the matcher: its ASCII pre-tokenizer takes every range, short too.
                if byte_offsets and bt.ascii_pre > 0 and (
                        bt.ascii_pre >> 2 == ASCII_DEEPSEEK
                        or (seg_end - pos >= ASCII_PRETOK_MIN
                            and ascii_scratch(seg_end - pos) <= heap.size)):  # fmt: skip
                    np_ = ascii_pretok(u8, pos, seg_end, fold, bt.ascii_pre, heap, ends, 0)
                elif (not byte_offsets and bt.ascii_pre >> 2 == ASCII_DEEPSEEK
                      and seg_end - pos >= ASCII_PRETOK_MIN
                      and cps_scratch(seg_end - pos) <= heap.size):  # fmt: skip
                    np_ = cps_pretok(cps, fl, pos, seg_end, heap, ends, 0)
                else:
                    np_ = pretokenize_range(cps, fl, fold, pos, seg_end, family, bt, ends, 0)
                ps = pos
                # The keys of the next PREFETCH_AHEAD (= 8) pieces wait in ``ring``: each key
                # is computed once, its table rows requested 8 pieces before they are read
                # (4 ahead, held in registers, left multilingual prose waiting on memory:
                # results/runs/engine-ab/prefetch-ring.txt).
                for q in range(PREFETCH_AHEAD):
                    ring_put(ring, q, piece_key(q, np_, pos, ends, char_start, u8, bt.smap, cache,
                                                byte_offsets))  # fmt: skip
                for q in range(np_):
                    key = ring_get(ring, q)
                    ring_put(ring, q + PREFETCH_AHEAD,
                             piece_key(q + PREFETCH_AHEAD, np_, pos, ends, char_start, u8, bt.smap,
                                       cache, byte_offsets))  # fmt: skip
                    pe = ends[q]
                    if byte_offsets:
                        b0 = ps
                        length = pe - ps
                    else:
                        b0 = char_start[ps]
                        length = char_start[pe] - b0
                    hit = False
                    # Hot path inline (no call with ~20 array arguments): one-byte pieces,
                    # short vocabulary pieces and piece-cache hits; the rest goes through
                    # emit_piece (BPE, then remembered in the cache).
                    if length == 1:
                        out_ids[n] = bt.byte_ids[u8[b0]]
                        if spans:
                            out_s[n] = ps
                            out_e[n] = pe
                        n += 1
                        hit = True
                    elif length <= CACHE_MAX_BYTES:
                        lw, w0, w1, h = key
                        t = short_lookup(bt.smap, lw, w0, w1, h)
                        if t >= 0:  # one token: it spans the whole piece
                            out_ids[n] = t
                            if spans:
                                out_s[n] = ps
                                out_e[n] = pe
                            n += 1
                            hit = True
                        else:
                            r, hdr = cache_find(cache, h, lw, w0, w1)
                            if r >= 0:
                                n_hit = n
                                count = (hdr >> 24) & 0xF
                                b = b0
                                ci = ps
                                cj = ps
                                for k2 in range(count):
                                    w = load_relaxed(cache, r, 3 + (k2 >> 1))
                                    out_ids[n] = (w >> (32 * (k2 & 1))) & 0xFFFFFFFF
                                    if spans:
                                        last = b + ((hdr >> (28 + 4 * k2)) & 0xF)
                                        ci, cj = token_chars(char_start, b, last, ci, cj)
                                        out_s[n] = ci
                                        out_e[n] = cj + 1
                                        b = last + 1
                                    n += 1
                                hit = row_unchanged(cache, r, hdr)
                                if not hit:  # a writer took the row meanwhile: a miss
                                    n = n_hit
                    elif length <= LONG_MAX_BYTES:
                        h = long_words(u8, b0, b0 + length, sym)
                        slot, hdr = long_lookup(lcache, length, sym, h)
                        if slot >= 0:
                            n_hit = n
                            count = (hdr >> 8) & 0xFF
                            b = b0
                            ci = ps
                            cj = ps
                            for k2 in range(count):
                                k_id = 1 + LONG_WORDS + LONG_LEN_WORDS + k2
                                out_ids[n] = load_relaxed(lcache, slot, k_id)
                                if spans:
                                    w = load_relaxed(lcache, slot, 1 + LONG_WORDS + k2 // 7)
                                    last = b + ((w >> (8 * (k2 % 7))) & 0xFF) - 1
                                    ci, cj = token_chars(char_start, b, last, ci, cj)
                                    out_s[n] = ci
                                    out_e[n] = cj + 1
                                    b = last + 1
                                n += 1
                            hit = row_unchanged(lcache, slot, hdr)
                            if not hit:
                                n = n_hit
                    if not hit:
                        n = emit_piece(u8, char_start, ps, pe, bt, sym, rank, nxt, prv, heap,
                                       cache, lcache, out_ids, out_s, out_e, n, spans)
                    ps = pe
            if seg_end < c1:
                out_ids[n] = lid[k]
                out_s[n] = ls[k]
                out_e[n] = le[k]
                n += 1
                pos = le[k]
                k += 1
            else:
                pos = c1
        return n

    # --- UTF-8 ------------------------------------------------------------------------------
    @jit
    def utf8_decode(u8, cps, char_start):
        """Decode valid UTF-8 ``u8`` into code points; ``char_start[i]`` = byte offset of char i."""
        n = 0
        b = 0
        nb = u8.size
        while b < nb:
            cp, k = decode_at(u8, b)
            cps[n] = cp
            char_start[n] = b
            b += k
            n += 1
        char_start[n] = nb
        return n

    # --- shared by the CPU engine and the GPU kernels (one algorithm source, issue #12) ---
    # Each rule below exists once; ``cpu.py`` and the kernels of ``engine.gpu`` call it.
    # Only the data layouts around a call differ (how literals are located, how positions
    # are visited, where the output goes), never the rule.
    @jit
    def decode_at(u8, b):
        """The character starting at byte ``b`` of valid UTF-8: (code point, byte length).

        ``utf8_decode`` walks a text with it; the GPU decodes every character start
        in parallel with it (``gpu.stages.k_decode``).
        """
        x = int(u8[b])
        if x < 0x80:
            return x, 1
        if x < 0xE0:
            return ((x & 0x1F) << 6) | (int(u8[b + 1]) & 0x3F), 2
        if x < 0xF0:
            cp = ((x & 0x0F) << 12) | ((int(u8[b + 1]) & 0x3F) << 6) | (int(u8[b + 2]) & 0x3F)
            return cp, 3
        cp = (
            ((x & 0x07) << 18)
            | ((int(u8[b + 1]) & 0x3F) << 12)
            | ((int(u8[b + 2]) & 0x3F) << 6)
            | (int(u8[b + 3]) & 0x3F)
        )
        return cp, 4

    @jit
    def cut_ok(p, n, edge, inside, cps, fl, class_of, stable, nfc):
        """The certified-cut rule: may a text of ``n`` characters be cut before character ``p``?

        The text's ends and ``edge`` positions (an added-token literal's start or end,
        a document start: the reference splits its input there too) are always cuts;
        a position ``inside`` a literal never is.  Elsewhere a cut needs both
        characters NFC-safe (``nfc``: the tokenizer normalizes with NFC) and a stable
        class pair of the family's cut matrix ``stable[class, class]``.  How a caller
        finds ``edge``/``inside`` is its data layout: the CPU searches its sorted
        literal arrays (``cpu._cut_ok``), the GPU reads a per-character mark
        (``gpu.stages.k_cuts``).
        """
        if p <= 0 or p >= n or edge:
            return True
        if inside:
            return False
        if nfc and ((int(fl[p - 1]) | int(fl[p])) & NFC_UNSAFE) != 0:
            return False
        return stable[class_of[cps[p - 1]], class_of[cps[p]]] != 0

    @jit
    def literal_take(cps, i, pos, stop, first, tkeys, tchild, term, ls, le, lid, n):
        """One step of the leftmost-longest added-token walk, at position ``i``.

        Positions before ``pos`` lie inside the literal taken last and are skipped;
        at ``i >= pos`` the longest literal starting at ``i`` (ending <= ``stop``) is
        appended to (ls, le, lid).  Returns the new (pos, n).  Walkers differ only in
        the positions they visit in increasing order: ``literal_scan`` every position
        whose code point starts a literal; the GPU computes ``literal_at`` at every
        candidate in parallel (``k_lit_match``) and walks the matches (``k_lit_walk``).
        """
        if i >= pos:
            e, t = literal_at(cps, i, stop, first, tkeys, tchild, term)
            if e > 0:
                ls[n] = i
                le[n] = e
                lid[n] = t
                return e, n + 1
        return pos, n

    @jit
    def token_chars(char_start, b, last, ci, cj):
        """A token's character span from its bytes: the characters holding byte ``b`` (its
        first) and byte ``last``, searched forward from ``ci`` and ``cj``; returns (ci, cj).

        The span is ``[ci, cj + 1)``: a token that cuts a character (byte-level BPE)
        gets the whole character, and so does its neighbour.  Callers walk a piece's
        tokens in order, so each search continues where the previous token's ended
        (``emit_piece``, the piece-cache hits of ``encode_range``; the GPU's ``k_output``).
        """
        while char_start[ci + 1] <= b:
            ci += 1
        while char_start[cj + 1] <= last:
            cj += 1
        return ci, cj

    @jit
    def merge_link(sym, nxt, prv, k, new):
        """The BPE merge step on a linked list of symbols: the live symbol at ``k`` and its
        right neighbour become ``new`` (at ``k``; the neighbour dies, ``sym = -1``).

        Returns the next live position after ``k`` (-1: none) so the caller can
        re-rank the two pairs that changed -- the CPU pushes them on its heap
        (``merge_large``), the GPU rewrites its per-position rank array
        (``gpu.bpe.merge_at``).  A few stores and no lookups: numba inlines it, so
        the CPU path keeps its speed.
        """
        j = nxt[k]
        sym[k] = new
        sym[j] = -1
        nj = nxt[j]
        nxt[k] = nj
        if nj >= 0:
            prv[nj] = k
        return nj

    # --- SentencePiece BPE (family F_SENTENCEPIECE; ``engine.sentencepiece``) ---------------
    # A segment (text between added literals) is one BPE word over its characters, "▁"
    # prepended, spaces as "▁", characters outside the vocabulary as byte tokens.  It is
    # merged piece by piece, cut where no merge can cross (the module docstring there).
    @jit
    def sp_class(char_ids, c):
        """SP_SPACE (" " or "▁"), SP_OTHER (a one-character entry) or SP_BYTES (byte fallback)."""
        if c == 32 or c == METASPACE:
            return SP_SPACE
        if c < char_ids.size and char_ids[c] >= 0:
            return SP_OTHER
        return SP_BYTES

    @jit
    def sp_joinable(bigrams, ascii_pairs, a, b):
        """May a merge ever join characters ``a`` and ``b``?  Only if some vocabulary entry
        holds them adjacent (spaces as "▁"): every merge makes an entry, so otherwise none
        can.  ASCII pairs come from a 2 KB bit table, the rest from a hash set."""
        if a == 32:
            a = METASPACE
        if b == 32:
            b = METASPACE
        if a < 128 and b < 128:
            q = (int(a) << 7) | int(b)
            return (ascii_pairs[q >> 6] >> (q & 63)) & 1 != 0
        key = (int(a) << 21) | int(b)
        mask = bigrams.size - 1
        h = (((key * 0x9E3779B1) & M63) >> 16) & mask
        while True:
            k = bigrams[h]
            if k == key:
                return True
            if k < 0:
                return False
            h = (h + 1) & mask

    @jit
    def sp_key(u8, b0, b1, prepend):
        """Exact piece-cache key (lw, w0, w1) of a piece's bytes, "▁" (E2 96 81) first if
        ``prepend``: the layout of ``piece_words`` (at most CACHE_MAX_BYTES)."""
        lw = b1 - b0
        w0 = 0
        w1 = 0
        d = 0
        if prepend:
            lw += 3
            w0 = 0x8196E2  # E2 96 81, little-endian
            d = 3
        for k in range(b0, b1):
            v = int(u8[k])
            if d < 7:
                w0 = w0 | (v << (8 * d))
            elif d < 14:
                w1 = w1 | (v << (8 * (d - 7)))
            else:
                lw = lw | (v << (8 * (d - 13)))
            d += 1
        return lw, w0, w1

    @jit
    def sp_spans(nchars, ids, i0, i1, ps, prepend, out_s, out_e):
        """Character spans of the tokens ``ids[i0:i1]`` of a piece starting at character ``ps``:
        a token's normalized length is a function of its id; the prepended "▁" belongs to
        the first character (alone, it gets that character's span)."""
        a = 0
        p = 1 if prepend else 0
        for t in range(i0, i1):
            w = nchars[ids[t]]
            s = ps + max(a - p, 0)
            e = ps + a + w - p
            if e <= s:
                e = s + 1
            out_s[t] = s
            out_e[t] = e
            a += w

    @jit
    def sp_merge(cps, ps, pe, prepend, char_ids, space_id, bt, sym, rank, nxt, prv, heap):
        """BPE of the piece ``[ps, pe)`` (spaces, then other characters): ``sym[:m]``, m returned."""
        m = 0
        if prepend:
            sym[0] = space_id
            m = 1
        for i in range(ps, pe):
            c = cps[i]
            if c == 32 or c == METASPACE:
                sym[m] = space_id
            else:
                sym[m] = char_ids[c]
            m += 1
        for k in range(m - 1):
            rank[k] = pair_code(bt, sym[k], sym[k + 1])
        if m <= SMALL_PIECE:
            return merge_small(sym, rank, m, bt)
        return merge_large(sym, rank, nxt, prv, heap, m, bt)

    @jit
    def sp_segment(cps, u8, char_start, lo, hi, prepend, sp, bt, sym, rank, nxt, prv, heap,
                   cache, use_cache, out_ids, out_s, out_e, n):  # fmt: skip
        """Tokens of characters ``[lo, hi)`` of one segment (no literal inside), from ``n``.

        ``prepend``: ``lo`` starts the segment (the reference's "▁" goes first).  The
        piece loop, a cache hit and the spans are inline (passing the table tuples to a
        call costs more than a cached piece); a miss calls the merges.  ``use_cache``:
        the CPU engine's piece cache (shared seqlock rows); the GPU passes none.
        Workspaces: ``sym``.. hold the longest piece plus one, ``heap`` three times that.
        """
        char_ids = sp.char_ids
        nchars = sp.nchars
        space_id = sp.space_id
        i = lo
        first = prepend
        while i < hi:
            c = cps[i]
            k = sp_class(char_ids, c)
            if k == SP_BYTES:
                if first:  # "▁" then a byte-fallback character: never merged, a piece alone
                    out_ids[n] = space_id
                    out_s[n] = i
                    out_e[n] = i + 1
                    n += 1
                for b in range(char_start[i], char_start[i + 1]):
                    out_ids[n] = sp.byte_tok[u8[b]]
                    out_s[n] = i
                    out_e[n] = i + 1
                    n += 1
                first = False
                i += 1
                continue
            # A piece: spaces, then other characters (the certificate's cut), and shorter
            # still: it ends where no vocabulary entry holds the two characters adjacent.
            j = i + 1
            prev_space = k == SP_SPACE
            while j < hi:
                kj = sp_class(char_ids, cps[j])
                if kj == SP_BYTES or (kj == SP_SPACE and not prev_space):
                    break
                if not sp_joinable(sp.bigrams, sp.ascii_pairs, cps[j - 1], cps[j]):
                    break
                prev_space = kj == SP_SPACE
                j += 1
            if j == i + 1 and not first:  # one character: its own token
                out_ids[n] = space_id if k == SP_SPACE else char_ids[c]
                out_s[n] = i
                out_e[n] = j
                n += 1
                i = j
                continue
            b0 = char_start[i]
            b1 = char_start[j]
            cacheable = use_cache and b1 - b0 + (3 if first else 0) <= CACHE_MAX_BYTES
            hit = False
            m = 0
            lw = 0
            w0 = 0
            w1 = 0
            h = 0
            if cacheable:
                lw, w0, w1 = sp_key(u8, b0, b1, first)
                h = piece_hash(lw, w0, w1)
                r, hdr = cache_find(cache, h, lw, w0, w1)
                if r >= 0:
                    m = (hdr >> 24) & 0xF
                    for q in range(m):
                        w = load_relaxed(cache, r, 3 + (q >> 1))
                        out_ids[n + q] = (w >> (32 * (q & 1))) & 0xFFFFFFFF
                    hit = row_unchanged(cache, r, hdr)
            if not hit:
                m = sp_merge(cps, i, j, first, char_ids, space_id, bt, sym, rank, nxt, prv, heap)
                for q in range(m):
                    out_ids[n + q] = sym[q]
                if cacheable:
                    cache_store(cache, h, lw, w0, w1, out_ids, n, n + m, sp.ones)
            sp_spans(nchars, out_ids, n, n + m, i, first, out_s, out_e)
            n += m
            first = False
            i = j
        return n

    @jit
    def sp_range(c0, c1, prepend0, cps, u8, char_start, ls, le, lid, lit0, nlit, sp, bt, sym,
                 rank, nxt, prv, heap, cache, use_cache, out_ids, out_s, out_e, n):  # fmt: skip
        """Tokens of characters ``[c0, c1)``: literals ``lit0..`` inside it, segments between.

        ``prepend0``: ``c0`` starts a segment (the text's start or a literal's end); a
        range starting at a certified cut inside a segment has no "▁" of its own.
        """
        k = lit0
        pos = c0
        prepend = prepend0
        while pos < c1:
            seg_end = c1
            if k < nlit and ls[k] < c1:
                seg_end = ls[k]
            if seg_end > pos:
                n = sp_segment(cps, u8, char_start, pos, seg_end, prepend, sp, bt, sym, rank, nxt,
                               prv, heap, cache, use_cache, out_ids, out_s, out_e, n)  # fmt: skip
            if seg_end < c1:
                out_ids[n] = lid[k]
                out_s[n] = ls[k]
                out_e[n] = le[k]
                n += 1
                pos = le[k]
                k += 1
                prepend = True
            else:
                pos = c1
        return n

    class Rules:
        pass

    ns = Rules()
    for name, fn in list(locals().items()):
        if name not in ("jit", "ns", "Rules", "prefetch_row") and not name.startswith("_"):
            setattr(ns, name, fn)
    return ns
