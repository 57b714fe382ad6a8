"""Certify the CPU engine against the reference, at split level and at ID level.

(``run_campaign(..., device="gpu")`` runs the same inputs against the GPU
engine: ``gpu_campaign``.)

Split level: every piece boundary of ``CpuEngine.split`` equals the reference
``pre_tokenizer.pre_tokenize_str`` boundaries (ID checks alone miss a wrong cut
where no merge spans the seam).  ID level: ``CpuEngine.encode`` and ``encode_ids`` (and the
parallel encode on long documents) returns the reference's IDs *and* character
spans exactly.

Inputs:
- synthetic: every ordered pair and triple of class representatives (letters by
  case, marks, digits of three kinds, whitespace kinds, CR/LF, apostrophes and
  contraction letters incl. U+017F, ASCII and other punctuation, symbols, CJK,
  format and private-use characters, astral letters and emoji), runs of
  whitespace and digits of many lengths, and every code point (or a stride of
  them) in small contexts;
- real: trajectories, CPython stdlib sources, pycountry's catalogs
  (``campaigns.corpus``), with the tokenizer's added-token literals sprinkled in.

Any divergence is recorded with the input and both sides; the campaign never
stops early and never tolerates one.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, field
from itertools import product

import numpy as np
from tqdm.auto import tqdm

from ..families.classes import N_CODEPOINTS, SURROGATES
from ..verifier import first_divergence
from .corpus import mixed_documents

MAX_EXAMPLES = 5
PARTS_BUDGET = 1 << 15  # workspace bytes of the parts check: a 200K-character text in ~12 parts


@dataclass
class EngineCertification:
    tokenizer: str
    family: str
    split_inputs: int = 0
    split_chars: int = 0
    split_pieces: int = 0
    split_divergences: int = 0
    id_inputs: int = 0
    id_chars: int = 0
    id_tokens: int = 0
    id_divergences: int = 0
    ids_only_divergences: int = 0  # ``encode_ids`` (no spans) on the ID inputs and long texts
    parallel_inputs: int = 0
    parallel_divergences: int = 0
    parts_inputs: int = 0  # long texts through a small workspace budget: many certified parts
    parts_divergences: int = 0
    # ID inputs (one thread) the engine read as ASCII bytes: whole, or in ASCII parts cut
    # at certified cuts beside other characters (``CpuEngine.ascii_part_bounds``)
    ascii_inputs: int = 0
    ascii_part_inputs: int = 0
    cuts_checked: int = 0  # certified cuts proven with the reference: ref(L) ++ ref(R) == ref(L+R)
    cut_divergences: int = 0
    codepoints_covered: int = 0
    chars_by_source: dict = field(default_factory=dict)
    examples: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def divergences(self) -> int:
        return (
            self.split_divergences
            + self.id_divergences
            + self.ids_only_divergences
            + self.parallel_divergences
            + self.parts_divergences
            + self.cut_divergences
        )

    def to_dict(self) -> dict:
        d = asdict(self)
        d["divergences"] = self.divergences
        return d


def class_representatives(tok, per_class: int = 3, seed: int = 0) -> list[str]:
    """A few characters of every class combination the rules can tell apart (astral included)."""
    rng = random.Random(seed)
    bits = tok.class_table.bits
    reps: list[str] = []
    # one group per distinct class-bit value (probed from the reference), ranked by code point
    values = np.unique(bits)
    for v in values.tolist():
        members = np.flatnonzero(bits == v)
        members = members[(members < SURROGATES.start) | (members >= SURROGATES.stop)]
        if not len(members):
            continue
        pick = {int(members[0]), int(members[-1])}
        astral = members[members >= 0x10000]
        if len(astral):
            pick.add(int(astral[0]))
        while len(pick) < min(per_class, len(members)):
            pick.add(int(members[rng.randrange(len(members))]))
        reps.extend(chr(c) for c in sorted(pick))
    # characters the rules single out by value
    reps += list("\r\n\t '/\"!#$%&()*+,-.:;<=>?@[\\]^_`{|}~")
    reps += list("sStTmMdDrReEvVlLſ")
    reps += ["\u3000", "\u00a0", "\u2028", "\u200d", "\ufeff", "\ue000", "\U0010fffd"]
    reps += ["中", "ー", "・", "゠", "゛", "\u3099", "あ", "ア", "\u4e00", "\u9fa5", "\u9fa6"]
    reps += ["²", "Ⅻ", "٣", "𝟘", "𐐀", "𝐀", "😀", "Ǆ", "ǅ", "ǆ", "ʰ", "\u0301", "\u0903", "\u20dd"]
    return list(dict.fromkeys(reps))


def synthetic_inputs(tok, *, triples: bool = True, seed: int = 0) -> list[str]:
    """Pairs and triples of class representatives, runs of many lengths, contractions."""
    reps = class_representatives(tok, seed=seed)
    core = reps if len(reps) <= 64 else _core_subset(reps, seed)
    out = ["".join(p) for p in product(reps, repeat=2)]
    if triples:
        out += ["".join(t) for t in product(core, repeat=3)]
    for n in [*range(1, 18), 31, 64, 65, 100, 257, 1000, 4097]:
        for a, b in (("a", "b"), (".", "x"), ("x", "1"), ("", "\n"), ("\n", "a"), ("'", "s")):
            out += [a + " " * n + b, a + "\t" * n + b, a + "\n" * n + b, a + " \n" * n + b]
            out += [a + "1" * n + b, a + "١" * n + b, a + "x" * n + b, a + "!" * n + b]
    for c in ("s", "t", "re", "ve", "m", "ll", "d", "S", "RE", "Ll", "ſ", "x"):
        out += [f"it'{c}", f"it'{c}x", f"'{c}", f" '{c}", f"'{c}'{c}'{c}", f"A'{c}B", f"1'{c}"]
    return out


def _core_subset(reps: list[str], seed: int) -> list[str]:
    """Triples over every representative would be too many; keep one per class value plus specials."""
    rng = random.Random(seed + 1)
    fixed = [c for c in reps if ord(c) < 0x80]
    rest = [c for c in reps if ord(c) >= 0x80]
    rng.shuffle(rest)
    return fixed[:40] + rest[:24]


def codepoint_inputs(stride: int = 1, chunk: int = 2048) -> list[str]:
    """Every ``stride``-th code point (surrogates excluded) in a few small contexts."""
    out = []
    cps = [
        c for c in range(0, N_CODEPOINTS, stride) if not (SURROGATES.start <= c < SURROGATES.stop)
    ]
    for i in range(0, len(cps), chunk):
        parts = []
        for c in cps[i : i + chunk]:
            ch = chr(c)
            parts.append(f"{ch}{ch}a{ch} 1{ch}'s{ch}\n")
        out.append("".join(parts))
    return out


def literal_sprinkle(tok, docs: list[str], seed: int) -> list[str]:
    rng = random.Random(seed)
    lits = [t.content for t in tok.added_tokens if t.content]
    if not lits:
        return docs
    out = []
    for d in docs:
        for _ in range(rng.randrange(0, 3)):
            p = rng.randrange(len(d) + 1)
            d = d[:p] + rng.choice(lits) + d[p:]
        out.append(d)
    return out


class Certifier:
    def __init__(self, tok, engine=None):
        from ..engine.cpu import new_engine

        self.tok = tok
        self.engine = engine or new_engine(tok)
        self.engine.warmup()
        self.report = EngineCertification(tok.name, tok.family)
        pre = tok.hf.pre_tokenizer
        # SentencePiece has no pre-tokenizer (a segment is one BPE word): no split level;
        # its engine's piece cuts are certified cuts, proven by check_cuts below.
        self._pretok = pre.pre_tokenize_str if pre is not None else None
        # A text cut inside a SentencePiece segment and encoded alone gets a "▁" of its own.
        self._prepends = tok.family == "sentencepiece"
        self._small = None  # the engine with a small workspace budget (check_ids(parts=True))

    def _example(self, kind: str, text: str, **info) -> None:
        if len(self.report.examples) < MAX_EXAMPLES:
            self.report.examples.append({"kind": kind, "text": text[:2000], **info})

    def check_split(self, text: str) -> bool:
        r = self.report
        if self._pretok is None:
            return True
        ref = self._pretok(text)
        ref_ends = np.fromiter((b for _p, (_a, b) in ref), dtype=np.int64, count=len(ref))
        _starts, ends = self.engine.split(text)
        r.split_inputs += 1
        r.split_chars += len(text)
        r.split_pieces += len(ref_ends)
        if np.array_equal(ends, ref_ends):
            return True
        r.split_divergences += 1
        k = _first_difference(ends, ref_ends)
        lo = int(
            min(
                ends[k] if k < len(ends) else len(text),
                ref_ends[k] if k < len(ref_ends) else len(text),
            )
        )
        self._example("split", text, at=lo, context=text[max(0, lo - 20) : lo + 20],
                      engine=ends[max(0, k - 3) : k + 3].tolist(),
                      reference=ref_ends[max(0, k - 3) : k + 3].tolist())  # fmt: skip
        return False

    def check_ids(self, text: str, parallel: bool = False, parts: bool = False) -> bool:
        """The engine's IDs and spans against the reference: ``encode``; ``parallel``:
        ``encode_parallel`` on two threads; ``parts``: an engine whose workspace budget
        is PARTS_BUDGET, so ``encode`` (one thread) takes a long text in many parts cut at
        certified cuts, one after another through its workspace."""
        r = self.report
        enc = self.tok.hf.encode(text, add_special_tokens=False)
        ref_ids = np.asarray(enc.ids, dtype=np.uint32)
        off = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
        if parts:
            eng = self._parts_engine()
            ids, s, e = eng.encode(text)
            r.parts_inputs += 1
        elif parallel:
            ids, s, e = self.engine.encode_parallel(text, threads=2, min_chars=0)
            r.parallel_inputs += 1
        else:
            ids, s, e = self.engine.encode(text)
            r.id_inputs += 1
            r.id_chars += len(text)
            r.id_tokens += len(ref_ids)
            self._count_ascii(text)
        ok = (
            np.array_equal(ids, ref_ids)
            and np.array_equal(s, off[:, 0])
            and np.array_equal(e, off[:, 1])
        )
        if not parts:  # the ids-only path on the same text (one thread, or two)
            alone = self.engine.encode_ids(text, threads=2 if parallel else 1)
            if not np.array_equal(alone, ref_ids):
                r.ids_only_divergences += 1
                self._id_example("ids-only", text, alone, ref_ids)
        if ok:
            return True
        kind = "parts" if parts else "parallel" if parallel else "ids"
        if parts:
            r.parts_divergences += 1
        elif parallel:
            r.parallel_divergences += 1
        else:
            r.id_divergences += 1
        self._id_example(kind, text, ids, ref_ids)
        return False

    def _count_ascii(self, text: str) -> None:
        """Count ``text`` if the engine reads it (or long stretches of it) as ASCII bytes."""
        bounds = getattr(self.engine, "ascii_part_bounds", None)
        if bounds is None or not getattr(self.engine, "_ascii_direct", False):
            return
        if text.isascii():
            self.report.ascii_inputs += 1
        elif len(bounds(text)) > 2:
            self.report.ascii_part_inputs += 1

    def _id_example(self, kind: str, text: str, ids, ref_ids) -> None:
        """Record the IDs around the first token where the engine and the reference differ."""
        k = _first_difference(ids, ref_ids)
        self._example(kind, text, token=k,
                      engine=ids[max(0, k - 3) : k + 3].tolist(),
                      reference=ref_ids[max(0, k - 3) : k + 3].tolist())  # fmt: skip

    def _parts_engine(self):
        if self._small is None:
            from ..engine.cpu import new_engine

            self._small = new_engine(self.tok)
            self._small.workspace_bytes = PARTS_BUDGET
        return self._small

    def check_cuts(self, text: str, rng: random.Random, k: int) -> None:
        """Prove ``k`` of the engine's certified cuts of ``text`` against the reference alone."""
        cuts = self.engine.certified_cuts(text)
        if not len(cuts):
            return
        enc = self.tok.hf.encode
        full = enc(text, add_special_tokens=False)
        for p in rng.sample(cuts.tolist(), min(k, len(cuts))):
            if self._prepends:
                self._check_segment_cut(text, p, full)
                continue
            left = enc(text[:p], add_special_tokens=False)
            right = enc(text[p:], add_special_tokens=False)
            self.report.cuts_checked += 1
            joined = left.ids + right.ids
            offs = left.offsets + [(a + p, b + p) for a, b in right.offsets]
            if joined != full.ids or offs != full.offsets:
                self.report.cut_divergences += 1
                self._example("cut", text, at=p, context=text[max(0, p - 20) : p + 20])


    def _check_segment_cut(self, text: str, p: int, full) -> None:
        """A SentencePiece cut: the reference's tokens of the whole text split at ``p`` (none
        crosses it) and those left of it are the reference's tokens of ``text[:p]`` alone.
        (The right side cannot be encoded alone -- it would get a prepended "▁"; the
        engine's chunks from ``p`` are checked against the whole text by the parallel check.)
        """
        left = self.tok.hf.encode(text[:p], add_special_tokens=False)
        k = len(left.ids)
        self.report.cuts_checked += 1
        offs = full.offsets
        ok = (
            full.ids[:k] == left.ids
            and offs[:k] == left.offsets
            and all(b <= p for _a, b in offs[:k])
            and all(a >= p for a, _b in offs[k:])
        )
        if not ok:
            self.report.cut_divergences += 1
            self._example("cut", text, at=p, context=text[max(0, p - 20) : p + 20])


_first_difference = first_divergence


def run_campaign(
    tok,
    n_chars: int,
    *,
    seed: int = 0,
    codepoint_stride: int = 1,
    triples: bool = True,
    progress: bool = True,
    device: str = "cpu",
    **gpu_options,
) -> EngineCertification:
    """Split- and ID-level certification of the CPU engine for one tokenizer.

    ``device="gpu"`` certifies the GPU engine instead (``gpu_campaign``; a real
    GPU, or the CUDA simulator for a smoke run); ``gpu_options`` go there.
    """
    if device == "gpu":
        from .gpu_campaign import run_gpu_campaign

        return run_gpu_campaign(tok, n_chars, seed=seed, codepoint_stride=codepoint_stride,
                                triples=triples, progress=progress, **gpu_options)  # fmt: skip
    if device != "cpu" or gpu_options:
        raise ValueError(f"unknown device {device!r} or options {sorted(gpu_options)}")
    t0 = time.perf_counter()
    cert = Certifier(tok)
    r = cert.report
    synth = synthetic_inputs(tok, triples=triples, seed=seed)
    # short inputs: batch them so the reference is called on a realistic size, but keep
    # every single one as a separate input for the split level (edges matter)
    for text in tqdm(synth, desc=f"{tok.name}: synthetic", disable=not progress, mininterval=2):
        cert.check_split(text)
    for i in range(0, len(synth), 256):
        cert.check_ids("".join(synth[i : i + 256]))
    cps = codepoint_inputs(codepoint_stride)
    r.codepoints_covered = sum(
        1
        for c in range(0, N_CODEPOINTS, codepoint_stride)
        if not SURROGATES.start <= c < SURROGATES.stop
    )
    for text in tqdm(cps, desc=f"{tok.name}: code points", disable=not progress, mininterval=2):
        cert.check_split(text)
        cert.check_ids(text)
    docs, taken = mixed_documents(n_chars, seed=seed)
    r.chars_by_source = taken
    docs = literal_sprinkle(tok, docs, seed)
    rng = random.Random(seed)
    for doc in tqdm(docs, desc=f"{tok.name}: real text", disable=not progress, mininterval=2):
        cert.check_split(doc)
        cert.check_ids(doc)
        cert.check_cuts(doc[:4000], rng, 4)
    for text in synth[:: max(1, len(synth) // 2000)]:
        cert.check_cuts(text, rng, 2)
    # the parallel encode on long concatenations (certified cuts across space)
    big, cur = [], []
    for doc in docs:
        cur.append(doc)
        if sum(map(len, cur)) >= 200_000:
            big.append("".join(cur))
            cur = []
    if cur:  # the rest (a small campaign's only long text)
        big.append("".join(cur))
    for text in big[: max(1, len(big))]:
        cert.check_ids(text)  # one thread: long ASCII stretches go in parts of their own
        cert.check_ids(text, parallel=True)
        cert.check_ids(text, parts=True)
    r.seconds = round(time.perf_counter() - t0, 2)
    return r
