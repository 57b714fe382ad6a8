"""The cl100k-lineage pre-tokenizer as a table-driven automaton (the CPU's fast form).

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

The automaton is tested against ``cl_next`` on adversarial strings over every class
(``tests/test_pretok_dfa.py``) and certified inside the engine's campaigns.
"""

from __future__ import annotations

import numpy as np

from . import rules

# Character classes (columns); the letters the contractions name are classes of their own.
K_L, K_LS, K_LR, K_LL, K_LE, K_N, K_SP, K_W, K_R, K_A, K_P = range(11)
COLS = 16  # a state's row: 11 classes, column EOF_COL the flags at the segment's end
EOF_COL = 15
LETTERS = (K_L, K_LS, K_LR, K_LL, K_LE)
# Flags: a boundary before this character / before the previous one / after the run's last CR/LF.
E0, E1, EP = 1, 2, 4
FAMILIES = {rules.F_CL100K: (3, False), rules.F_QWEN: (1, False), rules.F_QWEN_LM: (1, True)}
CONTRACTION_CLASSES = {"s": K_LS, "t": K_LS, "m": K_LS, "d": K_LS, "r": K_LR, "v": K_LR,
                       "l": K_LL, "e": K_LE}  # fmt: skip


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

    after_blank = {  # run state -> (after a space, after another blank)
        "WR": ("WRSP1", "WRW1"), "SSP": ("WSP2", "WW2"), "SW1": ("WSP2", "WW2"),
        "WSP2": ("WSP2", "WW2"), "WW2": ("WSP2", "WW2"), "WRSP1": ("WRSP2", "WRW2"),
        "WRW1": ("WRSP2", "WRW2"), "WRSP2": ("WRSP2", "WRW2"), "WRW2": ("WRSP2", "WRW2"),
    }  # fmt: skip
    run_end = {  # run state -> (its last character is a space, flags when a non-blank follows)
        "SSP": (True, 0), "SW1": (False, 0), "WSP2": (True, E1), "WW2": (False, E1),
        "WRSP1": (True, E1), "WRW1": (False, E1), "WRSP2": (True, EP | E1),
        "WRW2": (False, EP | E1),
    }  # fmt: skip

    def put(state: str, k: int, nxt: int, flags: int = 0) -> None:
        table[s[state], k] = nxt * COLS | flags

    for k in range(11):
        put("BEGIN", k, start(k))
        put("SDONE", k, *cut(k))
        put("SL", k, *((s["SL"], 0) if k in LETTERS else cut(k)))
        for j in range(1, dmax + 1):
            more = k == K_N and j < dmax
            put(f"N{j}", k, *((s[f"N{j + 1}"], 0) if more else cut(k)))
        # An apostrophe at a piece start: a contraction, else a leading character, else punctuation.
        if k == K_LS:
            put("SA", k, s["SDONE"])
        elif k == K_LR:
            put("SA", k, s["SAR"])
        elif k == K_LL:
            put("SA", k, s["SAL"])
        elif k in LETTERS:
            put("SA", k, s["SL"])
        elif k in (K_A, K_P):
            put("SA", k, s["PR"])
        elif k == K_R:
            put("SA", k, s["PC"])
        else:
            put("SA", k, *cut(k))
        for st, done in (("SAR", K_LE), ("SAL", K_LL)):  # "'re"/"'ve", "'ll"; else letters
            put(st, k, *((s["SDONE"], 0) if k == done else
                         (s["SL"], 0) if k in LETTERS else cut(k)))  # fmt: skip
        if k in LETTERS:
            put("SP1", k, s["SL"])
        elif k in (K_A, K_P):
            put("SP1", k, s["PR"])
        elif k == K_R:
            put("SP1", k, s["PC"])
        else:
            put("SP1", k, *cut(k))
        put("PR", k, *((s["PR"], 0) if k in (K_A, K_P) else (s["PC"], 0) if k == K_R else cut(k)))
        put("PC", k, *((s["PC"], 0) if k == K_R else cut(k)))
        for st, (sp, blank) in after_blank.items():
            if k == K_R:
                put(st, k, s["WR"])
            elif k == K_SP:
                put(st, k, s[sp])
            elif k == K_W:
                put(st, k, s[blank])
            elif st == "WR":
                put(st, k, *cut(k))
            else:
                last_space, flags = run_end[st]
                nxt, f = lead(last_space, k)
                put(st, k, nxt, flags | f)
    for st in ("WRSP1", "WRW1", "WRSP2", "WRW2"):  # at the end: after the last CR/LF, the rest
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


def build(family: int, bits: np.ndarray, fold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(classes, table) for ``rules.dfa_segment``; two one-element arrays (the automaton
    off: ``rules.pretokenize_range`` uses the family's matcher) for other families."""
    off = (np.zeros(1, dtype=np.uint8), np.zeros(1, dtype=np.int32))
    if family not in FAMILIES:
        return off
    dmax, marks = FAMILIES[family]
    cls = build_classes(bits, fold, marks)
    if cls is None:
        return off
    return cls, build_table(dmax)
