"""Mutated user tokenizer files: each one encodes exactly like the reference, engine or not.

Issue #13: a copy of llama3's tokenizer.json with one extra added token whose id in the
file was not the id the reference assigns made the engine emit the file's id.  This
campaign builds such files on purpose.  Each case copies a registered tokenizer.json
and adds one to four added tokens drawn from the kinds below, writes it to a working
folder, loads it as a user would (``toktier.load(path)``) and checks, against the
reference of the same file:

- ``Tokenizer.encode`` on every literal in context (the engine's probe texts, joined
  literals, literals spliced into real text) and on one long text that takes the
  parallel path (cut at certified boundaries, literals near the cuts);
- a ``Tier`` session that grows by appends which cut literals at the seam.

A file either keeps the engine (and all its IDs equal the reference's) or the engine
refuses it and it is served by the reference; both are counted, with the refusal reason.
Any divergence fails the campaign with the file kept for a reproducer.
"""

from __future__ import annotations

import json
import random
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..engine.cpu import engine_refusal
from ..engine.literal_probe import probe_texts
from ..registry import load
from ..tier import Tier

KINDS = (
    "vocabulary collision",  # the literal is a vocabulary entry, the file gives it a new id
    "id gap",  # a new literal numbered past the next free id
    "id collision",  # a new literal with a vocabulary entry's id or another literal's id
    "flag",  # special / normalized / lstrip / rstrip / single_word set
    "overlap",  # two literals, one's suffix the other's prefix
    "nested",  # a literal inside another literal
    "whitespace",  # literals with spaces, tabs, newlines
    "non-ASCII",  # multi-byte, combining marks, CJK
)
_FLAGS = ("special", "normalized", "lstrip", "rstrip", "single_word")
_PLAIN = {"special": True, "normalized": False, "lstrip": False, "rstrip": False,
          "single_word": False}  # fmt: skip
_WORDS = ("hello", "world", "def", "the", "tok", "zz", "qq", "ab", "bc", "<x>", "[CTX]", "::")
_ODD = ("é", "e\u0301", "漢字", "ß", "😀", "\u0958", "Å", "ﬁ")


@dataclass
class UserFilesReport:
    base: str
    files: int = 0
    engine_kept: int = 0
    engine_refused: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)
    texts: int = 0
    tier_requests: int = 0
    divergences: int = 0
    failures: list[str] = field(default_factory=list)

    def row(self) -> dict:
        return {
            "base": self.base, "files": self.files, "engine kept": self.engine_kept,
            "engine refused": sum(self.engine_refused.values()), "texts": self.texts,
            "tier requests": self.tier_requests, "divergences": self.divergences,
            "kinds": dict(self.kinds),
            "refusals": {k: v for k, v in self.engine_refused.most_common()},
        }  # fmt: skip


def _new_literal(rng: random.Random, vocab: list[str]) -> str:
    return rng.choice(_WORDS) + str(rng.randrange(1000)) + rng.choice(("", "|>", " ", "_"))


def mutate(doc: dict, rng: random.Random, vocab_words: list[str]) -> tuple[dict, list[str]]:
    """A copy of ``doc`` with one to four added tokens of random ``KINDS``; and the kinds."""
    doc = json.loads(json.dumps(doc))
    added = doc["added_tokens"]
    vocab = doc["model"]["vocab"]
    next_id = max([*vocab.values(), *(t["id"] for t in added)]) + 1
    kinds = [rng.choice(KINDS) for _ in range(rng.randint(1, 4))]
    for kind in kinds:
        tok = dict(_PLAIN, special=rng.random() < 0.7)
        if kind == "vocabulary collision":
            new = [dict(tok, id=next_id + rng.randrange(3), content=rng.choice(vocab_words))]
        elif kind == "id gap":
            new = [
                dict(
                    tok, id=next_id + rng.randrange(2, 5000), content=_new_literal(rng, vocab_words)
                )
            ]
        elif kind == "id collision":
            victim = rng.choice([*vocab.values()][:5000] + [t["id"] for t in added])
            new = [dict(tok, id=victim, content=_new_literal(rng, vocab_words))]
        elif kind == "flag":
            flag = rng.choice(_FLAGS)
            new = [dict(tok, id=next_id, content=_new_literal(rng, vocab_words), **{flag: True})]
        elif kind == "overlap":
            a = _new_literal(rng, vocab_words)
            k = rng.randint(1, max(1, len(a) - 1))
            b = a[-k:] + rng.choice(_WORDS)
            new = [dict(tok, id=next_id, content=a), dict(tok, id=next_id + 1, content=b)]
        elif kind == "nested":
            a = rng.choice(_WORDS)
            b = rng.choice(("<", "x", " ")) + a + rng.choice((">", "y", ""))
            new = [dict(tok, id=next_id, content=a), dict(tok, id=next_id + 1, content=b)]
        elif kind == "whitespace":
            c = rng.choice((" ", "\n", "\t", "  ", " \n")).join(rng.sample(_WORDS, 2))
            new = [dict(tok, id=next_id, content=rng.choice((c, " " + c, c + "\n")))]
        else:  # non-ASCII
            c = rng.choice(_ODD) + rng.choice(_WORDS) + rng.choice(_ODD)
            if rng.random() < 0.5:
                c = unicodedata.normalize(rng.choice(("NFD", "NFC")), c)
            new = [dict(tok, id=next_id, content=c, normalized=rng.random() < 0.5)]
        added += new
        next_id += len(new)
    return doc, kinds


def _spliced(rng: random.Random, literals: list[str], prose: str, n: int) -> list[str]:
    """Real text with literals (and halves of literals) spliced in at random places."""
    out = []
    for _ in range(n):
        start = rng.randrange(max(1, len(prose) - 400))
        text = prose[start : start + rng.randint(20, 400)]
        for _ in range(rng.randint(1, 4)):
            lit = rng.choice(literals)
            if rng.random() < 0.2:
                lit = lit[: rng.randint(0, len(lit))]
            at = rng.randrange(len(text) + 1)
            text = text[:at] + lit + text[at:]
        out.append(text)
    return out


def check_file(path: Path, rng: random.Random, prose: str, report: UserFilesReport) -> None:
    """Load ``path`` as a user would and compare everything it encodes with its reference."""
    tok = load(path)
    if tok.engine is None:
        report.engine_refused[(engine_refusal(tok) or "engine off").split(":")[0][:60]] += 1
    else:
        report.engine_kept += 1
    literals = sorted({t.content for t in tok.added_tokens if t.content}, key=len)[-40:]
    texts = probe_texts(tok)[-400:] + _spliced(rng, literals, prose, 60)
    long_text = "".join(_spliced(rng, literals, prose, 400))
    while len(long_text) < 70_000:  # past MIN_PARALLEL_CHARS: the parallel, cut path
        long_text += long_text
    texts.append(long_text)
    for text in texts:
        report.texts += 1
        if not np.array_equal(tok.encode(text), np.asarray(tok.reference(text), dtype=np.uint32)):
            report.divergences += 1
            report.failures.append(f"{path.name}: encode differs on {text[:80]!r}")
    tier = Tier(tok, verify_rate=0)
    pieces = _spliced(rng, literals, prose, 12)
    text = pieces[0]
    tier.encode(text, session="s")
    for piece in pieces[1:]:
        cut = rng.randrange(len(piece) + 1)  # literals cut at the seam, then completed
        for part in (piece[:cut], piece[cut:]):
            if not part:
                continue
            text += part
            r = tier.append("s", part)
            report.tier_requests += 1
            if not np.array_equal(r.ids, np.asarray(tok.reference(text), dtype=np.uint32)):
                report.divergences += 1
                report.failures.append(f"{path.name}: Tier differs after {part[:40]!r}")
    tier.shutdown()


def run_campaign(base: str, files: int, *, workdir: Path, seed: int = 0,
                 progress: bool = True) -> UserFilesReport:  # fmt: skip
    """``files`` mutated copies of the registered tokenizer ``base``, each checked in full."""
    from .corpus import mixed_documents

    rng = random.Random(seed)
    tok = load(base)
    doc = tok.document()
    vocab_words = [w for w in tok.hf.get_vocab(with_added_tokens=False) if w.isalpha()][:20_000]
    prose = "".join(mixed_documents(400_000, seed=seed, max_doc_chars=20_000)[0])
    workdir.mkdir(parents=True, exist_ok=True)
    report = UserFilesReport(base)
    for i in tqdm(range(files), desc=f"user files {base}", disable=not progress):
        mutated, kinds = mutate(doc, rng, vocab_words)
        path = workdir / f"{base}-mutant-{seed}-{i}.json"
        path.write_text(json.dumps(mutated), encoding="utf-8")
        before = report.divergences
        check_file(path, rng, prose, report)
        report.files += 1
        report.kinds.update(kinds)
        if report.divergences == before:
            path.unlink()  # keep only reproducers
    return report
