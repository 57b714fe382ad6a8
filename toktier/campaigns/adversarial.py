"""Adversarial repair campaign: hypothesis-generated sessions built from the known pitfalls.

Every scenario starts a session on a text ``A`` and applies a sequence of
appends and mid-context edits whose pieces come from the pitfall list of
``repair.md``: digit runs cut at the seam, CR/LF and lone CR, whitespace runs,
contractions (ASCII and U+2019, upper case), CamelCase, combining marks and NFC
composition across the seam, added-token literals cut at the seam,
multi-byte characters, CJK punctuation, plus characters drawn from the
tokenizer's own probed class tables (astral planes included).  Each result is
compared with the reference on the full text, IDs and spans.  A mismatch makes
hypothesis shrink the scenario to a minimal reproducer, which is reported.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from ..tier import Tier

PITFALLS = [
    "0", "7", "12", "345", "6789", "1,234", "3.14", "²", "٣", "१२",  # digits and other numbers
    "\r", "\n", "\r\n", "\n\n", " \r\n", "\r\r\n",  # line ends
    " ", "  ", "   ", "\t", "\u00a0", "\u3000", " \t ",  # whitespace runs
    "don", "'t", "'s", "'S", "'LL", "\u2019s", "'", "it's",  # contractions
    "Camel", "Case", "HTTP", "Server", "iPhone", "ǅ",  # case
    "e", "\u0301", "\u0308", "a\u0301", "\u0958", "\u093c", "क", "\u1100", "\u1161", "\u11a8",  # marks, NFC
    "😀", "👍🏽", "𝔘", "\U00020000", "é", "ß",  # multi-byte, astral
    "漢字", "かな", "カタカナ", "。", "、", "「", "」", "（", "）",  # CJK and its punctuation
    "def f(x):", "    return x", "==", "->", "/", "//", "https://", "_", "__init__",  # code
    "the", " pipe", "line", " pipeline", "word", ".", ",", "!", "?", "...", "(", ")", "[", "]",
]  # fmt: skip
# Long runs with few or no stable pairs: a window that starts inside one widens past it
# (``repair.widen_left``).
LONG_RUNS = ["x" * 300, "漢字" * 100, " " * 120, "=" * 150, "7" * 200, "aé" * 100]


def fragments(tok) -> st.SearchStrategy[str]:
    """One fragment: a pitfall, a piece of an added-token literal, or a probed-class character."""
    literals = [t.content for t in tok.added_tokens if t.content][:64] or ["<|x|>"]
    lit = st.sampled_from(literals)
    cut_literal = st.tuples(lit, st.integers(0, 40)).map(lambda t: t[0][: t[1] % (len(t[0]) + 1)])
    literal_tail = st.tuples(lit, st.integers(0, 40)).map(lambda t: t[0][t[1] % (len(t[0]) + 1) :])
    table = tok.class_table
    pools = [table.members(name) for name in ("L", "N", "M", "P", "S", "WS")]
    pools = [p[(p < 0xD800) | (p >= 0xE000)] for p in pools if len(p)]
    probed = st.tuples(st.integers(0, len(pools) - 1), st.integers(0, 2**31)).map(
        lambda t: chr(int(pools[t[0]][t[1] % len(pools[t[0]])]))
    )
    anything = st.text(st.characters(exclude_categories=("Cs",)), max_size=3)
    pitfall = st.sampled_from(PITFALLS + LONG_RUNS)  # a long run in ~1 of 100 fragments
    return st.one_of(pitfall, lit, cut_literal, literal_tail, probed, anything)


def texts(frag: st.SearchStrategy[str], max_fragments: int) -> st.SearchStrategy[str]:
    return st.lists(frag, max_size=max_fragments).map("".join)


@st.composite
def scenarios(draw, frag: st.SearchStrategy[str]):
    """(window, initial text, operations); an operation is ("append", delta) or ("edit", i, j, insert).

    ``frag`` is ``fragments(tok)``, built once per tokenizer."""
    window = draw(st.sampled_from([24, 48, 96, 512]))
    # Fillers make the window edge fall inside real text, so splices (not whole-text
    # windows) are what most operations exercise.
    filler = draw(
        st.sampled_from(
            [
                "",
                "lorem ipsum dolor sit amet, " * 12,
                "x = [1, 2, 3]\n" * 25,
                "数据 données 123 " * 20,
            ]
        )
    )
    start = draw(texts(frag, 150))
    text = filler + start + filler
    ops = []
    n_ops = draw(st.integers(1, 6))
    for _ in range(n_ops):
        if draw(st.booleans()) or not text:
            ops.append(("append", draw(st.lists(frag, min_size=1, max_size=12).map("".join))))
            text += ops[-1][1]
        else:
            i = draw(st.integers(0, len(text)))
            j = draw(st.integers(i, min(len(text), i + 12)))
            ins = draw(
                texts(frag, 4) if j > i else st.lists(frag, min_size=1, max_size=4).map("".join)
            )
            ops.append(("edit", i, j, ins))
            text = text[:i] + ins + text[j:]
    return window, filler + start + filler, ops


@dataclass
class AdversarialReport:
    tokenizer: str
    family: str
    scenarios: int = 0
    appends: int = 0
    edits: int = 0
    outcomes: Counter = field(default_factory=Counter)
    mismatches: int = 0
    plan_comparisons: int = 0  # operations also planned by repair.plan, with equal splices
    reproducer: dict | None = None

    def to_dict(self) -> dict:
        return {
            "tokenizer": self.tokenizer,
            "family": self.family,
            "scenarios": self.scenarios,
            "appends": self.appends,
            "edits": self.edits,
            "operations": self.appends + self.edits,
            "outcomes": dict(self.outcomes),
            "mismatches": self.mismatches,
            "plan_comparisons": self.plan_comparisons,
            "reproducer": self.reproducer,
        }


def verify_boundary(tok, text: str, p: int, offsets: np.ndarray) -> str | None:
    """Re-check a reported splice point from scratch; None if it holds, else what fails.

    Independent of the repair code's indexing: (a) the reference's own tokenization of
    the full text has a token starting at ``p`` and none across it; (b) no added-token
    literal occurrence straddles ``p`` (brute force over every literal); (c) the class
    pair at ``p`` is in the family's stable set; (d) NFC families: both sides NFC-safe.
    """
    from ..families import stability
    from ..repair import rules_for

    if not 0 < p < len(text):
        return "boundary outside the text"
    if not (offsets[:, 0] == p).any() or ((offsets[:, 0] < p) & (offsets[:, 1] > p)).any():
        return "not a token boundary of the reference"
    m = tok.longest_added_chars
    window = text[max(0, p - m) : p + m]
    base = max(0, p - m)
    for t in tok.added_tokens:
        i = window.find(t.content)
        while i >= 0:
            if base + i < p < base + i + len(t.content):
                return f"added literal {t.content!r} straddles the boundary"
            i = window.find(t.content, i + 1)
    rules = rules_for(tok)
    cmap = rules.class_of
    if not stability.rules(tok.family).stable[cmap[ord(text[p - 1])], cmap[ord(text[p])]]:
        return "class pair is not stable"
    if rules.nfc_unsafe is not None and (
        rules.nfc_unsafe[ord(text[p - 1])] or rules.nfc_unsafe[ord(text[p])]
    ):
        return "not NFC-safe"
    return None


_TIERS: dict = {}


def _tier(tok, impl: str) -> Tier:
    """One Tier per tokenizer and repair implementation, reused across scenarios."""
    key = (tok.sha256, impl)
    if key not in _TIERS:
        # every request is checked here already: no verifier, no delta-aware full encodes
        _TIERS[key] = Tier(tok, verify_rate=0, delta_aware=False, repair_impl=impl)
    return _TIERS[key]


def check_scenario(
    tok, scenario, report: AdversarialReport | None = None, *, differential: bool = False,
    repair_impl: str = "compiled",
) -> None:  # fmt: skip
    """Run one scenario through a Tier; raise AssertionError on any divergence.

    ``differential``: also run the Python reference plan (``repair.plan``) beside the
    compiled one and require the same route, reason, splice points and kept prefix.
    """
    window, text, ops = scenario
    tier = _tier(tok, repair_impl)
    twin = _tier(tok, "python") if differential else None
    for t in (tier, twin) if twin is not None else (tier,):
        t.window = window
        t.close("adv")
        t.encode(text, session="adv")
    for op in ops:
        if op[0] == "append":
            text += op[1]
            send = (
                (lambda t, d=op[1]: t.append("adv", d))
                if len(op[1]) % 2
                else (lambda t, x=text: t.encode(x, session="adv"))
            )
        else:
            _, i, j, ins = op
            text = text[:i] + ins + text[j:]
            send = lambda t, x=text: t.encode(x, session="adv")  # noqa: E731
        r = send(tier)
        if twin is not None:
            p = send(twin)
            same = (r.path, r.reason, r.widenings, r.boundaries, r.keep) == (
                p.path, p.reason, p.widenings, p.boundaries, p.keep,
            )  # fmt: skip
            if report is not None:
                report.plan_comparisons += 1
            assert same, (
                f"compiled and Python plans differ after {op[0]}: {r.path}: {r.reason} "
                f"{r.boundaries} keep {r.keep} vs {p.path}: {p.reason} {p.boundaries} keep {p.keep}"
            )
        want = tok.reference_encoding(text)
        _, starts, ends = tier.session_records("adv")
        ok = r.ids.tolist() == want.ids and np.array_equal(
            np.stack([starts, ends], axis=1).reshape(-1, 2),
            np.asarray(want.offsets, dtype=np.int64).reshape(-1, 2),
        )
        if report is not None:
            report.appends += op[0] == "append"
            report.edits += op[0] == "edit"
            report.outcomes[f"{r.path}: {r.reason.split(' (')[0]}"] += 1
        assert ok, f"divergence after {op[0]} ({r.path}: {r.reason})"
        offsets = np.asarray(want.offsets, dtype=np.int64).reshape(-1, 2)
        for b in r.boundaries:
            if b is not None:
                why = verify_boundary(tok, text, b, offsets)
                assert why is None, f"uncertified splice point {b} after {op[0]}: {why}"


def run_campaign(
    tok, examples: int, *, seed: int = 0, differential: bool = True
) -> AdversarialReport:
    """``examples`` hypothesis scenarios (each 1-6 operations) against the reference.

    ``differential``: every operation is also planned by the Python reference plan,
    which must splice at the same points (``check_scenario``).
    """
    report = AdversarialReport(tok.name, tok.family)

    failing: list = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(scenario=scenarios(fragments(tok)))
    def campaign(scenario):
        report.scenarios += 1
        try:
            check_scenario(tok, scenario, report, differential=differential)
        except AssertionError:
            failing.append(scenario)  # the last one is hypothesis's shrunk, minimal example
            raise

    try:
        campaign()
    except AssertionError as exc:
        report.mismatches += 1
        window, text, ops = failing[-1]
        report.reproducer = {"error": str(exc), "window": window, "text": text, "operations": ops}
    return report
