"""``GpuEngine``: the host side of the GPU pipeline -- tables, workspaces, launches, deliveries.

The engine builds the device tables once per tokenizer (three named tuples,
``device.TextTables``/``LiteralTrie``/``BpeTables``), keeps one workspace of
buffers per input-size bucket, and launches the kernel chain of ``stages``,
``scans`` and ``bpe`` on its backend's stream (``backends``); see the package
docstring for the pipeline and its exactness argument.  A SentencePiece tokenizer
(built from its ``SentencePieceEngine``) shares the front stages (decode, literals,
certified cuts) and replaces pre-tokenization, BPE and output with
``stages.k_sp_segments`` / ``k_sp_output`` (``rules.sp_segment`` per segment).
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from numba import cuda

from ...families import stability
from ...textcheck import COMPILED_MIN_CHARS, utf8_array, utf8_bytes
from .. import cpu
from .. import rules as _rules
from ..tables import EngineUnsupported
from . import bpe, scans, stages
from .backends import _make_backend
from .device import (
    BLOCK_MAX,
    M_N,
    M_NB,
    M_NBIG,
    M_NCAND,
    M_NHUGE,
    M_NLIT,
    M_NMATCH,
    M_NMID,
    M_NP,
    M_NSEG,
    M_NTOK,
    M_NUNITS,
    M_SIZE,
    M_UBYTES,
    M_UNSAFE,
    MODE_LITERALS,
    SMALL_MAX,
    WARP_MAX,
    BpeTables,
    LiteralTrie,
    TextTables,
)
from .sim import SIMULATOR
from .units import UnitBuffer

# The chain has deliberately small grids (one-thread walks, scan tails, empty work lists):
# numba-cuda's low-occupancy warning would print a line per such launch configuration.
warnings.filterwarnings(
    "ignore", message=r"Grid size \d+ will likely result in GPU under-utilization"
)

SpTables = _rules.SpTables


# --- host side ------------------------------------------------------------------------------
class GpuUnavailable(EngineUnsupported):
    """No usable CUDA GPU (and no simulator): the GPU engine cannot run here."""


_INT = np.int32  # index buffers (capacities stay far below 2**31)
_COUNTS = (("chars", M_N), ("literals", M_NLIT), ("segments", M_NSEG), ("pieces", M_NP),
           ("warp_pieces", M_NMID), ("block_pieces", M_NBIG), ("heap_pieces", M_NHUGE),
           ("tokens", M_NTOK), ("nfc_unsafe_chars", M_UNSAFE))  # fmt: skip


class _Workspace:
    """Every buffer of one pipeline run, sized by a byte capacity (reused across requests)."""

    def __init__(self, be, cap: int, engine: GpuEngine, docs: int = 1):
        g = be.geometry
        self.cap = cap
        e = be.empty
        self.params = e(4, np.int64)
        self.meta = e(M_SIZE, np.int64)
        self.u8 = e(cap, np.uint8)
        self.units = e(cap if engine.units else 1, np.uint16)  # 16-bit uploads (chars <= bytes)
        for name in ("flag", "cidx", "lcand", "lidx", "cand", "mflag", "midx", "mcand", "e_raw",
                     "id_raw", "ls", "le", "lid", "lmark", "cut", "sidx", "ends", "pflag", "pidx",
                     "cnt", "toff", "wl_mid", "wl_big", "wl_huge", "otmp"):  # fmt: skip
            setattr(self, name, e(cap, _INT))
        has2 = engine._has2
        for name in ("a_s", "a_e", "a_id", "e_norm", "id_norm"):  # only two-pass tokenizers
            setattr(self, name, e(cap if has2 else 1, _INT))
        self.cps = e(cap, np.uint32)
        self.fl = e(cap, np.uint16)
        self.char_start = e(cap + 1, _INT)
        self.seg_lo = e(cap + 1, _INT)
        self.piece_lo = e(cap + 1, _INT)
        # SentencePiece: a segment yields up to its bytes plus one "▁" (slots from
        # char_start[lo] + k), so its token and scratch buffers are twice as long.
        tok_cap = 2 * cap + 2 if engine.sp_tables is not None else cap
        if engine.sp_tables is not None:
            self.otmp = e(tok_cap, _INT)
            self.o_s = e(tok_cap, _INT)
            self.o_e = e(tok_cap, _INT)
        for name in ("sym", "rnk", "nxt", "prv"):
            setattr(self, name, e(tok_cap, np.int64))
        self.heap = e(3 * tok_cap, np.int64)
        self.packed = e(3 * tok_cap, np.int64)
        tile = g.scan_bd * g.scan_ipt
        self.sums = e(-(-(cap + 1) // tile) + 1, np.int64)
        self.graph = None
        self.set_docs(be, np.zeros(1, dtype=_INT), docs)

    def set_docs(self, be, doc_lo: np.ndarray, capacity: int | None = None) -> None:
        need = max(len(doc_lo), capacity or 0, 1)
        if getattr(self, "doc_cap", 0) < need:
            self.doc_cap = need
            self.doc_lo = be.empty(need, _INT)
            self.doc_unsafe = be.empty(need, _INT)
            self.graph = None  # a captured chain would read the freed document arrays
        be.put(self.doc_lo, doc_lo.astype(_INT))


@dataclass
class _Stats:
    requests: int = 0
    host_syncs: int = 0
    kernel_launches: int = 0
    graph_replays: int = 0
    delegated_docs: int = 0
    last: dict = field(default_factory=dict)


class GpuEngine:
    """toktier's exact GPU engine for one tokenizer (byte-level BPE and SentencePiece BPE)."""

    name = "gpu"

    def __init__(self, tok, *, graphs: bool | None = None, batch_graphs: bool | None = None,
                 block_max: int = BLOCK_MAX, buckets: tuple[int, ...] | None = None, cpu=None,
                 short_map: bool | None = None, units: bool = False,
                 _backend=None):  # fmt: skip
        from ..cpu import CpuEngine, engine_for

        if _backend is None and not self.available():
            raise GpuUnavailable("no usable CUDA GPU with CuPy (and NUMBA_ENABLE_CUDASIM is off)")
        self.tokenizer = tok
        self._cpu = cpu or engine_for(tok) or CpuEngine(tok)  # raises EngineUnsupported
        if tok.family == "wordpiece":
            raise EngineUnsupported("WordPiece has no GPU kernels (its CPU engine serves)")
        sp_engine = getattr(self._cpu, "sp", None) is not None  # SentencePieceEngine
        self.tables = t = self._cpu.tables if not sp_engine else self._cpu.text_tables()
        self._be = be = _backend or _make_backend()
        if block_max < WARP_MAX:
            raise ValueError(f"block_max must be >= {WARP_MAX}")
        self.block_max = int(block_max)
        # The CPU engine's short-piece map on the device too (byte-level BPE): pieces that
        # are whole tokens skip the thread-per-piece merges.  Default (None): on, certified
        # so by GPU campaigns of all seven byte-level tokenizers (qwen3, llama3, gpt-oss,
        # tekken on an H200 at 37b2bd9; deepseek-v4, cl100k, qwen3.6 on an H100 at c28a7b7;
        # 0 divergences); exact by construction.  SentencePiece has no map.
        self.short_map = (True if short_map is None else bool(short_map)) and not sp_engine
        # A non-ASCII request (characters below U+10000) uploaded as 16-bit units, its UTF-8
        # written on the device (``units``: a compiled pass over the str's storage instead
        # of the UTF-8 upload).  Certified on all nine tokenizers (``certify-engine --device
        # gpu --units``: H100 c3c171c, H200 f7ff5c3; 0 divergences) but off: since the UTF-8
        # upload's host side became a compiled pass (``engine.utf8``) it is no slower (paired
        # 0.85-1.10x at >= 1M chars on the H200, docs/gpu.md).
        self.units = bool(units)
        self._unit_buffer = UnitBuffer()
        self.buckets = tuple(sorted(buckets or be.buckets))
        if graphs and be.simulator:
            graphs = False
        self.graphs = (not be.simulator) if graphs is None else bool(graphs)
        self.graphs_reason = be.graphs_reason if be.simulator else ("" if self.graphs else "off")
        # Batches replay a graph too: their workspaces get document arrays for as many
        # documents as bytes, so the pointers a graph holds never move.  Default (None): on,
        # certified so on an H100 (2026-11-26: six byte-level tokenizers and both
        # SentencePiece ones, 0 divergences; 1.2-2.0x on experiment 06's batches).
        self.batch_graphs = (True if batch_graphs is None else bool(batch_graphs)) and self.graphs
        self._has2 = bool(t.normalized_literals.size > 0)
        class_of = stability.class_map_for(tok)
        stable = np.ascontiguousarray(stability.cut_matrix(tok.family))
        d = be.to_device
        # The tables, on the device, as three named tuples (numba-cuda passes tuples of
        # arrays as kernel arguments; the kernels read the fields by name).
        self.text_tables = TextTables(
            bits=d(t.bits),
            fold=d(t.fold),
            class_of=d(class_of.astype(np.uint8)),
            stable=d(stable.astype(np.uint8)),
            family=int(t.family_code),
            nfc=bool(t.nfc),
        )
        self.tries = tuple(
            LiteralTrie(d(trie.first), d(trie.keys), d(trie.child), d(trie.term))
            for trie in (t.literals, t.normalized_literals)
        )
        self.sp_tables = None
        if sp_engine:  # SentencePiece: its own merges, the character tables (rules.SpTables)
            b, sp = self._cpu.bpe, self._cpu.sp
            self.bpe_tables = BpeTables(*(d(x) if isinstance(x, np.ndarray) else x for x in b))
            self.sp_tables = SpTables(*(d(x) if isinstance(x, np.ndarray) else x for x in sp))
            self._no_cache = d(np.zeros((1, _rules.CACHE_COLS), dtype=np.int64))
        else:
            self._build_bpe_tables(t, d)
        self._lock = threading.Lock()
        self._inflight = 0
        self._inflight_lock = threading.Lock()
        self._spaces: dict[int, _Workspace] = {}  # single requests (graphs live here)
        self._batch_spaces: dict[int, _Workspace] = {}
        self._stats = _Stats()
        self.compile_seconds: float | None = None

    def _build_bpe_tables(self, t, d) -> None:
        self.bpe_tables = BpeTables(
            byte_ids=d(t.byte_ids),
            merges=d(t.merge_table),
            merged=d(t.merged),
            pair_filter=d(t.pair_filter),
            byte_pairs=d(self._cpu.bpe.byte_pairs),
            vkeys=d(t.vocab_keys),
            vids=d(t.vocab_ids),
            pool=d(t.pool),
            pool_off=d(t.pool_off),
            ignore_merges=bool(t.ignore_merges),
            nbytes=d(t.token_nbytes),
            smap=d(self._cpu.bpe.smap if self.short_map
                   else np.zeros((1, _rules.SHORT_COLS), dtype=np.int64)),  # one empty row: none
            # the family matchers, as certified on GPUs (the automaton is the CPU's, for now)
            pre_classes=d(np.zeros(1, dtype=np.uint8)),
            pre_table=d(np.zeros(1, dtype=np.int32)),
            pre_pairs=d(np.zeros(1, dtype=np.int16)),
            # the CPU's up-front pair merges are not certified on GPUs: off
            pm_index=d(_rules.premerge_off()[0]),
            pm_rows=d(_rules.premerge_off()[1]),
            direct=bool(t.direct_merged),
        )

    def __repr__(self) -> str:
        return f"GpuEngine({self.tokenizer.name!r}, backend={self._be.name}, graphs={self.graphs})"

    # --- availability and state -------------------------------------------------------------
    @classmethod
    def available(cls) -> bool:
        """True with the CUDA simulator on, or with a real CUDA GPU and CuPy importable."""
        if SIMULATOR:
            return True
        try:
            import cupy

            return bool(cuda.is_available()) and cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:
            return False

    @property
    def backend(self) -> str:
        return self._be.name

    def busy(self) -> bool:
        """True while a request is in flight (a router may spill to the CPU meanwhile)."""
        return self._inflight > 0

    def stats(self) -> dict:
        s = self._stats
        per = s.host_syncs / s.requests if s.requests else 0.0
        return {
            "backend": self._be.name,
            "graphs_enabled": self.graphs,
            "graphs_reason": self.graphs_reason,
            "batch_graphs": self.batch_graphs,
            "short_map": self.short_map,
            "units": self.units,
            "requests": s.requests,
            "host_syncs": s.host_syncs,
            "host_syncs_per_request": per,
            "kernel_launches": s.kernel_launches,
            "graph_replays": s.graph_replays,
            "delegated_docs": s.delegated_docs,
            "buckets": list(self.buckets),
            "captured_buckets": sorted(c for c, w in self._spaces.items() if w.graph is not None),
            "last_request": dict(s.last),
        }

    def device_facts(self) -> dict:
        return self._be.device_facts()

    def synchronize(self) -> None:
        """Wait for the engine's stream (timing of device-array delivery; not a request)."""
        self._be.synchronize()

    @contextlib.contextmanager
    def _request(self, kind: str, docs: int = 1):
        """One request: the device lock, in-flight flag and per-request sync accounting."""
        with self._inflight_lock:
            self._inflight += 1
        try:
            with self._be.lock, self._lock:
                s0, l0 = self._be.syncs, self._be.launches
                info = {"kind": kind, "docs": docs, "graph": False, "delegated": 0,
                        "units": False}  # fmt: skip
                yield info
                info["host_syncs"] = self._be.syncs - s0
                info["kernel_launches"] = self._be.launches - l0
                st = self._stats
                st.requests += 1
                st.host_syncs += info["host_syncs"]
                st.kernel_launches += info["kernel_launches"]
                st.graph_replays += int(info["graph"])
                st.delegated_docs += info["delegated"]
                st.last = info
        finally:
            with self._inflight_lock:
                self._inflight -= 1

    # --- workspaces and the kernel chain ----------------------------------------------------
    def _capacity(self, nb: int) -> int:
        for c in self.buckets:
            if nb <= c:
                return c
        top = self.buckets[-1]
        return -(-nb // top) * top

    def _workspace(self, nb: int, *, batch: bool = False) -> _Workspace:
        """The workspace of ``nb``'s bucket.  Batches have their own: their document arrays
        grow (dropping the workspace's graph), or, with ``batch_graphs``, hold one entry per
        byte from the start (a batch of non-empty documents never has more)."""
        spaces = self._batch_spaces if batch else self._spaces
        cap = self._capacity(nb)
        ws = spaces.get(cap)
        if ws is None:
            if cap > self.buckets[-1]:  # one oversized workspace at a time
                for c in [c for c in spaces if c > self.buckets[-1]]:
                    self._be.forget(spaces.pop(c))
            docs = cap if batch and self.batch_graphs else 1
            ws = spaces[cap] = _Workspace(self._be, cap, self, docs)
        return ws

    def _scan(self, ws: _Workspace, len_idx: int, src, dst, total_idx: int) -> None:
        g = self._be.geometry
        L = self._be.launch
        tile = g.scan_bd * g.scan_ipt
        blocks = g.blocks(ws.cap + 1, tile)
        L(scans.k_scan_reduce, blocks, g.scan_bd, ws.meta, len_idx, src, ws.sums, g.scan_ipt)
        L(scans.k_scan_sums, 1, g.scan_bd, ws.meta, len_idx, total_idx, ws.sums, tile)
        L(scans.k_scan_apply, blocks, g.scan_bd, ws.meta, len_idx, src, dst, ws.sums,
          g.scan_ipt)  # fmt: skip

    def _pipeline(self, ws: _Workspace, *, literals: bool, stage: str) -> None:
        """Launch the chain on the stream; nothing here reads the device (graph-capturable).

        Kernels are looked up on their modules at each launch (``stages.k_cuts``...), so
        a test can substitute one.
        """
        be, g = self._be, self._be.geometry
        text, (raw, norm), tables = self.text_tables, self.tries, self.bpe_tables
        L = be.launch
        S = stages
        cap = ws.cap
        el = g.blocks(cap, g.bd)
        L(S.k_begin, 1, 1, ws.params, ws.meta)
        if self.units:  # stage 0: a 16-bit upload's UTF-8 (no work when UTF-8 was uploaded)
            L(S.k_units_len, el, g.bd, ws.meta, ws.units, ws.flag)
            self._scan(ws, M_NUNITS, ws.flag, ws.cidx, M_UBYTES)
            L(S.k_units_write, el, g.bd, ws.meta, ws.units, ws.cidx, ws.u8)
        L(S.k_start_flags, el, g.bd, ws.meta, ws.u8, ws.flag, ws.doc_unsafe)
        self._scan(ws, M_NB, ws.flag, ws.cidx, M_N)
        L(S.k_decode, el, g.bd, ws.meta, ws.u8, ws.flag, ws.cidx, text, raw, norm, ws.doc_lo,
          ws.cps, ws.char_start, ws.fl, ws.lcand, ws.lmark, ws.doc_unsafe)  # fmt: skip
        if literals:
            self._scan(ws, M_N, ws.lcand, ws.lidx, M_NCAND)
            L(S.k_compact, el, g.bd, ws.meta, M_N, ws.lcand, ws.lidx, ws.cand)
            L(S.k_lit_match, el, g.bd, ws.meta, ws.cps, ws.cand, ws.doc_lo, raw, norm,
              self._has2, ws.mflag, ws.e_raw, ws.id_raw, ws.e_norm, ws.id_norm)  # fmt: skip
            self._scan(ws, M_NCAND, ws.mflag, ws.midx, M_NMATCH)
            L(S.k_compact, el, g.bd, ws.meta, M_NCAND, ws.mflag, ws.midx, ws.mcand)
            L(S.k_lit_walk, 1, 1, ws.meta, ws.cps, ws.cand, ws.mcand, ws.doc_lo, norm,
              self._has2, ws.e_raw, ws.id_raw, ws.e_norm, ws.id_norm, ws.a_s, ws.a_e, ws.a_id,
              ws.ls, ws.le, ws.lid)  # fmt: skip
            L(S.k_mark_literals, el, g.bd, ws.meta, ws.ls, ws.le, ws.lmark)
        L(S.k_mark_docs, el, g.bd, ws.meta, ws.doc_lo, ws.lmark)
        L(S.k_cuts, el, g.bd, ws.meta, ws.cps, ws.fl, text, ws.lmark, ws.cut)
        self._scan(ws, M_N, ws.cut, ws.sidx, M_NSEG)
        L(S.k_compact, el, g.bd, ws.meta, M_N, ws.cut, ws.sidx, ws.seg_lo)
        L(S.k_close, 1, 1, ws.meta, M_NSEG, M_N, ws.seg_lo)
        if stage == "cuts":
            return
        if self.sp_tables is not None:  # SentencePiece: stages 4-6 in one kernel per segment
            L(S.k_sp_segments, el, g.bd, ws.meta, ws.seg_lo, ws.cps, ws.char_start, ws.u8,
              ws.lmark, ws.lid, self.sp_tables, tables, ws.sym, ws.rnk, ws.nxt, ws.prv, ws.heap,
              self._no_cache, ws.otmp, ws.o_s, ws.o_e, ws.cnt)  # fmt: skip
            self._scan(ws, M_NSEG, ws.cnt, ws.toff, M_NTOK)
            L(S.k_sp_output, el, g.bd, ws.meta, ws.seg_lo, ws.char_start, ws.toff, ws.cnt,
              ws.otmp, ws.o_s, ws.o_e, ws.packed)  # fmt: skip
            return
        L(S.k_pretokenize, el, g.bd, ws.meta, ws.seg_lo, ws.cps, ws.fl, text, ws.lmark, ws.ends,
          ws.pflag)  # fmt: skip
        self._scan(ws, M_N, ws.pflag, ws.pidx, M_NP)
        L(S.k_compact, el, g.bd, ws.meta, M_N, ws.pflag, ws.pidx, ws.piece_lo)
        L(S.k_close, 1, 1, ws.meta, M_NP, M_N, ws.piece_lo)
        if stage == "pieces":
            return
        L(bpe.k_bpe_small, el, g.bd, ws.meta, ws.piece_lo, ws.char_start, ws.u8, ws.lmark, ws.lid,
          tables, self.block_max, ws.otmp, ws.cnt, ws.wl_mid, ws.wl_big, ws.wl_huge)  # fmt: skip
        lists = (ws.piece_lo, ws.char_start, ws.u8, tables, ws.sym, ws.rnk, ws.nxt, ws.prv)
        mid_blocks = g.blocks(-(-cap // (SMALL_MAX + 1)), g.warp_bd // 32)
        L(bpe.k_bpe_warp, mid_blocks, g.warp_bd, ws.meta, ws.wl_mid, *lists, ws.otmp, ws.cnt)
        L(bpe.k_bpe_block, g.blocks(cap, WARP_MAX + 1), g.block_bd, ws.meta, ws.wl_big, *lists,
          ws.otmp, ws.cnt)  # fmt: skip
        L(bpe.k_bpe_huge, g.blocks(-(-cap // (self.block_max + 1)), g.huge_bd), g.huge_bd,
          ws.meta, ws.wl_huge, *lists, ws.heap, ws.otmp, ws.cnt)  # fmt: skip
        self._scan(ws, M_NP, ws.cnt, ws.toff, M_NTOK)
        L(S.k_output, el, g.bd, ws.meta, ws.piece_lo, ws.char_start, ws.lmark, ws.lid, ws.toff,
          ws.cnt, ws.otmp, tables, ws.packed)  # fmt: skip

    def _run(self, ws: _Workspace, u8: np.ndarray | None, doc_lo: np.ndarray, *, literals: bool,
             stage: str, info: dict, units: tuple[np.ndarray, int] | None = None,
             ) -> np.ndarray:  # fmt: skip
        """Upload, run the chain (graph replay when possible), fetch ``meta`` (1 sync).

        ``units``: (16-bit characters, UTF-8 byte count) uploaded instead of ``u8`` (None)."""
        be = self._be
        if units is None:
            be.put(ws.u8, u8)
            nb, nunits = u8.size, 0
        else:
            be.put(ws.units, units[0])
            nb, nunits = units[1], len(units[0])
        mode = MODE_LITERALS if literals else 0
        be.put(ws.params, np.array([nb, len(doc_lo), mode, nunits], dtype=np.int64))
        # Single-request workspaces keep doc_lo = [0] from their creation: it never grows,
        # so a captured graph's pointers stay valid.
        single = ws in self._spaces.values()
        use_graph = self.graphs and (single or self.batch_graphs) and literals and stage == "ids"
        if use_graph and ws.graph is None:
            ws.graph = self._capture(ws)
        if use_graph and ws.graph is not None:
            ws.graph.launch(be.stream)  # GPU-only
            info["graph"] = True
        else:
            self._pipeline(ws, literals=literals, stage=stage)
        meta = be.fetch(ws.meta, M_SIZE)
        for key, idx in _COUNTS:  # device counts, summed over the runs of a request
            info[key] = info.get(key, 0) + int(meta[idx])
        return meta

    def _capture(self, ws: _Workspace):  # GPU-only
        """The bucket's bytes->IDs chain as a CUDA graph; on failure, eager from then on."""
        try:
            return self._be.capture(lambda: self._pipeline(ws, literals=True, stage="ids"))
        except Exception as exc:  # keep serving eagerly, and say why
            self.graphs = False
            self.graphs_reason = f"capture failed: {type(exc).__name__}: {exc}"
            return None

    # --- single request -------------------------------------------------------------------
    def _single(self, text: str, info: dict):
        """Run one text; returns (meta, ws) or None when the text was empty."""
        if self.units and type(text) is str and not text.isascii():
            units = self._unit_buffer.convert(text)  # checks it as utf8_array does
            if units is not None:  # None: a character beyond U+FFFF, the UTF-8 upload serves
                ws = self._workspace(units[1])
                info["units"] = True
                meta = self._run(ws, None, np.zeros(1, dtype=_INT), literals=True,
                                 stage="ids", info=info, units=units)  # fmt: skip
                return meta, ws
        u8 = utf8_array(text)
        if not u8.size:
            return None
        ws = self._workspace(u8.size)
        meta = self._run(ws, u8, np.zeros(1, dtype=_INT), literals=True, stage="ids", info=info)
        return meta, ws

    def _nfc_changes(self, text: str):
        """The NFC stretches of ``text`` that the reference's NFC changes
        (``cpu.nfc_stretch_changes``), or None when it changes none.  Asked only when the
        device flagged NFC-unsafe characters: if None, the device's result is the
        reference's (its input is the text as it stands) and stays; otherwise the CPU
        engine takes the text (``_delegate``) with these stretches, so nothing is
        normalized twice and no fast path is tried that would fail (on 1M characters of
        pycountry catalogs, qwen3: 124 -> 65 ms of host time on the development VM)."""
        cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        norm = self.tokenizer.hf.normalizer.normalize_str
        stretches = cpu.nfc_stretch_changes(norm, cps, self.tables.bits[cps])
        return stretches if stretches[2].any() else None

    def _delegate(self, text: str, info: dict, stretches):
        """The CPU engine's segmented path on all its cores: the reference encodes the
        stretches NFC changes, the engine the NFC-stable gaps between them."""
        info["delegated"] += 1
        return self._cpu.encode_nfc_changed(text, stretches, threads=self._cpu.threads)

    @staticmethod
    def _empty():
        z = np.zeros(0, dtype=np.int64)
        return z.astype(np.uint32), z, z.copy()

    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids uint32, starts int64, ends int64): exact IDs and character spans (2 host syncs)."""
        with self._request("encode") as info:
            r = self._single(text, info)
            if r is None:
                return self._empty()
            meta, ws = r
            if meta[M_UNSAFE] and (changed := self._nfc_changes(text)) is not None:
                return self._delegate(text, info, changed)
            n = int(meta[M_NTOK])
            packed = self._be.fetch(ws.packed, 3 * n)
            return packed[:n].astype(np.uint32), packed[n : 2 * n], packed[2 * n :]

    encode_full = encode  # the device path is the full path

    def encode_ids(self, text: str) -> np.ndarray:
        """The IDs of ``encode`` (the device computes spans with them either way)."""
        return self.encode(text)[0]

    def export_spans(self, text: str) -> np.ndarray:
        """int64[3, n] = (ids, starts, ends), delivered in one device->host copy."""
        with self._request("export") as info:
            r = self._single(text, info)
            if r is None:
                return np.zeros((3, 0), dtype=np.int64)
            meta, ws = r
            if meta[M_UNSAFE] and (changed := self._nfc_changes(text)) is not None:
                return np.stack(self._delegate(text, info, changed)).astype(np.int64)
            n = int(meta[M_NTOK])
            return self._be.fetch(ws.packed, 3 * n).reshape(3, n)

    def encode_list(self, text: str) -> list[int]:
        """The IDs as a Python list (list delivery: ids copied alone, then ``tolist``)."""
        with self._request("list") as info:
            r = self._single(text, info)
            if r is None:
                return []
            meta, ws = r
            if meta[M_UNSAFE] and (changed := self._nfc_changes(text)) is not None:
                return self._delegate(text, info, changed)[0].tolist()
            return self._be.fetch(ws.packed, int(meta[M_NTOK])).tolist()

    def encode_arrays(self, text: str):
        """(ids int64, starts, ends) left on the device (CuPy; NumPy under the simulator).

        One host synchronization (the token count); the arrays are a fresh device
        copy, so the next request does not overwrite them.
        """
        with self._request("arrays") as info:
            r = self._single(text, info)
            if r is None:
                z = self._be.host_to_device_array(np.zeros(0, dtype=np.int64))
                return z, z, z
            meta, ws = r
            if meta[M_UNSAFE] and (changed := self._nfc_changes(text)) is not None:
                ids, s, e = self._delegate(text, info, changed)
                h = self._be.host_to_device_array
                return h(ids.astype(np.int64)), h(s), h(e)
            n = int(meta[M_NTOK])
            out = self._be.device_copy(ws.packed, 3 * n)
            return out[:n], out[n : 2 * n], out[2 * n :]

    # --- split level and cuts (certification) ---------------------------------------------
    def split(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Piece (start, end) offsets of the pre-tokenizer on ``text`` as one input, on the device."""
        return self.split_batch([text])[0]

    def split_batch(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """``split`` of every text, in one pipeline run (documents cut apart, no literals)."""
        if self.sp_tables is not None:
            raise EngineUnsupported("SentencePiece BPE has no pre-tokenizer: no split level")
        with self._request("split", len(texts)) as info:
            return self._batch(texts, info, literals=False, stage="pieces")

    def certified_cuts(self, text: str) -> np.ndarray:
        """Every position the device predicate cuts ``text`` at (literal edges included)."""
        with self._request("cuts") as info:
            u8 = utf8_array(text)
            if not u8.size:
                return np.zeros(0, dtype=np.int64)
            ws = self._workspace(u8.size)
            meta = self._run(ws, u8, np.zeros(1, dtype=_INT), literals=True, stage="cuts",
                             info=info)  # fmt: skip
            seg = self._be.fetch(ws.seg_lo, int(meta[M_NSEG]))
            return seg[1:].astype(np.int64)

    # --- batches ----------------------------------------------------------------------------
    def encode_batch(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Every document's (ids, starts, ends), from one pipeline run per workspace-full.

        Documents are concatenated with a forced cut at every document start (and
        literals never cross a document end), so each equals its own encode.
        """
        with self._request("batch", len(texts)) as info:
            return self._batch(texts, info, literals=True, stage="ids")

    def _batch(self, texts: list[str], info: dict, *, literals: bool, stage: str) -> list:
        # One UTF-8 encode per document: it checks the text, sizes the groups and is the
        # device's input (a batch used to encode non-ASCII documents three times).
        raw = [utf8_bytes(t, f"texts[{i}]") for i, t in enumerate(texts)]
        sizes = [len(r) for r in raw]
        out: list = []
        lo = size = 0
        limit = self.buckets[-1]
        for i, nb in enumerate(sizes):
            if i > lo and size + nb > limit:
                out.extend(self._batch_run(texts[lo:i], raw[lo:i], info, literals=literals,
                                           stage=stage))  # fmt: skip
                lo, size = i, 0
            size += nb
        if lo < len(texts):
            out.extend(self._batch_run(texts[lo:], raw[lo:], info, literals=literals,
                                       stage=stage))  # fmt: skip
        return out

    def _batch_run(self, texts: list[str], raw: list[bytes], info: dict, *, literals: bool,
                   stage: str) -> list:  # fmt: skip
        lens = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        doc_lo = np.zeros(len(texts), dtype=np.int64)
        np.cumsum(lens[:-1], out=doc_lo[1:])
        u8 = np.frombuffer(b"".join(raw), dtype=np.uint8)
        if not u8.size:
            empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
            return [empty if stage == "pieces" else self._empty() for _ in texts]
        ws = self._workspace(u8.size, batch=True)
        ws.set_docs(self._be, doc_lo)
        meta = self._run(ws, u8, doc_lo, literals=literals, stage=stage, info=info)
        bounds = np.append(doc_lo, int(lens.sum()))
        if stage == "pieces":
            npieces = int(meta[M_NP])
            lo = self._be.fetch(ws.piece_lo, npieces + 1).astype(np.int64)
            cut = np.searchsorted(lo[:-1], bounds, side="left")
            return [
                (lo[cut[d] : cut[d + 1]] - bounds[d], lo[cut[d] + 1 : cut[d + 1] + 1] - bounds[d])
                for d in range(len(texts))
            ]
        unsafe = np.zeros(len(texts), dtype=bool)
        if meta[M_UNSAFE]:
            unsafe = self._be.fetch(ws.doc_unsafe, len(texts)).astype(bool)
        n = int(meta[M_NTOK])
        packed = self._be.fetch(ws.packed, 3 * n)
        # Whole-batch arrays, made relative to each document once; each document's result
        # is three slices of them (per-document copies cost ~4 ms on 918 documents).
        cut = np.searchsorted(packed[n : 2 * n], bounds, side="left")
        base = np.repeat(bounds[:-1], np.diff(cut))
        ids = packed[:n].astype(np.uint32)
        starts, ends = packed[n : 2 * n] - base, packed[2 * n :] - base
        res = []
        for d, (a, b) in enumerate(zip(cut[:-1].tolist(), cut[1:].tolist(), strict=True)):
            if unsafe[d] and (changed := self._nfc_changes(texts[d])) is not None:
                res.append(self._delegate(texts[d], info, changed))
            else:
                res.append((ids[a:b], starts[a:b], ends[a:b]))
        return res

    # --- warm-up ----------------------------------------------------------------------------
    def warmup(self, *, capture: bool = True) -> float:
        """Compile every kernel (first launches) and capture every bucket's graph; returns seconds."""
        t0 = time.perf_counter()
        # Every kernel is launched by any run (the warp/block/heap kernels with empty work
        # lists too), so one short text of each path compiles the whole chain.
        sample = "Hello, world! It's 2026 — 123456789 spaces   \n\n\tx\r\n"
        lits = [t.content for t in self.tokenizer.added_tokens[:2] if t.content]
        self.encode_batch([sample, "".join(lits) + sample])
        self.encode(sample)
        # Every delivery once: CuPy compiles its own copy kernels on first use (the first
        # encode_arrays of a fresh H100 process took 141 ms, the next ones ~1 ms).
        self.encode_arrays(sample)
        self.encode_list(sample)
        self.export_spans(sample)
        if self.sp_tables is None:
            self.split(sample)
        # The host's compiled UTF-8 pass, which a long non-ASCII request's upload takes: left
        # cold, the first such request loaded it from numba's cache (the H200 bench's 7-10
        # ms outlier at 100K, 2026-11-28) or compiled it on a fresh machine.
        utf8_array("\u00e9" * COMPILED_MIN_CHARS)
        if capture and self.graphs:
            with self._be.lock, self._lock:
                for cap in self.buckets:
                    for batch in (False, True) if self.batch_graphs else (False,):
                        ws = self._workspace(cap, batch=batch)
                        if ws.graph is None and self.graphs:
                            ws.graph = self._capture(ws)
        self.compile_seconds = time.perf_counter() - t0
        return self.compile_seconds
