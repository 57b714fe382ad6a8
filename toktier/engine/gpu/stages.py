"""The pipeline's stage kernels: UTF-8, literals, cuts, pre-tokenization, output.

Every kernel reads its sizes from the device ``meta`` array (``device.M_*``) and
loops grid-stride over them, so launch geometry depends on buffer capacity only
and no host synchronization happens between stages.  Each rule is a device
function of ``engine.rules`` -- the source the CPU engine compiles:

- stage 0, only for an engine that uploads 16-bit units (``GpuEngine(units=True)``,
  ``k_units_len``, ``k_units_write``): each character's UTF-8 length, a scan, and each
  character writes its bytes -- the UTF-8 that stage 1 reads, built on the device;
- stage 1 (``k_begin``, ``k_start_flags``, ``k_decode``): character starts, a
  scan for the character index of every byte (``scans``), ``rules.decode_at``
  for each character, class bits, NFC quick-check failures, literal candidates;
- stage 2 (``k_lit_match``, ``k_lit_walk``, ``k_mark_literals``, ``k_mark_docs``):
  a thread per candidate finds the longest literal starting there
  (``rules.literal_at``), the matching candidates are compacted, and one thread
  walks only those leftmost-longest (raw literals, then normalized ones in the
  gaps, as ``cpu._find_literals``); each literal marks its span in ``lmark``;
- stage 3 (``k_cuts``): ``rules.cut_ok`` per character -- the certified cut of
  ``cpu._cut_ok`` -- with literal edges and document starts read from ``lmark``;
  the cuts are compacted into segments;
- stage 4 (``k_pretokenize``): thread per segment, ``rules.pretokenize_segment``;
- stage 6 (``k_output``): each piece writes its tokens and their character spans
  (``rules.token_chars``, the walk of ``rules.emit_piece``) into the packed
  ``[ids | starts | ends]`` buffer.

Stage 5, BPE by piece length, is ``bpe``.  SentencePiece BPE (no pre-tokenizer) replaces
stages 4-6 with ``k_sp_segments`` (thread per segment: ``rules.sp_segment``, pieces and
merges and spans) and ``k_sp_output``.
"""

from __future__ import annotations

from numba import cuda

from .device import (
    DEVICE,
    LM_CUT,
    LM_INSIDE,
    LM_LIT,
    M_MODE,
    M_N,
    M_NB,
    M_NCAND,
    M_NDOCS,
    M_NLIT,
    M_NMATCH,
    M_NP,
    M_NSEG,
    M_NTOK,
    M_NUNITS,
    M_SIZE,
    M_UNSAFE,
    MODE_LITERALS,
    NFC_UNSAFE,
)

# The rules' device functions (numba resolves callees as module globals).
cut_ok = DEVICE.cut_ok
decode_at = DEVICE.decode_at
literal_at = DEVICE.literal_at
pretokenize_segment = DEVICE.pretokenize_segment
token_chars = DEVICE.token_chars
sp_segment = DEVICE.sp_segment


# --- every run: the request's parameters into meta ------------------------------------------
@cuda.jit
def k_begin(params, meta):
    if cuda.grid(1) == 0:
        for k in range(M_SIZE):
            meta[k] = 0
        meta[M_NB] = params[0]
        meta[M_NDOCS] = params[1]
        meta[M_MODE] = params[2]
        meta[M_NUNITS] = params[3]


# --- stage 0 (16-bit uploads): the UTF-8 bytes written on the device ---------------------------
@cuda.jit(device=True)
def unit_utf8_length(u):
    """UTF-8 bytes of a character below U+10000 that is not a surrogate (the host uploads
    no other: ``units.UnitBuffer``)."""
    return 1 + int(u >= 0x80) + int(u >= 0x800)


@cuda.jit
def k_units_len(meta, units, ulen):
    """ulen[i] = UTF-8 bytes of character i, for the scan to their byte offsets."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, meta[M_NUNITS], stride):
        ulen[i] = unit_utf8_length(int(units[i]))


@cuda.jit
def k_units_write(meta, units, uoff, u8):
    """Each character writes its UTF-8 bytes at its offset ``uoff[i]``."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, meta[M_NUNITS], stride):
        u = int(units[i])
        b = uoff[i]
        if u < 0x80:
            u8[b] = u
        elif u < 0x800:
            u8[b] = 0xC0 | (u >> 6)
            u8[b + 1] = 0x80 | (u & 0x3F)
        else:
            u8[b] = 0xE0 | (u >> 12)
            u8[b + 1] = 0x80 | ((u >> 6) & 0x3F)
            u8[b + 2] = 0x80 | (u & 0x3F)


# --- stage 1: UTF-8, classes, NFC flags, literal candidates ---------------------------------
@cuda.jit
def k_start_flags(meta, u8, flag, doc_unsafe):
    """flag[b] = 1 where byte b starts a character; clears the per-document NFC flags."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    nb = meta[M_NB]
    for b in range(start, nb, stride):
        flag[b] = 1 if (int(u8[b]) & 0xC0) != 0x80 else 0
    for d in range(start, meta[M_NDOCS], stride):
        doc_unsafe[d] = 0


@cuda.jit(device=True)
def doc_of(doc_lo, nd, i):
    """The document holding character i: the last d with doc_lo[d] <= i."""
    lo = 0
    hi = nd
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if doc_lo[mid] <= i:
            lo = mid
        else:
            hi = mid
    return lo


@cuda.jit
def k_decode(meta, u8, flag, cidx, text, raw, norm, doc_lo, cps, char_start, fl, lcand, lmark,
             doc_unsafe):  # fmt: skip
    """Decode every character, gather its class bits, flag literal candidates and NFC failures.

    ``text``: ``TextTables``; ``raw``/``norm``: the two ``LiteralTrie`` passes.
    """
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    nb = meta[M_NB]
    n = meta[M_N]
    lits = (meta[M_MODE] & MODE_LITERALS) != 0
    nd = meta[M_NDOCS]
    if start == 0:
        char_start[n] = nb
    for b in range(start, nb, stride):
        if flag[b] == 0:
            continue
        i = cidx[b]
        cp, _nbytes = decode_at(u8, b)
        cps[i] = cp
        char_start[i] = b
        f = int(text.bits[cp])
        fl[i] = f
        lmark[i] = 0
        lcand[i] = 1 if lits and (raw.first[cp] != 0 or norm.first[cp] != 0) else 0
        if text.nfc and (f & NFC_UNSAFE) != 0:
            cuda.atomic.add(meta, M_UNSAFE, 1)
            doc_unsafe[doc_of(doc_lo, nd, i)] = 1


# --- stage 2: added-token literals ----------------------------------------------------------
@cuda.jit
def k_compact(meta, len_idx, flag, idx, out):
    """out[idx[i]] = i for every flagged i < meta[len_idx] (after the scan of ``flag``)."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = meta[len_idx]
    for i in range(start, n, stride):
        if flag[i] != 0:
            out[idx[i]] = i


@cuda.jit
def k_lit_match(meta, cps, cand, doc_lo, raw, norm, has2, mflag, e_raw, id_raw, e_norm, id_norm):
    """Thread per candidate: the longest raw (and normalized) literal starting there.

    ``rules.literal_at`` up to the document's end, independent per position --
    the part of the leftmost-longest walk that is parallel.  ``mflag`` marks the
    candidates where some literal starts: only those can ever be taken, so the
    serial walk (``k_lit_walk``) visits nothing else.
    """
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = meta[M_N]
    nc = meta[M_NCAND]
    nd = meta[M_NDOCS]
    for r in range(start, nc, stride):
        i = cand[r]
        d = doc_of(doc_lo, nd, i)
        hi = doc_lo[d + 1] if d + 1 < nd else n
        e, t = literal_at(cps, i, hi, raw.first, raw.keys, raw.child, raw.term)
        e_raw[r] = e
        id_raw[r] = t
        hit = e > 0
        if has2:
            e, t = literal_at(cps, i, hi, norm.first, norm.keys, norm.child, norm.term)
            e_norm[r] = e
            id_norm[r] = t
            hit = hit or e > 0
        mflag[r] = 1 if hit else 0


@cuda.jit
def k_lit_walk(meta, cps, cand, mcand, doc_lo, norm, has2, e_raw, id_raw, e_norm, id_norm,
               a_s, a_e, a_id, ls, le, lid):  # fmt: skip
    """One thread: every document's literals, leftmost-longest, as ``cpu._find_literals``.

    Visits only the matching candidates ``mcand`` (``k_lit_match`` found their
    longest literals).  Pass 1 takes raw literals over the document; pass 2
    normalized literals in the gaps pass 1 leaves -- where a position's longest
    normalized literal overruns its gap, the longest that fits is looked up again
    (``rules.literal_at`` with the gap's end), exactly the CPU's step.  Documents
    are separate inputs: no literal crosses a document end.
    """
    if cuda.grid(1) != 0:
        return
    n = meta[M_N]
    nm = meta[M_NMATCH]
    nd = meta[M_NDOCS]
    m = 0
    j = 0
    for d in range(nd):
        lo = doc_lo[d]
        hi = doc_lo[d + 1] if d + 1 < nd else n
        while j < nm and cand[mcand[j]] < lo:
            j += 1
        j0 = j
        pos = lo
        na = 0
        while j < nm and cand[mcand[j]] < hi:  # pass 1: raw literals
            r = mcand[j]
            i = cand[r]
            e = e_raw[r]
            if i >= pos and e > 0:
                if has2:
                    a_s[na] = i
                    a_e[na] = e
                    a_id[na] = id_raw[r]
                    na += 1
                else:
                    ls[m] = i
                    le[m] = e
                    lid[m] = id_raw[r]
                    m += 1
                pos = e
            j += 1
        if not has2:
            continue
        q = j0
        pos = lo
        for k in range(na + 1):  # pass 2: normalized literals in the gaps
            stop = a_s[k] if k < na else hi
            while q < nm and cand[mcand[q]] < stop:
                r = mcand[q]
                i = cand[r]
                if i >= pos:
                    e = e_norm[r]
                    t = id_norm[r]
                    if e > stop:
                        e, t = literal_at(cps, i, stop, norm.first, norm.keys, norm.child,
                                          norm.term)  # fmt: skip
                    if e > 0:
                        ls[m] = i
                        le[m] = e
                        lid[m] = t
                        m += 1
                        pos = e
                q += 1
            if k < na:
                ls[m] = a_s[k]
                le[m] = a_e[k]
                lid[m] = a_id[k]
                m += 1
                pos = a_e[k]
    meta[M_NLIT] = m


@cuda.jit
def k_mark_literals(meta, ls, le, lmark):
    """Literal k: its start (with its index) and end are cuts, its inside never is."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = meta[M_N]
    nlit = meta[M_NLIT]
    for k in range(start, nlit, stride):
        s = ls[k]
        e = le[k]
        cuda.atomic.or_(lmark, s, LM_CUT | LM_LIT | (k << 3))
        for p in range(s + 1, e):
            cuda.atomic.or_(lmark, p, LM_INSIDE)
        if e < n:
            cuda.atomic.or_(lmark, e, LM_CUT)


@cuda.jit
def k_mark_docs(meta, doc_lo, lmark):
    """Every document start is a cut (documents of a batch are separate inputs)."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = meta[M_N]
    for d in range(start, meta[M_NDOCS], stride):
        p = doc_lo[d]
        if p < n:
            cuda.atomic.or_(lmark, p, LM_CUT)


# --- stage 3: the boundary predicate and segments -------------------------------------------
@cuda.jit
def k_cuts(meta, cps, fl, text, lmark, cut):
    """cut[p]: may the text be cut before character p -- ``rules.cut_ok``, per character.

    Literal edges and document starts (``LM_CUT``) split the reference's input
    too; ``LM_INSIDE`` marks the inside of a literal.
    """
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = meta[M_N]
    for p in range(start, n, stride):
        mk = int(lmark[p])
        ok = cut_ok(p, n, (mk & LM_CUT) != 0, (mk & LM_INSIDE) != 0, cps, fl, text.class_of,
                    text.stable, text.nfc)  # fmt: skip
        cut[p] = 1 if ok else 0


@cuda.jit
def k_close(meta, count_idx, len_idx, lo):
    """lo[meta[count_idx]] = meta[len_idx]: the end sentinel of a compacted start list."""
    if cuda.grid(1) == 0:
        lo[meta[count_idx]] = meta[len_idx]


# --- stage 4: pre-tokenization, thread per segment ------------------------------------------
@cuda.jit
def k_pretokenize(meta, seg_lo, cps, fl, text, lmark, ends, pflag):
    """pflag[p] = 1 where a piece starts; a literal segment is one piece."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    nseg = meta[M_NSEG]
    for k in range(start, nseg, stride):
        lo = seg_lo[k]
        hi = seg_lo[k + 1]
        for p in range(lo, hi):
            pflag[p] = 0
        pflag[lo] = 1
        if (int(lmark[lo]) & LM_LIT) == 0:
            m = pretokenize_segment(cps, fl, text.fold, lo, hi, text.family, ends, lo)
            for q in range(lo, m):
                e = ends[q]
                if e < hi:
                    pflag[e] = 1


# --- stage 6: output compaction and character spans -----------------------------------------
@cuda.jit
def k_output(meta, piece_lo, char_start, lmark, lid, toff, cnt, otmp, bpe, packed):
    """Tokens of piece j at ``toff[j]``: packed = [ids | starts | ends], each ntok long.

    Spans come from the tokens' byte lengths (``bpe.nbytes``), lifted to
    characters by ``rules.token_chars`` over ``char_start`` (paper App. F, Route C).
    """
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    npieces = meta[M_NP]
    ntok = meta[M_NTOK]
    for j in range(start, npieces, stride):
        lo = int(piece_lo[j])
        o = int(toff[j])
        mk = int(lmark[lo])
        if (mk & LM_LIT) != 0:
            packed[o] = lid[mk >> 3]
            packed[ntok + o] = lo
            packed[2 * ntok + o] = piece_lo[j + 1]
        else:
            b = int(char_start[lo])
            base = b
            ci = lo
            cj = lo
            for t in range(cnt[j]):
                tok = otmp[base + t]
                last = b + int(bpe.nbytes[tok]) - 1
                ci, cj = token_chars(char_start, b, last, ci, cj)
                packed[o + t] = tok
                packed[ntok + o + t] = ci
                packed[2 * ntok + o + t] = cj + 1
                b = last + 1


# --- SentencePiece BPE: stages 4-6 as one thread per segment ------------------------------
@cuda.jit
def k_sp_segments(meta, seg_lo, cps, char_start, u8, lmark, lid, sp, bpe, sym, rnk, nxt, prv, heap,
                  cache, otmp, o_s, o_e, cnt):  # fmt: skip
    """Thread per segment (certified cuts, literal edges, document starts): its tokens and
    spans at ``char_start[lo] + k`` (a segment yields at most its bytes plus one "▁").

    A segment that starts the document or follows a literal (``LM_CUT`` without
    ``LM_LIT``) starts a SentencePiece segment and gets the prepended "▁"; one that
    starts at a certified cut inside it does not.  No piece cache (threads would race).
    """
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    nseg = meta[M_NSEG]
    for k in range(start, nseg, stride):
        lo = seg_lo[k]
        hi = seg_lo[k + 1]
        base = char_start[lo] + k
        mk = int(lmark[lo])
        if (mk & LM_LIT) != 0:
            otmp[base] = lid[mk >> 3]
            o_s[base] = lo
            o_e[base] = hi
            cnt[k] = 1
        else:
            m = sp_segment(cps, u8, char_start, lo, hi, (mk & LM_CUT) != 0, sp, bpe, sym[base:],
                           rnk[base:], nxt[base:], prv[base:], heap[3 * base :], cache, False,
                           otmp, o_s, o_e, base)  # fmt: skip
            cnt[k] = m - base


@cuda.jit
def k_sp_output(meta, seg_lo, char_start, toff, cnt, otmp, o_s, o_e, packed):
    """Segment k's tokens to ``toff[k]`` of the packed ``[ids | starts | ends]`` buffer."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    nseg = meta[M_NSEG]
    ntok = meta[M_NTOK]
    for k in range(start, nseg, stride):
        base = char_start[seg_lo[k]] + k
        o = toff[k]
        for t in range(cnt[k]):
            packed[o + t] = otmp[base + t]
            packed[ntok + o + t] = o_s[base + t]
            packed[2 * ntok + o + t] = o_e[base + t]
