"""Certificate-level oracle: is each claimed stable class pair really synchronizing?

For a pair (a, b) it draws left contexts ``L`` ending in a class-a character and
right contexts ``R``, ``R'`` starting with a class-b character (characters from
the probed class tables, astral planes included) and asks the reference
pre-tokenizer whether (1) ``L + R`` splits exactly at ``len(L)``, (2) the pieces
right of it are the pieces of ``R`` alone, and (3) the pieces left of it are the
same as in ``L + R'``.  Every pair is tried, claimed or not, so the report also
shows which unclaimed pairs are provably unstable (a counterexample) and which
merely went uncontradicted.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field

import numpy as np

from ..families import stability
from ..families.classes import NFC_UNSAFE, NORM_CHANGES


@dataclass
class PairResult:
    prev: str
    next: str
    claimed: bool
    trials: int = 0
    failures: int = 0
    example: dict | None = None


@dataclass
class OracleReport:
    tokenizer: str
    family: str
    trials_per_pair: int
    pairs: list[PairResult] = field(default_factory=list)

    @property
    def claimed_failures(self) -> int:
        return sum(p.failures for p in self.pairs if p.claimed)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["claimed_pairs"] = sum(p.claimed for p in self.pairs)
        d["claimed_trials"] = sum(p.trials for p in self.pairs if p.claimed)
        d["claimed_failures"] = self.claimed_failures
        d["unclaimed_with_counterexample"] = sum(
            1 for p in self.pairs if not p.claimed and p.failures
        )
        return d


class _Sampler:
    def __init__(self, tok, rng: random.Random):
        r = stability.rules(tok.family)
        cmap = stability.class_map_for(tok)
        bits = tok.class_table.bits
        usable = np.ones(cmap.size, dtype=bool)
        usable[0xD800:0xE000] = False
        # Keep the strings fixed points of the normalizer, so positions mean the same
        # thing before and after normalization (the repair campaign covers the rest).
        # SentencePiece's normalizer changes every character it prepends "▁" to; its
        # check compares token offsets, which the reference maps back to the input.
        if tok.family != "sentencepiece":
            usable &= (bits & (NORM_CHANGES | NFC_UNSAFE)) == 0
        self.members = [np.flatnonzero((cmap == i) & usable) for i in range(len(r.class_names))]
        self.names = r.class_names
        self.rng = rng
        ascii_ok = [np.array([c for c in m if c < 128], dtype=np.int64) for m in self.members]
        self.ascii = ascii_ok

    def char(self, cls: int) -> str:
        pool = self.members[cls]
        if len(self.ascii[cls]) and self.rng.random() < 0.5:
            pool = self.ascii[
                cls
            ]  # the ASCII members carry most of the rules (digits, ', \r, space)
        return chr(int(pool[self.rng.randrange(len(pool))]))

    def context(self, max_len: int = 6) -> str:
        out = []
        for _ in range(self.rng.randint(0, max_len)):
            cls = self.rng.randrange(len(self.names))
            if not len(self.members[cls]):
                continue
            ch = self.char(cls)
            out.append(ch * (self.rng.randint(2, 5) if self.rng.random() < 0.2 else 1))
        return "".join(out)


def _pieces(pretok, text: str) -> list[tuple[str, int, int]]:
    return [(p, a, b) for p, (a, b) in pretok.pre_tokenize_str(text)]


def check_boundary(pretok, left: str, right: str, right2: str) -> str | None:
    """None if the boundary at len(left) synchronizes, else which condition failed."""
    cut = len(left)
    full = _pieces(pretok, left + right)
    if any(a < cut < b for _, a, b in full) or not any(a == cut for _, a, _b in full):
        return "no piece boundary at the cut"
    right_pieces = [(p, a - cut, b - cut) for p, a, b in full if a >= cut]
    if right_pieces != _pieces(pretok, right):
        return "right pieces depend on the left context"
    left_pieces = [x for x in full if x[2] <= cut]
    other = [x for x in _pieces(pretok, left + right2) if x[2] <= cut]
    if left_pieces != other:
        return "left pieces depend on the right context"
    return None


def _tokens(tok, text: str) -> list[tuple[int, int, int]]:
    enc = tok.hf.encode(text, add_special_tokens=False)
    return [(i, a, b) for i, (a, b) in zip(enc.ids, enc.offsets, strict=True)]


def check_token_boundary(tok, left: str, right: str, left2: str, right2: str) -> str | None:
    """``check_boundary`` at the token level, for families without pre-tokenizer pieces.

    At ``cut = len(left)``: a token starts there and none crosses it; the tokens right of
    it are the same after another left context (``left2``, ending in the same class);
    the tokens left of it are the same after another right context (``right2``) and
    when ``left`` is encoded alone (a cut at the end of input).
    """
    cut = len(left)
    full = _tokens(tok, left + right)
    if any(a < cut < b for _, a, b in full) or not any(a == cut for _, a, _b in full):
        return "no token boundary at the cut"
    right_toks = [(i, a - cut, b - cut) for i, a, b in full if a >= cut]
    cut2 = len(left2)
    other = [(i, a - cut2, b - cut2) for i, a, b in _tokens(tok, left2 + right) if a >= cut2]
    if right_toks != other:
        return "right tokens depend on the left context"
    left_toks = [x for x in full if x[2] <= cut]
    if left_toks != [x for x in _tokens(tok, left + right2) if x[2] <= cut]:
        return "left tokens depend on the right context"
    if left_toks != _tokens(tok, left):
        return "left tokens change at the end of input"
    return None


def run_oracle(tok, trials_per_pair: int, *, seed: int = 0) -> OracleReport:
    r = stability.rules(tok.family)
    if r is None:
        raise ValueError(f"{tok.name}: family {tok.family!r} has no boundary rules")
    rng = random.Random(seed)
    sampler = _Sampler(tok, rng)
    pretok = tok.hf.pre_tokenizer
    report = OracleReport(tok.name, tok.family, trials_per_pair)
    n = len(r.class_names)
    for a in range(n):
        for b in range(n):
            res = PairResult(r.class_names[a], r.class_names[b], bool(r.stable[a, b]))
            if len(sampler.members[a]) and len(sampler.members[b]):
                for _ in range(trials_per_pair):
                    left = sampler.context() + sampler.char(a)
                    right = sampler.char(b) + sampler.context()
                    right2 = sampler.char(b) + sampler.context()
                    if pretok is None:  # no pieces (SentencePiece): compare tokens
                        left2 = sampler.context() + sampler.char(a)
                        why = check_token_boundary(tok, left, right, left2, right2)
                    else:
                        why = check_boundary(pretok, left, right, right2)
                    res.trials += 1
                    if why is not None:
                        res.failures += 1
                        if res.example is None:
                            res.example = {
                                "left": left,
                                "right": right,
                                "right2": right2,
                                **({"left2": left2} if pretok is None else {}),
                                "why": why,
                            }
            report.pairs.append(res)
    return report
