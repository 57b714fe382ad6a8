"""The byte-level pre-tokenizers as table-driven automata (the CPU's fast form): the cl100k
lineage's (llama3, qwen3, qwen3.6, cl100k) whole, o200k's and tekken's up to the characters
it hands to the matcher (below).

``rules.cl_next`` is the readable form: from a piece start it tries the regex's
alternatives in order.  Its cost on a CPU is branch mispredictions: which alternative
matches and where each class run ends are data-dependent, ~3 mispredictions a piece
(~25 ns per piece, 5.3 ns per character of code on the 2-vCPU Intel VM).  Here the same
pattern is a deterministic automaton over eleven character classes, read one
character at a time with one table load and no data-dependent branch except at the
rare boundaries that need a look back (``rules.dfa_segment``): ~3.6 ns per character.

Why a finite automaton suffices (``(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+
|\\p{N}{1,d}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+``, letters widened by
marks for qwen3.6): every alternative but the whitespace ones decides its end with at
most two characters of look-ahead, which states hold (``SA``/``SAR``/``SAL`` for the
contractions, ``SP1``/``SSP`` for the optional leading character).  A whitespace run
ends (a) after its last CR/LF and (b) before its last character when that is followed
by a non-space; neither is known until the run ends, so the run's states remember only
what the end needs (a CR/LF seen, 1 or >= 2 characters after it, the last one a space
or another blank) and the transition out of the run emits "boundary before the
previous character" (``E1``) and, when a CR/LF came earlier, "boundary after the last
CR/LF" (``EP``: ``rules.dfa_segment`` finds it by scanning back over the run).

o200k and tekken (``build_o200k_table``) add case-aware words, an apostrophe that may begin
a contraction suffix (two more characters decide: ``E2`` puts the boundary back before the
apostrophe when none follows), ``/`` in punctuation tails, and ``DEFER``: at a character the
automaton does not model the family's matcher takes over from the last boundary.

Two characters a read (``build_pairs``): the table read is a chain -- the next state is
needed before the next read -- so one read per character costs a load's latency per
character.  A second table, the single one composed with itself, answers two characters
in one read where neither step places a boundary behind or defers (the common case: the
two "boundary before" bits come with it); otherwise the single table takes one step.  A
state's row holds 32 x 32 two-byte entries (any two classes: the cl100k lineage's eleven,
o200k's eighteen), 45-49 KB a table, of which the rows of classes that occur (15-27 KB) are
read: 1.25-1.55x faster than one read a character, 1.06-1.11x a whole one-thread encode
(``results/runs/engine-ab/pretok-pairs.txt``).

The automata are tested against the matchers on every short string over each class and on
adversarial strings (``tests/test_pretok_dfa.py``) and certified inside the engine's campaigns.
"""

from __future__ import annotations

import numpy as np

from . import rules

# Character classes (columns) of the cl100k lineage; the letters the contractions name are
# classes of their own.
K_L, K_LS, K_LR, K_LL, K_LE, K_N, K_SP, K_W, K_R, K_A, K_P = range(11)
COLS = 32  # a state's row: the classes, then column EOF_COL: the flags at the segment's end
EOF_COL = 31
LETTERS = (K_L, K_LS, K_LR, K_LL, K_LE)
# Flags: a boundary before this character (E0), before the previous one (E1), before the one
# two back (E2), after the whitespace run's last CR/LF (EP); DEFER: the family's matcher
# takes over from the last boundary (a case the automaton does not model).
E0, E1, EP, DEFER, E2 = 1, 2, 4, 8, 16
# The pair table (``build_pairs``): a state's row has PAIR_COLS columns, (a << 5) | b for the
# classes a, b of two characters; an entry (int16) is the state after both (its pair-table
# row offset, state * PAIR_COLS: the next read's index is that plus the classes, one add
# on the chain of reads) | P0 (a boundary before the first) | P1 (before the second), or
# PSLOW: take one step with the single table instead (its row: the offset >> PAIR_SHIFT).
PAIR_SHIFT = 5
PAIR_COLS = 1 << (2 * PAIR_SHIFT)
P0, P1, PSLOW = 1, 2, 4
FAMILIES = {rules.F_CL100K: (3, False), rules.F_QWEN: (1, False), rules.F_QWEN_LM: (1, True)}
O200K_FAMILIES = {rules.F_O200K: (3, True), rules.F_TEKKEN: (1, False)}  # dmax, contractions
CONTRACTION_CLASSES = {"s": K_LS, "t": K_LS, "m": K_LS, "d": K_LS, "r": K_LR, "v": K_LR,
                       "l": K_LL, "e": K_LE}  # fmt: skip


# A whitespace run's states (both lineages): run state -> (after a space, after another blank)
AFTER_BLANK = {
    "WR": ("WRSP1", "WRW1"), "SSP": ("WSP2", "WW2"), "SW1": ("WSP2", "WW2"),
    "WSP2": ("WSP2", "WW2"), "WW2": ("WSP2", "WW2"), "WRSP1": ("WRSP2", "WRW2"),
    "WRW1": ("WRSP2", "WRW2"), "WRSP2": ("WRSP2", "WRW2"), "WRW2": ("WRSP2", "WRW2"),
}  # fmt: skip
# ... and run state -> (its last character is a space, flags when a non-blank follows)
RUN_END = {
    "SSP": (True, 0), "SW1": (False, 0), "WSP2": (True, E1), "WW2": (False, E1),
    "WRSP1": (True, E1), "WRW1": (False, E1), "WRSP2": (True, EP | E1),
    "WRW2": (False, EP | E1),
}  # fmt: skip
WITH_CRLF = ("WRSP1", "WRW1", "WRSP2", "WRW2")  # at the segment's end: EP, the rest is a piece


def _whitespace_rows(put, s, k, blanks, cut, lead) -> None:
    """The whitespace states' entries for class ``k``; ``blanks`` = (CR/LF, space, other blank)
    classes, ``cut``/``lead`` the lineage's rules for a piece that begins at / after the run."""
    crlf, space, blank = blanks
    for st, (after_space, after_blank) in AFTER_BLANK.items():
        if k == crlf:
            put(st, k, s["WR"])
        elif k == space:
            put(st, k, s[after_space])
        elif k == blank:
            put(st, k, s[after_blank])
        elif st == "WR":
            put(st, k, *cut(k))
        else:
            last_space, flags = RUN_END[st]
            nxt, f = lead(last_space, k)
            put(st, k, nxt, flags | f)


def states(dmax: int) -> list[str]:
    """State names; BEGIN (a segment's start: no boundary before its first character) is 0."""
    return ["BEGIN", "SL", "SDONE", "SA", "SAR", "SAL", "SP1", "PR", "PC", "WR", "SSP", "SW1",
            "WSP2", "WW2", "WRSP1", "WRW1", "WRSP2", "WRW2",
            *(f"N{j}" for j in range(1, dmax + 1))]  # fmt: skip


def build_table(dmax: int) -> np.ndarray:
    """int32[n_states * COLS]: entry = next state's row offset (state * COLS) | flags.

    States: SL letters; N<j> j digits; SDONE a complete contraction; SA an apostrophe at
    a piece start, SAR/SAL after "'r"/"'v" or "'l"; SP1 one other character at a piece
    start; PR a punctuation run, PC its CR/LF tail; WR a whitespace run ending in CR/LF;
    SSP/SW1 one space / other blank at a piece start; W<last><count> a run without CR/LF,
    WR<last><count> one with, by its last character and how many follow the last CR/LF.
    """
    names = states(dmax)
    s = {n: i for i, n in enumerate(names)}
    table = np.zeros((len(names), COLS), dtype=np.int32)

    def start(k: int) -> int:  # the state after character class k begins a piece
        if k in LETTERS:
            return s["SL"]
        return {K_N: s["N1"], K_SP: s["SSP"], K_W: s["SW1"], K_R: s["WR"], K_A: s["SA"],
                K_P: s["SP1"]}[k]  # fmt: skip

    def cut(k: int) -> tuple[int, int]:  # a boundary before this character, which begins a piece
        return start(k), E0

    def lead(last_space: bool, k: int) -> tuple[int, int]:
        """A run's last blank begins a piece followed by class k: letters join it, and
        punctuation joins a space (`` ?[^\\s...]+``), anything else starts its own."""
        if k in LETTERS:
            return s["SL"], 0
        if last_space and k in (K_A, K_P):
            return s["PR"], 0
        return cut(k)

    def put(state: str, k: int, nxt: int, flags: int = 0) -> None:
        table[s[state], k] = nxt * COLS | flags

    for k in range(11):
        put("BEGIN", k, start(k))
        put("SDONE", k, *cut(k))
        put("SL", k, *((s["SL"], 0) if k in LETTERS else cut(k)))
        for j in range(1, dmax + 1):
            more = k == K_N and j < dmax
            put(f"N{j}", k, *((s[f"N{j + 1}"], 0) if more else cut(k)))
        # Another character at a piece start: a letter follows it (it leads the word), else
        # punctuation goes on (a run, its CR/LF tail), else it is a piece of its own.
        if k in LETTERS:
            lone = (s["SL"], 0)
        elif k in (K_A, K_P):
            lone = (s["PR"], 0)
        elif k == K_R:
            lone = (s["PC"], 0)
        else:
            lone = cut(k)
        put("SP1", k, *lone)
        # An apostrophe there: a contraction first, else as any other such character.
        contraction = {K_LS: "SDONE", K_LR: "SAR", K_LL: "SAL"}
        put("SA", k, *((s[contraction[k]], 0) if k in contraction else lone))
        for st, done in (("SAR", K_LE), ("SAL", K_LL)):  # "'re"/"'ve", "'ll"; else letters
            put(st, k, *((s["SDONE"], 0) if k == done else
                         (s["SL"], 0) if k in LETTERS else cut(k)))  # fmt: skip
        put("PR", k, *((s["PR"], 0) if k in (K_A, K_P) else (s["PC"], 0) if k == K_R else cut(k)))
        put("PC", k, *((s["PC"], 0) if k == K_R else cut(k)))
        _whitespace_rows(put, s, k, (K_R, K_SP, K_W), cut, lead)
    for st in WITH_CRLF:
        table[s[st], EOF_COL] = EP
    return table.ravel().copy()


def build_classes(bits: np.ndarray, fold: np.ndarray, marks: bool) -> np.ndarray | None:
    """uint8 class per code point, or None when a character the contractions fold to a
    letter is not itself a letter (the automaton assumes it; ``cl_next`` would not)."""
    letter = rules.B_L | (rules.B_M if marks else 0)
    is_letter = (bits & letter) != 0
    cls = np.full(bits.size, K_P, dtype=np.uint8)
    cls[(bits & rules.B_WS) != 0] = K_W
    cls[((bits & rules.B_N) != 0) & ~is_letter] = K_N
    cls[is_letter] = K_L
    for ch, k in CONTRACTION_CLASSES.items():
        sel = fold == ord(ch)
        if not is_letter[sel].all():
            return None
        cls[sel] = k
    if not all(bits[c] & rules.B_WS for c in (9, 10, 13, 32)) or bits[39] & (letter | rules.B_N):
        return None
    cls[32], cls[10], cls[13], cls[39] = K_SP, K_R, K_R, K_A
    return cls


def build(family: int, bits: np.ndarray, fold: np.ndarray) -> tuple[np.ndarray, ...]:
    """(classes, table, pairs) for ``rules.dfa_segment``; three one-element arrays (the
    automaton off: ``rules.pretokenize_range`` uses the family's matcher) for other families."""
    off = (np.zeros(1, dtype=np.uint8), np.zeros(1, dtype=np.int32), np.zeros(1, dtype=np.int16))
    if family in O200K_FAMILIES:
        dmax, contractions = O200K_FAMILIES[family]
        cls = build_o200k_classes(bits, fold, contractions)
        table = None if cls is None else build_o200k_table(dmax, contractions)
    elif family in FAMILIES:
        dmax, marks = FAMILIES[family]
        cls = build_classes(bits, fold, marks)
        table = None if cls is None else build_table(dmax)
    else:
        return off
    return off if table is None else (cls, table, build_pairs(table))


def build_pairs(table: np.ndarray) -> np.ndarray:
    """The single table composed with itself: one entry per state and pair of classes
    (both below 32), PSLOW where either step has a flag other than E0."""
    t = table.reshape(-1, COLS)
    ncls = 1 << PAIR_SHIFT
    a = np.arange(ncls)[:, None]
    b = np.arange(ncls)[None, :]
    out = np.empty((t.shape[0], ncls, ncls), dtype=np.int16)
    assert t.shape[0] * PAIR_COLS < 1 << 15  # a pair row offset fits an int16
    flat = t.reshape(-1)
    for s in range(t.shape[0]):
        x1 = t[s, :ncls][a]  # (ncls, 1)
        x2 = flat[(x1 & ~(COLS - 1)) + b]  # the second step, from x1's state
        slow = ((x1 | x2) & (COLS - 1 - E0)) != 0  # E1, EP, DEFER or E2
        after = (x2 // COLS) * PAIR_COLS  # the next state's pair row offset
        fast = after | np.where(x1 & E0, P0, 0) | np.where(x2 & E0, P1, 0)
        out[s] = np.where(slow, PSLOW, fast)
    return out.reshape(-1)


# --- o200k (gpt-oss) and tekken ---------------------------------------------------------------
# Words are case-aware: [Lu Lt Lm Lo M]*[Ll Lm Lo M]+ | [Lu Lt Lm Lo M]+[Ll Lm Lo M]*, with an
# optional contraction suffix for o200k.  Over upper (Lu, Lt) and lower (Ll) letters alone a
# word ends where a lower letter is followed by an upper one, or where the letters end; a
# shared character (Lm, Lo, M: X) can end a word at the last one of a run with no lower
# letter, which needs unbounded look-ahead: at an X the matcher (``rules.o200k_next``) takes
# over from the last boundary (``DEFER``) -- code and Latin, Greek, Cyrillic prose stay in the
# automaton; most other scripts are Lo and go to the matcher, as before.
(O_U, O_L, O_X, O_SU, O_SL, O_RU, O_RL, O_LU, O_LL, O_EU, O_EL,
 O_N, O_SP, O_W, O_R, O_A, O_SLASH, O_P) = range(18)  # fmt: skip
O_LETTERS = (O_U, O_L, O_SU, O_SL, O_RU, O_RL, O_LU, O_LL, O_EU, O_EL)
O_UPPER = (O_U, O_SU, O_RU, O_LU, O_EU)
O_CONTRACTION = {"s": (O_SU, O_SL), "t": (O_SU, O_SL), "m": (O_SU, O_SL), "d": (O_SU, O_SL),
                 "r": (O_RU, O_RL), "v": (O_RU, O_RL), "l": (O_LU, O_LL), "e": (O_EU, O_EL)}  # fmt: skip


def o200k_states(dmax: int) -> list[str]:
    return ["BEGIN", "SDONE", "WU", "WL", "WA", "WARU", "WARL", "WALU", "WALL", "SP1", "PR", "PC",
            "WR", "SSP", "SW1", "WSP2", "WW2", "WRSP1", "WRW1", "WRSP2", "WRW2",
            *(f"N{j}" for j in range(1, dmax + 1))]  # fmt: skip


def build_o200k_table(dmax: int, contractions: bool) -> np.ndarray:
    """int32[n_states * COLS], as ``build_table``.  States: WU/WL a word whose letters so far
    are all upper / include a lower one; WA a word then an apostrophe (o200k), WAR*/WAL* then
    r or v / l (by that letter's case: if the contraction fails, the apostrophe leads a new
    word of that case); SP1 a punctuation character at a piece start (it may lead a word);
    PR a punctuation run, PC its [\r\n/]* tail; the whitespace states as ``build_table``'s."""
    names = o200k_states(dmax)
    s = {n: i for i, n in enumerate(names)}
    table = np.zeros((len(names), COLS), dtype=np.int32)

    def word(k: int) -> int:
        return s["WU"] if k in O_UPPER else s["WL"]

    def start(k: int) -> tuple[int, int]:  # (state, flags) when class k begins a piece
        if k in O_LETTERS:
            return word(k), 0
        if k == O_X:
            return 0, DEFER
        return {O_N: s["N1"], O_SP: s["SSP"], O_W: s["SW1"], O_R: s["WR"], O_A: s["SP1"],
                O_SLASH: s["SP1"], O_P: s["SP1"]}[k], 0  # fmt: skip

    def cut(k: int) -> tuple[int, int]:
        nxt, f = start(k)
        return nxt, f | E0

    def in_word(upper_only: bool, k: int) -> tuple[int, int]:
        if k in O_LETTERS:
            if not upper_only and k in O_UPPER:  # a lower letter, then an upper one: a new word
                return s["WU"], E0
            return (s["WU"] if upper_only and k in O_UPPER else s["WL"]), 0
        if k == O_X:
            return 0, DEFER
        if k == O_A and contractions:
            return s["WA"], 0
        return cut(k)

    def lead(last_space: bool, k: int) -> tuple[int, int]:  # a run's last blank begins a piece
        if k in O_LETTERS:
            return word(k), 0
        if k == O_X:
            return 0, DEFER
        if last_space and k in (O_A, O_SLASH, O_P):
            return s["PR"], 0
        return cut(k)

    def put(state: str, k: int, nxt: int, flags: int = 0) -> None:
        table[s[state], k] = nxt * COLS | flags

    punct = (O_A, O_SLASH, O_P)
    for k in range(18):
        put("BEGIN", k, *start(k))
        put("SDONE", k, *cut(k))
        put("WU", k, *in_word(True, k))
        put("WL", k, *in_word(False, k))
        for j in range(1, dmax + 1):
            more = k == O_N and j < dmax
            put(f"N{j}", k, *((s[f"N{j + 1}"], 0) if more else cut(k)))
        # after a word and an apostrophe: a contraction, else the apostrophe begins a piece
        if k in (O_SU, O_SL):
            put("WA", k, s["SDONE"])
        elif k in (O_RU, O_RL):
            put("WA", k, s["WARU" if k == O_RU else "WARL"])
        elif k in (O_LU, O_LL):
            put("WA", k, s["WALU" if k == O_LU else "WALL"])
        elif k in O_LETTERS:
            put("WA", k, word(k), E1)
        elif k == O_X:
            put("WA", k, 0, DEFER)
        elif k in punct:
            put("WA", k, s["PR"], E1)
        elif k == O_R:
            put("WA", k, s["PC"], E1)
        else:
            nxt, f = cut(k)
            put("WA", k, nxt, f | E1)
        for st, done, upper in (("WARU", (O_EU, O_EL), True), ("WARL", (O_EU, O_EL), False),
                                ("WALU", (O_LU, O_LL), True), ("WALL", (O_LU, O_LL), False)):  # fmt: skip
            if k in done:
                put(st, k, s["SDONE"])
            else:  # no contraction: the apostrophe leads a word of the letter's case
                nxt, f = in_word(upper, k)
                put(st, k, nxt, f | E2)
        if k in O_LETTERS:
            put("SP1", k, word(k))
        elif k == O_X:
            put("SP1", k, 0, DEFER)
        elif k in punct:
            put("SP1", k, s["PR"])
        elif k == O_R:
            put("SP1", k, s["PC"])
        else:
            put("SP1", k, *cut(k))
        if k == O_X:  # a mark may go on with the punctuation run, a letter may not
            put("PR", k, 0, DEFER)
        else:
            put("PR", k, *((s["PR"], 0) if k in punct else (s["PC"], 0) if k == O_R else cut(k)))
        put("PC", k, *((s["PC"], 0) if k in (O_R, O_SLASH) else cut(k)))
        _whitespace_rows(put, s, k, (O_R, O_SP, O_W), cut, lead)
    for st in WITH_CRLF:
        table[s[st], EOF_COL] = EP
    table[s["WA"], EOF_COL] = E1  # a word, then a lone apostrophe at the end
    for st in ("WARU", "WARL", "WALU", "WALL"):
        table[s[st], EOF_COL] = E2
    return table.ravel().copy()


def build_o200k_classes(bits: np.ndarray, fold: np.ndarray, contractions: bool):
    """uint8 o200k class per code point, or None where an assumption fails (a contraction
    letter that is not an upper or lower letter; the ASCII blanks and apostrophe)."""
    upper = (bits & (rules.B_LU | rules.B_LT)) != 0
    lower = (bits & rules.B_LL) != 0
    shared = (bits & (rules.B_LM | rules.B_LO | rules.B_M)) != 0
    letter = (bits & rules.B_L) != 0
    cls = np.full(bits.size, O_P, dtype=np.uint8)
    cls[(bits & rules.B_WS) != 0] = O_W
    cls[((bits & rules.B_N) != 0) & ~letter] = O_N
    cls[shared | (letter & ~upper & ~lower)] = O_X
    cls[upper & ~shared] = O_U
    cls[lower & ~shared & ~upper] = O_L
    if contractions:
        for ch, (ku, kl) in O_CONTRACTION.items():
            sel = fold == ord(ch)
            if not (upper[sel] ^ lower[sel]).all() or shared[sel].any():
                return None
            cls[sel & upper] = ku
            cls[sel & lower] = kl
    if not all(bits[c] & rules.B_WS for c in (9, 10, 13, 32)):
        return None
    wordish = rules.B_L | rules.B_N | rules.B_M
    if bits[39] & wordish or bits[47] & wordish:
        return None
    cls[32], cls[10], cls[13], cls[39], cls[47] = O_SP, O_R, O_R, O_A, O_SLASH
    return cls
