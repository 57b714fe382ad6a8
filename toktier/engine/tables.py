"""The engine's per-tokenizer tables: numpy arrays built once from tokenizer.json.

Everything the rules (``engine.rules``) read lives here: class bits per code
point and the case-fold table (both probed from the reference), the byte-level
BPE tables (byte -> id, the compact merge table (left, right) -> priority, which
orders as the ranks do and, for every byte-level vocabulary, names the merged token
too), a vocabulary hash for ``ignore_merges``, token byte lengths) and the
added-token tries.  ``EngineTables.build`` refuses tokenizers whose features the
engine does not implement (``EngineUnsupported``) so they stay on the reference.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .. import paths
from ..convert import CHAR_TO_BYTE
from ..families.classes import N_CODEPOINTS, _chunks
from . import rules

ENGINE_FAMILIES = {
    "cl100k": rules.F_CL100K,
    "qwen": rules.F_QWEN,
    "qwen-lm": rules.F_QWEN_LM,
    "o200k": rules.F_O200K,
    "tekken": rules.F_TEKKEN,
    "deepseek": rules.F_DEEPSEEK,
}
FOLD_LETTERS = "stmdrevl"  # the letters of the contraction alternatives
FOLD_PROBE_VERSION = 1


class EngineUnsupported(ValueError):
    """The tokenizer uses a feature the engine does not implement; use the reference."""


@dataclass
class Trie:
    """Added-token literals as a trie over code points (transitions in a hash table)."""

    first: np.ndarray  # uint8[0x110000]: can a literal start with this code point
    keys: np.ndarray  # int64 slots: node * 0x110000 + cp, -1 empty
    child: np.ndarray  # int32 slots: child node
    term: np.ndarray  # int32 per node: token id ending here, -1 none
    size: int  # number of literals


def _capacity(n: int) -> int:
    cap = 16
    while cap < 2 * n + 1:
        cap <<= 1
    return cap


def _pair_slot_hash(keys: np.ndarray, cap_mask: int) -> np.ndarray:
    """The start slot of each key, as ``rules.pair_slot`` computes it (bits 20.. of key*C)."""
    prod = (keys.astype(object) * 0x9E3779B1) >> 20
    return np.array([int(p) & cap_mask for p in prod], dtype=np.int64)


def _insert_all(keys: np.ndarray, start: np.ndarray, cap: int) -> np.ndarray:
    """Linear-probing insert; returns the slot of every key (keys are distinct)."""
    used = np.zeros(cap, dtype=bool)
    slots = np.empty(len(keys), dtype=np.int64)
    mask = cap - 1
    for i, s in enumerate(start.tolist()):
        while used[s]:
            s = (s + 1) & mask
        used[s] = True
        slots[i] = s
    return slots


def build_pair_table(
    left: np.ndarray, right: np.ndarray, values: list[np.ndarray]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Open-addressing table keyed ``(left << 32) | right``; -1 marks an empty slot."""
    keys = (left.astype(np.int64) << 32) | right.astype(np.int64)
    cap = _capacity(len(keys))
    slots = _insert_all(keys, _pair_slot_hash(keys, cap - 1), cap)
    table = np.full(cap, -1, dtype=np.int64)
    table[slots] = keys
    out = []
    for v in values:
        col = np.zeros(cap, dtype=v.dtype)
        col[slots] = v
        out.append(col)
    return table, out


PAIR_LOAD = 0.6  # most slots of the interleaved table's probe sequence share a cache line


MERGE_ID_BITS = 18  # token ids < 2**18 (262,144): a pair's key is 36 bits (``rules.pair_code``)
MERGE_RANK_BITS = 27  # a slot is key << 27 | priority: one int64, 8 bytes
PRIO_GROUP_BITS = 9  # a direct priority is merged id << 9 | place among the merges making it


def build_merge_table(left: np.ndarray, right: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """The BPE merge table, one 8-byte slot per pair: ``(left << 18 | right) << 27 | rank``
    (``ranks``: a rank, or any priority below 2**27 that orders as the ranks do).

    Half the bytes of a key / value pair, so the whole table of a 280K-merge
    vocabulary is 4 MB and stays in the last-level cache where a 16-byte layout
    (8 MB) spilled to memory: merges are bound by these random reads.  The merged
    id is ``rules.merged_token``'s (off a direct priority, else ``merged[rank]``).
    Keys hash as ``rules.pair_code``; -1 marks an empty slot.
    """
    if len(left) and max(int(left.max()), int(right.max())) >= 1 << MERGE_ID_BITS:
        raise EngineUnsupported(f"token ids beyond {1 << MERGE_ID_BITS:,} (merge table key)")
    if len(ranks) and int(ranks.max()) >= 1 << MERGE_RANK_BITS:
        raise EngineUnsupported(f"more than {1 << MERGE_RANK_BITS:,} merges")
    keys = (left.astype(np.int64) << MERGE_ID_BITS) | right.astype(np.int64)
    cap = 16
    while cap * PAIR_LOAD < len(keys) + 1:
        cap <<= 1
    slots = _insert_all(keys, _pair_slot_hash(keys, cap - 1), cap)
    table = np.full(cap, -1, dtype=np.int64)
    table[slots] = (keys << MERGE_RANK_BITS) | ranks.astype(np.int64)
    return table


def direct_priorities(merged: np.ndarray) -> np.ndarray | None:
    """Priorities that order as the ranks do and name the merged token: ``merged << 9 | g``,
    ``g`` the merge's place among those making the same token (``merged``: the kept merges'
    tokens in rank order), or None when no such numbering exists.

    It exists when merged ids never decrease with rank (every byte-level vocabulary in
    the registry: a token's id is its merge's place in training order) and no token is
    made by more than 512 merges: then comparing priorities compares ranks, and the
    merge step reads its new token off the priority (``rules.merged_token``) instead
    of from ``merged[rank]`` -- one random read fewer on each merge's dependency chain.
    """
    if not len(merged):
        return None
    if (np.diff(merged) < 0).any() or int(merged.max()) >= 1 << MERGE_ID_BITS:
        return None
    start = np.flatnonzero(np.r_[True, merged[1:] != merged[:-1]])
    place = np.arange(len(merged)) - np.repeat(start, np.diff(np.r_[start, len(merged)]))
    if int(place.max()) >= 1 << PRIO_GROUP_BITS:
        return None
    return (merged.astype(np.int64) << PRIO_GROUP_BITS) | place


def merge_arrays(model: dict, vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray, bool]:
    """(merge table, merged id per rank, direct) of a BPE model: rank = position in the
    merge list, merged id = vocab[left + right]; a pair listed twice keeps its first
    (lowest) rank, as the reference's map does.  ``direct``: the table holds
    ``direct_priorities`` instead of ranks (same order; ``merged`` is then unused)."""
    merges = model.get("merges") or []
    left = np.empty(len(merges), dtype=np.int64)
    right = np.empty(len(merges), dtype=np.int64)
    merged = np.empty(len(merges), dtype=np.int64)
    for r, m in enumerate(merges):
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        left[r], right[r], merged[r] = vocab[a], vocab[b], vocab[a + b]
    ranks = np.arange(len(merges), dtype=np.int64)
    keys = (left << 32) | right
    _, first_idx = np.unique(keys, return_index=True)
    first_idx.sort()
    prio = direct_priorities(merged[first_idx])
    direct = prio is not None
    table = build_merge_table(left[first_idx], right[first_idx],
                              prio if direct else ranks[first_idx])  # fmt: skip
    return table, (merged.astype(np.int32) if len(merged) else np.zeros(1, np.int32)), direct


def build_premerge(merge_table: np.ndarray, byte_ids: np.ndarray, byte_pairs: np.ndarray,
                   merged: np.ndarray, direct: bool, pool: np.ndarray,
                   pool_off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The byte pairs a piece may merge before its merge loop (``rules.premerged_start``):
    (index int64[65536]: row of pair ``a << 8 | b`` or -1; rows int64[n, 9]: a 256-bit mask
    of the bytes before, one of the bytes after, and the merged token).

    Why it is exact.  BPE merges the pair of lowest rank first (leftmost among equals).
    Let tokens A = byte a, B = byte b stand side by side with (A, B) merging at rank r into
    T.  (1) If every merge that takes T as an input has a rank above r, T joins nothing
    earlier than it would have been made.  (2) Before its turn, A can only be taken by a
    merge (Y, A) of rank < r, where Y is the token then on its left -- and Y always ends
    with the byte before a; so if no merge (Y, A) of rank < r has such a Y (the "before"
    mask), nothing takes A first; (3) the same for B with (B, Z) and the byte after b (the
    "after" mask).  With (2) and (3) no merge of rank < r touches A or B, by (1) none
    touches T, so the merges before rank r are the same with or without T made up front,
    and at rank r the two sequences become equal.  a == b is left out (the pair's own rank
    would tie with its neighbour's).  Pairs whose bytes have no merge are not listed.
    """
    full = merge_table[merge_table != -1]
    key = full >> MERGE_RANK_BITS
    left, right = key >> 18, key & ((1 << 18) - 1)
    prio = full & ((1 << MERGE_RANK_BITS) - 1)
    n_tok = int(pool_off.size - 1)
    size = max(n_tok, int(left.max(initial=0)) + 1, int(right.max(initial=0)) + 1)
    none = np.int64(1) << 40
    lowest = np.full(size, none)  # lowest rank of a merge taking each token as an input
    np.minimum.at(lowest, left, prio)
    np.minimum.at(lowest, right, prio)
    lengths = pool_off[1:] - pool_off[:-1]
    first = np.full(size, -1, np.int64)  # each token's first and last byte (-1: none)
    last = np.full(size, -1, np.int64)
    has = np.flatnonzero(lengths > 0)
    first[has] = pool[pool_off[has]]
    last[has] = pool[pool_off[has + 1] - 1]
    # per byte: the merges taking its token on the right, (rank, last byte of the left
    # token), and on the left, (rank, first byte of the right token)
    as_right = [(prio[right == x], last[left[right == x]]) for x in byte_ids.tolist()]
    as_left = [(prio[left == x], first[right[left == x]]) for x in byte_ids.tolist()]
    index = np.full(65536, -1, np.int64)
    rows = []
    for a in range(256):
        y_rank, y_last = as_right[a]  # merges (Y, A)
        for b in range(256):
            code = int(byte_pairs[(a << 8) | b])
            if a == b or code >= rules.NO_PAIR:
                continue
            r = code >> 32
            t = (r >> PRIO_GROUP_BITS) if direct else int(merged[r])
            if lowest[t] <= r:
                continue
            z_rank, z_first = as_left[b]  # merges (B, Z)
            row = np.zeros(9, np.uint64)
            for col, edge in ((0, y_last[y_rank < r]), (4, z_first[z_rank < r])):
                for c in np.unique(edge[edge >= 0]).tolist():
                    row[col + (c >> 6)] |= np.uint64(1 << (c & 63))
            row[8] = t
            index[(a << 8) | b] = len(rows)
            rows.append(row.view(np.int64))
    return index, (np.array(rows, np.int64) if rows else np.zeros((1, 9), np.int64))


def build_pair_filter(merge_table: np.ndarray) -> np.ndarray:
    """A one-hash bit set over the merge table's keys, 8 bits per table slot (one eighth of
    its bytes; about 6% false positives at the table's load).

    A 0 bit proves the pair has no merge, so ``rules.pair_code`` skips the table for
    most of the pairs the merges ask about.  Bit ``(key * C >> 40) & (bits - 1)``: the
    same product as the table's slot hash, other bits.
    """
    nbits = merge_table.shape[0] * 8
    if nbits > 1 << 23:
        raise EngineUnsupported("merge table too large for the pair filter's hash bits")
    filt = np.zeros(nbits // 64, dtype=np.int64)
    full = merge_table[merge_table != -1]
    keys = full >> MERGE_RANK_BITS
    prod = keys.astype(object) * 0x9E3779B1
    bits = np.array([(int(p) >> 40) & (nbits - 1) for p in prod], dtype=np.int64)
    np.bitwise_or.at(filt, bits >> 6, np.left_shift(np.int64(1), bits & 63))
    return filt


def bytes_hash(data: bytes) -> int:
    """The vocabulary hash of ``rules.vocab_lookup`` (43 bits, so no target overflows)."""
    h = 0
    for b in data:
        h = (h * 1000003 + b + 1) & ((1 << 43) - 1)
    return h


def vocab_slot_start(h: int, mask: int) -> int:
    return ((h * 0x9E3779B1) >> 11) & mask


def probe_fold(reference_version: str) -> np.ndarray:
    """uint8[0x110000]: the ASCII letter (of ``FOLD_LETTERS``) each code point matches under ``(?i:)``.

    Asked of the reference regex engine (it folds U+017F LONG S to ``s``, for one).
    """
    cache = paths.probe_cache() / f"fold-v{FOLD_PROBE_VERSION}-tokenizers{reference_version}.npy"
    if cache.is_file():
        fold = np.load(cache)
        if fold.shape == (N_CODEPOINTS,) and fold.dtype == np.uint8:
            return fold
    from tokenizers import Regex, pre_tokenizers

    fold = np.zeros(N_CODEPOINTS, dtype=np.uint8)
    for letter in FOLD_LETTERS:
        split = pre_tokenizers.Split(Regex(f"(?i:{letter})"), behavior="removed")
        for cps, text in _chunks():
            inside = np.ones(len(cps), dtype=bool)
            for _piece, (a, b) in split.pre_tokenize_str(text):
                inside[a:b] = False
            fold[cps[inside]] = ord(letter)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(cache.name + f".{os.getpid()}.tmp.npy")
    np.save(tmp, fold)
    os.replace(tmp, cache)
    return fold


def build_trie(literals: list[tuple[str, int]]) -> Trie:
    first = np.zeros(N_CODEPOINTS, dtype=np.uint8)
    edges: dict[tuple[int, int], int] = {}
    term = [-1]
    for content, tid in literals:
        node = 0
        for ch in content:
            key = (node, ord(ch))
            if key not in edges:
                edges[key] = len(term)
                term.append(-1)
            node = edges[key]
        term[node] = tid
        first[ord(content[0])] = 1
    if edges:
        src = np.array([k[0] for k in edges], dtype=np.int64)
        cp = np.array([k[1] for k in edges], dtype=np.int64)
        table, (child,) = build_pair_table(
            src, cp, [np.array(list(edges.values()), dtype=np.int32)]
        )
    else:
        table, child = np.full(16, -1, dtype=np.int64), np.zeros(16, dtype=np.int32)
    return Trie(first, table, child, np.array(term, dtype=np.int32), len(literals))


@dataclass
class EngineTables:
    family: str
    family_code: int
    bits: np.ndarray  # uint16[0x110000] class bits (families.classes)
    fold: np.ndarray  # uint8[0x110000]
    nfc: bool  # the tokenizer normalizes with NFC (engine input must be NFC-stable)
    byte_ids: np.ndarray  # int64[256]
    merge_table: np.ndarray  # int64[cap]: key << 27 | rank (``build_merge_table``)
    merged: np.ndarray  # int32[n_merges]: the token a merge of each rank makes
    direct_merged: bool  # the table holds direct priorities (``merge_arrays``)
    pair_filter: np.ndarray  # int64 bit set of the merge table's keys (``build_pair_filter``)
    ignore_merges: bool
    vocab_keys: np.ndarray  # int64 hashes
    vocab_ids: np.ndarray  # int64 token id, -1 empty
    pool: np.ndarray  # uint8: every model token's bytes
    pool_off: np.ndarray  # int64[n_ids + 1]
    token_nbytes: np.ndarray  # int64 per id (0 for ids that are not byte strings)
    literals: Trie  # literals matched on the raw text (pass 1)
    normalized_literals: Trie  # then literals matched on normalized gaps (pass 2)

    @classmethod
    def build(cls, tok) -> EngineTables:
        if tok.family not in ENGINE_FAMILIES:
            raise EngineUnsupported(f"family {tok.family!r} has no engine rules")
        doc = tok.document()  # the bytes load() hashed, never the file again
        model = doc.get("model") or {}
        if model.get("type") != "BPE":
            raise EngineUnsupported("not a BPE model")
        for key in ("dropout", "continuing_subword_prefix", "end_of_word_suffix"):
            if model.get(key):
                raise EngineUnsupported(f"BPE option {key}={model[key]!r} is not implemented")
        if model.get("byte_fallback"):
            raise EngineUnsupported("byte_fallback is not implemented")
        norm = doc.get("normalizer")
        nfc = False
        if norm is not None:
            if norm.get("type") == "NFC":
                nfc = True
            elif not (norm.get("type") == "Sequence" and not norm.get("normalizers")):
                raise EngineUnsupported(f"normalizer {norm.get('type')!r} is not implemented")
        for t in tok.added_tokens:
            if t.lstrip or t.rstrip or t.single_word:
                raise EngineUnsupported(f"added token {t.content!r} uses lstrip/rstrip/single_word")
            if t.normalized and norm is not None and not (norm.get("type") == "Sequence"):
                raise EngineUnsupported(f"normalized added token {t.content!r} under {norm}")

        vocab: dict[str, int] = model["vocab"]
        n_ids = max(tok.hf.get_vocab_size(with_added_tokens=True), max(vocab.values()) + 1)
        token_bytes: list[bytes | None] = [None] * n_ids
        for t, i in vocab.items():
            try:
                token_bytes[i] = bytes(CHAR_TO_BYTE[c] for c in t)
            except KeyError:
                token_bytes[i] = None  # not a byte string: unreachable from bytes
        byte_ids = np.full(256, -1, dtype=np.int64)
        for t, i in vocab.items():
            if len(t) == 1 and t in CHAR_TO_BYTE:
                byte_ids[CHAR_TO_BYTE[t]] = i
        if (byte_ids < 0).any():
            raise EngineUnsupported("the vocabulary lacks single-byte tokens")

        merge_table, merged, direct = merge_arrays(model, vocab)

        # vocabulary hash (for ignore_merges) and the byte pool
        pool_off = np.zeros(n_ids + 1, dtype=np.int64)
        lengths = np.array([len(b) if b is not None else 0 for b in token_bytes], dtype=np.int64)
        pool_off[1:] = np.cumsum(lengths)
        pool = np.frombuffer(b"".join(b for b in token_bytes if b is not None), dtype=np.uint8)
        pool = pool.copy() if len(pool) else np.zeros(1, dtype=np.uint8)
        present = [i for i, b in enumerate(token_bytes) if b]
        cap = _capacity(len(present))
        vocab_keys = np.full(cap, -1, dtype=np.int64)
        vocab_ids = np.full(cap, -1, dtype=np.int64)
        for i in present:
            h = bytes_hash(token_bytes[i])
            s = vocab_slot_start(h, cap - 1)
            while vocab_ids[s] >= 0:
                s = (s + 1) & (cap - 1)
            vocab_keys[s], vocab_ids[s] = h, i

        raw = [(t.content, t.id) for t in tok.added_tokens if t.content and not t.normalized]
        normed = [(t.content, t.id) for t in tok.added_tokens if t.content and t.normalized]
        table = tok.class_table
        return cls(
            family=tok.family,
            family_code=ENGINE_FAMILIES[tok.family],
            bits=table.bits,
            fold=probe_fold(tok.reference_version),
            nfc=nfc,
            byte_ids=byte_ids,
            merge_table=merge_table,
            merged=merged,
            direct_merged=direct,
            pair_filter=build_pair_filter(merge_table),
            ignore_merges=bool(model.get("ignore_merges")),
            vocab_keys=vocab_keys,
            vocab_ids=vocab_ids,
            pool=pool,
            pool_off=pool_off,
            token_nbytes=lengths,
            literals=build_trie(raw),
            normalized_literals=build_trie(normed),
        )
