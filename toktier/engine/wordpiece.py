"""The WordPiece engine (the ``wordpiece`` family, BERT): exact IDs and spans, compiled.

What the reference does with a BERT tokenizer.json: added-token literals are cut out of
the original text first; each remaining segment is normalized (``BertNormalizer``:
control characters removed, whitespace to " ", spaces around CJK ideographs, NFD with
nonspacing marks removed, lowercase), pre-tokenized (``BertPreTokenizer``: split at
whitespace, which is dropped, and around each punctuation character), and each word
is split by greedy longest-match-first against the vocabulary ("##" in front of every
piece but a word's first); a word longer than ``max_input_chars_per_word`` characters
or with a position where nothing matches is one ``[UNK]``.  A token's span is the
original characters its normalized characters came from.

Why per-character tables are exact: every step of that normalizer maps one character
to characters of its own (removal, replacement, padding, decomposition, lowercase),
except canonical reordering inside NFD, which can swap two adjacent combining marks
(nonzero combining class).  Nonspacing marks are removed afterwards, so only a kept
mark with a nonzero class can be reordered: a character whose normalized form holds
one is *unsafe*, and the stretch around it (between certified cuts) goes to the
reference.  So the tables are read off the reference itself, one character at a time
(``normalize_str``; the pre-tokenizer's class from ``pre_tokenize_str("a" + c + "a")``),
never from a Unicode database of another version; the engine campaign
(``toktier certify-engine bert-uncased``) checks the result on every code point and
on real text.

Cuts (parallel parts, the budget's parts, reference stretches): after a character
whose normalized form is whitespace only, where no added-token literal crosses.  A
word never spans it and the normalizer's per-character mapping does not look across
it (a space is a starter: reordering never crosses one), so both sides encode alone
exactly as inside the whole text.
"""

from __future__ import annotations

import threading
import time
import unicodedata
from typing import NamedTuple

import numba
import numpy as np

from ..textcheck import check_text
from . import cpu as _cpu
from .literal_probe import check_literals
from .tables import EngineUnsupported, build_trie

K_WORD, K_SPACE, K_PUNCT = 0, 1, 2  # the pre-tokenizer's class of a character
utf8_decode = _cpu.RULES.utf8_decode
pair_slot = _cpu.RULES.pair_slot
FIRST, CONT = "\x01", "\x02"  # the trie's two roots


class WordPieceTables(NamedTuple):
    norm_off: np.ndarray  # int64[0x110001]: code point -> its normalized form in norm_pool
    norm_pool: np.ndarray  # int32: normalized code points, back to back
    kind: np.ndarray  # uint8[0x110000]: K_WORD / K_SPACE / K_PUNCT (the pre-tokenizer's)
    cut_after: np.ndarray  # uint8[0x110000]: normalized form is whitespace only (non-empty)
    unsafe: np.ndarray  # uint8[0x110000]: normalized form holds a kept combining mark
    tkeys: np.ndarray  # the vocabulary as a trie over code points (``tables.build_trie``):
    tchild: np.ndarray  # a word's first piece hangs under FIRST, every other piece under
    term: np.ndarray  # CONT (the "##" left off); ``term[node]``: the id ending there
    root_first: int
    root_cont: int
    unk: int
    max_word_chars: int  # max_input_chars_per_word


# --- compiled rules ----------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _word(t, wcp, worig, length, first, last, out_ids, out_s, out_e, n):
    """Greedy longest-match-first over one word's ``length`` normalized characters (the
    first ``min(length, max_word_chars + 1)`` held in ``wcp``/``worig``); appends tokens.

    The longest vocabulary entry at ``start`` is the deepest terminal node on the trie
    walk from there (the reference tries every end from the word's end down: the first
    hit is that same entry).
    """
    if length > t.max_word_chars:
        out_ids[n] = t.unk
        out_s[n] = first
        out_e[n] = last + 1
        return n + 1
    n0 = n
    start = 0
    while start < length:
        node = t.root_cont if start > 0 else t.root_first
        found = -1
        end = start
        j = start
        while j < length:
            slot = pair_slot(t.tkeys, node, wcp[j])
            if slot < 0:
                break
            node = t.tchild[slot]
            j += 1
            if t.term[node] >= 0:
                found = t.term[node]
                end = j
        if found < 0:  # nothing matches here: the whole word is one [UNK]
            out_ids[n0] = t.unk
            out_s[n0] = first
            out_e[n0] = last + 1
            return n0 + 1
        out_ids[n] = found
        out_s[n] = worig[start]
        out_e[n] = worig[end - 1] + 1
        n += 1
        start = end
    return n


@numba.njit(cache=True, nogil=True)
def _segment(t, cps, lo, hi, wcp, worig, out_ids, out_s, out_e, n):
    """Normalize, pre-tokenize and WordPiece the original characters ``[lo, hi)``."""
    cap = t.max_word_chars + 1
    length = 0
    first = 0
    last = 0
    for i in range(lo, hi):
        c = cps[i]
        for j in range(t.norm_off[c], t.norm_off[c + 1]):
            x = t.norm_pool[j]
            k = t.kind[x]
            if k == K_WORD:
                if length == 0:
                    first = i
                if length < cap:
                    wcp[length] = x
                    worig[length] = i
                length += 1
                last = i
                continue
            if length > 0:
                n = _word(t, wcp, worig, length, first, last, out_ids, out_s, out_e, n)
                length = 0
            if k == K_PUNCT:
                wcp[0] = x
                worig[0] = i
                n = _word(t, wcp, worig, 1, i, i, out_ids, out_s, out_e, n)
    if length > 0:
        n = _word(t, wcp, worig, length, first, last, out_ids, out_s, out_e, n)
    return n


@numba.njit(cache=True, nogil=True)
def _encode_range(t, cps, c0, c1, ls, le, lid, nlit, out_ids, out_s, out_e):
    """(ids, starts, ends) of original characters ``[c0, c1)`` (a certified range: the
    text's ends or cuts), literals of the whole text in ``ls[:nlit]``; fresh arrays.

    ``out_*``: the thread's token buffers, used when they can hold the range's bound
    (otherwise buffers of that size are made for the call).
    """
    k = np.searchsorted(ls[:nlit], c0)
    total = 0
    for i in range(c0, c1):
        total += t.norm_off[cps[i] + 1] - t.norm_off[cps[i]]
    # every token holds >= 1 normalized character, or is a literal
    size = total + (np.searchsorted(ls[:nlit], c1) - k) + 1
    if size > out_ids.size:
        out_ids = np.empty(size, dtype=np.uint32)
        out_s = np.empty(size, dtype=np.int64)
        out_e = np.empty(size, dtype=np.int64)
    cap = t.max_word_chars + 1
    wcp = np.empty(cap, dtype=np.int64)
    worig = np.empty(cap, dtype=np.int64)
    n = 0
    pos = c0
    while pos < c1:
        seg_end = c1
        if k < nlit and ls[k] < c1:
            seg_end = ls[k]
        if seg_end > pos:
            n = _segment(t, cps, pos, seg_end, wcp, worig, out_ids, out_s, out_e, n)
        if seg_end < c1:
            out_ids[n] = lid[k]
            out_s[n] = ls[k]
            out_e[n] = le[k]
            n += 1
            pos = le[k]
            k += 1
        else:
            pos = c1
    return out_ids[:n].copy(), out_s[:n].copy(), out_e[:n].copy()


@numba.njit(cache=True, nogil=True)
def _decode(u8, f1, k1, c1, t1, f2, k2, c2, t2, has2, wk):
    """Code points of valid UTF-8 and the literals the reference cuts out first, in the
    workspace ``wk`` (at least ``u8.size`` entries): (cps, ls, le, lid, nlit), views."""
    n = utf8_decode(u8, wk.cps, wk.char_start)
    cps = wk.cps[:n]
    nlit = _cpu._find_literals(cps, n, f1, k1, c1, t1, f2, k2, c2, t2, has2, wk.ls, wk.le, wk.lid)
    return cps, wk.ls, wk.le, wk.lid, nlit


@numba.njit(cache=True, nogil=True)
def _cuts(t, cps, ls, le, nlit):
    """Every certified cut ``p`` (0 < p < n): after a whitespace-only character, with no
    literal crossing it."""
    n = cps.size
    out = np.empty(n, dtype=np.int64)
    m = 0
    k = 0
    for p in range(1, n):
        while k < nlit and le[k] <= p:
            k += 1
        if t.cut_after[cps[p - 1]] and not (k < nlit and ls[k] < p < le[k]):
            out[m] = p
            m += 1
    return out[:m]


@numba.njit(cache=True, nogil=True)
def _unsafe_positions(t, cps):
    out = np.empty(cps.size, dtype=np.int64)
    m = 0
    for i in range(cps.size):
        if t.unsafe[cps[i]]:
            out[m] = i
            m += 1
    return out[:m]


@numba.njit(cache=True, nogil=True)
def _split(t, cps):
    """Pieces (starts, ends) of the pre-tokenizer alone on original characters (split level):
    runs of word characters, each punctuation character alone, whitespace dropped."""
    n = cps.size
    starts = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    m = 0
    w0 = -1
    for i in range(n):
        k = t.kind[cps[i]]
        if k == K_WORD:
            if w0 < 0:
                w0 = i
            continue
        if w0 >= 0:
            starts[m] = w0
            ends[m] = i
            m += 1
            w0 = -1
        if k == K_PUNCT:
            starts[m] = i
            ends[m] = i + 1
            m += 1
    if w0 >= 0:
        starts[m] = w0
        ends[m] = n
        m += 1
    return starts[:m], ends[:m]


class Workspace(NamedTuple):
    """A thread's reusable buffers (``cpu.thread_workspace``: made once at the budget, pages
    touched only as used): a request allocates nothing text-sized but its result."""

    cps: np.ndarray  # uint32[cap]
    char_start: np.ndarray  # int64[cap + 1] (written by the decode, not read)
    ls: np.ndarray  # int64[cap]: literal starts, ends, ids
    le: np.ndarray
    lid: np.ndarray
    out_ids: np.ndarray  # uint32[2 cap + 2]: tokens before the copy out
    out_s: np.ndarray  # int64[2 cap + 2]
    out_e: np.ndarray


def _new_workspace(cap: int) -> Workspace:
    e = np.empty
    return Workspace(e(cap, np.uint32), e(cap + 1, np.int64), e(cap, np.int64),
                     e(cap, np.int64), e(cap, np.int64), e(2 * cap + 2, np.uint32),
                     e(2 * cap + 2, np.int64), e(2 * cap + 2, np.int64))  # fmt: skip


# --- tables ------------------------------------------------------------------------------
def _vocab_trie(vocab: dict[str, int], prefix: str):
    """The vocabulary as one trie: each entry under FIRST, and each "##" entry also under
    CONT with the "##" left off (what the reference's ``"##" + piece`` lookup finds)."""
    entries = []
    for tok_str, i in vocab.items():
        if FIRST in tok_str or CONT in tok_str:
            raise EngineUnsupported(f"vocabulary entry {tok_str!r} holds a trie root marker")
        entries.append((FIRST + tok_str, i))
        if tok_str.startswith(prefix) and len(tok_str) > len(prefix):
            entries.append((CONT + tok_str[len(prefix) :], i))
    trie = build_trie(entries)
    roots = [int(trie.child[pair_slot(trie.keys, 0, ord(r))]) for r in (FIRST, CONT)]
    return trie, roots


_TABLES: dict[tuple[str, str], tuple[WordPieceTables, list]] = {}
_TABLES_LOCK = threading.Lock()


def _tables_for(tok) -> tuple[WordPieceTables, list]:
    """The tables of ``tok`` (built once per process: ~4 s of reference calls)."""
    key = (str(tok.path), tok.sha256)
    with _TABLES_LOCK:
        if key not in _TABLES:
            _TABLES[key] = _build_tables(tok)
        return _TABLES[key]


def _build_tables(tok) -> tuple[WordPieceTables, list]:
    import json

    doc = json.loads(tok.hf.to_str())
    model = doc["model"]
    if model.get("type") != "WordPiece":
        raise EngineUnsupported("not a WordPiece model")
    norm, pre = doc.get("normalizer") or {}, doc.get("pre_tokenizer") or {}
    if norm.get("type") != "BertNormalizer" or pre.get("type") != "BertPreTokenizer":
        raise EngineUnsupported(
            f"WordPiece with {norm.get('type')!r} / {pre.get('type')!r} (implemented: "
            "BertNormalizer / BertPreTokenizer)"
        )
    for t in tok.added_tokens:
        if t.lstrip or t.rstrip or t.single_word:
            raise EngineUnsupported(f"added token {t.content!r} uses lstrip/rstrip/single_word")
        if t.normalized and t.content:
            raise EngineUnsupported(f"normalized added token {t.content!r}")
    vocab = model["vocab"]
    if model["unk_token"] not in vocab:
        raise EngineUnsupported("the unknown token is not in the vocabulary")
    normalize = tok.hf.normalizer.normalize_str
    pretok = tok.hf.pre_tokenizer.pre_tokenize_str
    forms: list[str] = []
    kind = np.zeros(0x110000, dtype=np.uint8)
    for c in range(0x110000):
        if 0xD800 <= c < 0xE000:
            forms.append(chr(0xFFFD))  # never in a valid text; any form will do
            continue
        ch = chr(c)
        forms.append(normalize(ch))
        pieces = [p for p, _ in pretok("a" + ch + "a")]
        kind[c] = (K_SPACE if pieces == ["a", "a"] else K_PUNCT if len(pieces) == 3
                   else K_WORD)  # fmt: skip
    lengths = np.fromiter((len(f) for f in forms), dtype=np.int64, count=0x110000)
    norm_off = np.zeros(0x110001, dtype=np.int64)
    np.cumsum(lengths, out=norm_off[1:])
    norm_pool = np.frombuffer("".join(forms).encode("utf-32-le"), dtype=np.uint32).astype(np.int32)
    cut_after = np.zeros(0x110000, dtype=np.uint8)
    unsafe = np.zeros(0x110000, dtype=np.uint8)
    for c, f in enumerate(forms):
        if f and all(kind[ord(x)] == K_SPACE for x in f):
            cut_after[c] = 1
        if any(unicodedata.combining(x) for x in f):
            unsafe[c] = 1
    trie, (root_first, root_cont) = _vocab_trie(vocab, model["continuing_subword_prefix"])
    tables = WordPieceTables(norm_off, norm_pool, kind, cut_after, unsafe, trie.keys, trie.child,
                             trie.term, root_first, root_cont, int(vocab[model["unk_token"]]),
                             int(model["max_input_chars_per_word"]))  # fmt: skip
    raw = [(t.content, t.id) for t in tok.added_tokens if t.content]
    return tables, raw


# --- the engine --------------------------------------------------------------------------
class WordPieceEngine:
    """toktier's exact CPU engine for WordPiece with the BERT normalizer (``Engine`` protocol)."""

    name = "numba-cpu-wordpiece"

    def __init__(self, tok, *, threads: int | None = None,
                 workspace_bytes: int = _cpu.WORKSPACE_MAX_BYTES):  # fmt: skip
        if tok.family != "wordpiece":
            raise EngineUnsupported(f"family {tok.family!r} is not WordPiece")
        self.tokenizer = tok
        self.workspace_bytes = workspace_bytes  # texts beyond it go in parts (bounded memory)
        self.tables, raw = _tables_for(tok)
        lit, nlit = build_trie(raw), build_trie([])
        self._trie_args = (lit.first, lit.keys, lit.child, lit.term,
                           nlit.first, nlit.keys, nlit.child, nlit.term, False)  # fmt: skip
        self.threads = threads or numba.config.NUMBA_NUM_THREADS
        self.compile_seconds: float | None = None
        self._parts = _cpu.PartsPool("toktier-wp")
        self._local = threading.local()
        self.literal_probes = check_literals(tok, lambda text: self.encode(text)[0])

    def __repr__(self) -> str:
        return f"WordPieceEngine({self.tokenizer.name!r})"

    def warmup(self) -> float:
        t0 = time.perf_counter()
        sample = "Hello, World! Ünïcödé 中文 [CLS] x\U0001d165\U0001d16d it's 2026\n\t" * 3
        self.encode(sample)
        self.encode_parallel(sample * 8, threads=2, min_chars=0)
        self.split(sample)
        self.compile_seconds = time.perf_counter() - t0
        return self.compile_seconds

    # --- split level ------------------------------------------------------------------
    def split(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Piece (start, end) character offsets of the pre-tokenizer alone on ``text``
        (no normalization, no added tokens): the split-level certificate's counterpart of
        the reference ``pre_tokenizer.pre_tokenize_str``."""
        check_text(text)
        cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        return _split(self.tables, cps)

    # --- encode -------------------------------------------------------------------------
    def _workspace(self, nb: int) -> Workspace:
        return _cpu.thread_workspace(self._local, nb, self.workspace_bytes, _new_workspace)

    def _prepare(self, text: str):
        """(cps, ls, le, lid, nlit) in this thread's workspace (valid until its next call)."""
        u8 = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        return _decode(u8, *self._trie_args, self._workspace(u8.size))

    def certified_cuts(self, text: str) -> np.ndarray:
        """Every position where the engine may cut ``text`` (for certification)."""
        check_text(text)
        cps, ls, le, _lid, nlit = self._prepare(text)
        return _cuts(self.tables, cps, ls, le, nlit)

    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids uint32, starts int64, ends int64): exact IDs and each token's character span."""
        check_text(text)
        return self._encode(text, threads=1)

    def encode_ids(self, text: str, threads: int | None = None) -> np.ndarray:
        """The exact IDs alone, on the full path (as ``CpuEngine.encode_ids``)."""
        return self.encode_parallel(text, threads)[0]

    def encode_full(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.encode_parallel(text)

    def encode_parallel(
        self, text: str, threads: int | None = None, *,
        min_chars: int = _cpu.MIN_PARALLEL_CHARS,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
        """Like ``encode``, cut at certified cuts into one part per thread."""
        check_text(text)
        threads = threads or self.threads
        if len(text) < min_chars or threads <= 1:
            return self.encode(text)
        return self._encode(text, threads=threads)

    def _encode(self, text: str, threads: int):
        t = self.tables
        cps, ls, le, lid, nlit = self._prepare(text)
        n = cps.size
        # Parts: one per thread, and none beyond the workspace budget's size in characters
        # (the campaign's small-budget engine goes in many parts through here).
        parts = max(threads, -(-len(text) // max(1, self.workspace_bytes // 2)))
        unsafe = _unsafe_positions(t, cps)
        cuts = _cuts(t, cps, ls, le, nlit) if parts > 1 or unsafe.size else None
        plan: list[tuple[int, int, bool]] = []  # (lo, hi, by the engine)
        ref: list[tuple[int, int]] = []  # stretches around unsafe characters: the reference
        if unsafe.size:
            for u in unsafe.tolist():
                k = int(np.searchsorted(cuts, u, side="right"))
                a = int(cuts[k - 1]) if k > 0 else 0
                b = int(cuts[k]) if k < cuts.size else n
                if ref and a <= ref[-1][1]:
                    ref[-1] = (ref[-1][0], max(b, ref[-1][1]))
                else:
                    ref.append((a, b))
        pos = 0
        for a, b in [*ref, (n, n)]:
            if a > pos:
                plan.extend((x, y, True) for x, y in _chunks(pos, a, parts, cuts))
            if b > a:
                plan.append((a, b, False))
            pos = b
        if not plan:
            return (np.zeros(0, np.uint32), np.zeros(0, np.int64), np.zeros(0, np.int64))

        def run(lo, hi, engine):
            if engine:  # token buffers of the thread that runs the part
                wk = self._workspace(hi - lo)
                return _encode_range(t, cps, lo, hi, ls, le, lid, nlit, wk.out_ids, wk.out_s,
                                     wk.out_e)  # fmt: skip
            enc = self.tokenizer.hf.encode(text[lo:hi], add_special_tokens=False)
            off = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
            return (np.asarray(enc.ids, dtype=np.uint32), off[:, 0] + lo, off[:, 1] + lo)

        if threads > 1 and len(plan) > 1:
            pool = self._parts.get(threads - 1)
            groups = [plan[len(plan) * r // threads : len(plan) * (r + 1) // threads]
                      for r in range(threads)]  # fmt: skip
            futures = [pool.submit(lambda g: [run(*p) for p in g], g) for g in groups[1:]]
            results = [run(*p) for p in groups[0]]
            for f in futures:
                results += f.result()
        else:
            results = [run(*p) for p in plan]
        if len(results) == 1:
            return results[0]
        return tuple(np.concatenate([r[k] for r in results]) for k in range(3))


def _chunks(lo: int, hi: int, parts: int, cuts) -> list[tuple[int, int]]:
    """``[lo, hi)`` cut at certified cuts near ``parts`` equal sizes."""
    if parts <= 1 or cuts is None or hi - lo < 2:
        return [(lo, hi)]
    out, pos = [], lo
    for k in range(1, parts):
        target = lo + (hi - lo) * k // parts
        j = int(np.searchsorted(cuts, max(target, pos + 1)))
        if j < cuts.size and pos < cuts[j] < hi:
            out.append((pos, int(cuts[j])))
            pos = int(cuts[j])
    out.append((pos, hi))
    return [(a, b) for a, b in out if b > a] or [(lo, hi)]


__all__ = ["WordPieceEngine", "WordPieceTables"]
