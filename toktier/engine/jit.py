"""Where compiled engine code is cached, and why it is keyed by the engine's source.

numba's on-disk cache checks only the timestamp of the file that defines each
function.  The engine's compiled entry points (``cpu.py``) embed the rules of
``rules.py``; after an edit of ``rules.py`` alone numba would happily load a
stale ``cpu.py`` binary.  So the cache directory is keyed by a hash of every
engine source file: a change anywhere compiles afresh, never reuses old code.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .. import paths

ENGINE_SOURCES = ("rules.py", "cpu.py", "jit.py", "sentencepiece.py", "ascii_pretok.py")


def source_key() -> str:
    here = Path(__file__).resolve().parent
    h = hashlib.sha256(numba.__version__.encode())
    for name in ENGINE_SOURCES:
        h.update((here / name).read_bytes())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    """``$NUMBA_CACHE_DIR`` (or the data home) / engine-<source hash>."""
    root = os.environ.get("NUMBA_CACHE_DIR")
    base = Path(root) if root else paths.data_home() / "numba-cache"
    return base / f"engine-{source_key()}"


def use_engine_cache() -> Path:
    """Point numba's cache at ``cache_dir()``; call before the engine's functions are decorated."""
    path = cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    numba.config.CACHE_DIR = str(path)
    return path


def unliteral(decorator):
    """``decorator`` (``numba.njit(...)``), except that a call from compiled code compiles the
    callee for its arguments' plain types, never for the literal values a call site passes.

    Why: numba types a constant argument of a call between compiled functions as a literal
    (``Literal[int](0)``, ``Literal[bool](True)``) and compiles the callee once per such
    value, and again for everything it calls.  The rules are small functions called with
    constants from many places: 134 of the 223 specializations a llama3 engine compiled
    were literal ones (``shared_tail`` alone 16), and a cold engine + tier took 253 s
    (llama3, bert-uncased, mistral-sp-v3) against 163 s with this.  The generated code is
    no slower: LLVM inlines these callees and folds the constants at the call site anyway
    (in-process A/B, docs/engine.md).
    """

    def wrap(fn):
        dispatcher = decorator(fn)
        typed = dispatcher.get_call_template

        def get_call_template(args, kws):
            return typed(tuple(types.unliteral(a) for a in args),
                         {k: types.unliteral(v) for k, v in kws.items()})  # fmt: skip

        dispatcher.get_call_template = get_call_template
        return dispatcher

    return wrap


class BoundKernel:
    """A compiled function called through the entry point of its one specialization.

    numba types a call's arguments before dispatching, and named tuples of arrays take
    its slow path (several microseconds).  Every argument here is built by toktier with
    fixed dtypes, so after the first (typed) call the specialization is known and later
    calls go straight to it.  The entry point still checks each array's type while
    unboxing it; a call with other types raises there and goes through the dispatcher.
    """

    __slots__ = ("_dispatcher", "_entry", "_sig")

    def __init__(self, dispatcher):
        self._dispatcher, self._entry, self._sig = dispatcher, None, None

    def __call__(self, *args):
        if self._entry is not None:
            try:
                return self._entry(*args)
            except TypeError:  # the entry point's unboxing refused an argument: dispatch
                return self._dispatcher(*args)
        out = self._dispatcher(*args)
        self._sig = tuple(self._dispatcher.typeof_pyval(a) for a in args)
        self._entry = self._dispatcher.overloads[self._sig].entry_point
        return out

    def check(self, *args) -> bool:
        """Do ``args`` have the types of the bound specialization? (tests)"""
        return self._sig == tuple(self._dispatcher.typeof_pyval(a) for a in args)


@intrinsic
def prefetch_row(typingctx, arr, row):
    """Ask the CPU to start loading the cache line of ``arr[row, 0]`` (or ``arr[row]``).

    A hint only (LLVM's ``llvm.prefetch``: read, keep in all levels): it never changes
    a result.  The piece loop issues it a few pieces ahead, so the random reads of
    the short-piece map and the piece cache overlap instead of waiting one by one.
    """
    if not isinstance(arr, types.Array) or not isinstance(row, types.Integer):
        return None
    sig = types.void(arr, row)

    def codegen(context, builder, signature, args):
        aryty, rowty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        r = context.cast(builder, args[1], rowty, types.intp)
        idx = [r] + [context.get_constant(types.intp, 0)] * (aryty.ndim - 1)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def load_word(typingctx, arr, index):
    """The 8 bytes of a uint8 array from ``index`` as one little-endian int64: one unaligned
    load (LLVM ``load i64, align 1``) where a loop would read them one by one.  The caller
    keeps ``index + 8 <= arr.size``; x86-64 and aarch64 load unaligned words natively."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and arr.ndim == 1
            and arr.layout == "C" and isinstance(index, types.Integer)):  # fmt: skip
        return None  # contiguous bytes only: the word is read from consecutive addresses
    sig = types.int64(arr, index)

    def codegen(context, builder, signature, args):
        aryty, idxty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        i = context.cast(builder, args[1], idxty, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [i], wraparound=False)
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)

    return sig, codegen


@intrinsic
def range_mask32(typingctx, arr, index, lo, hi):
    """Bit j set when ``lo <= arr[index + j] <= hi`` (unsigned bytes), for j < 32: one
    32-byte load, two vector compares against the splatted bounds and the <32 x i1> result
    as an integer (LLVM lowers it to ``vpcmpeqb``/``vpminub``/``vpmovmskb`` on AVX2, to two
    16-byte halves on SSE2).  The caller keeps ``index + 32 <= arr.size``."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and arr.ndim == 1
            and arr.layout == "C" and isinstance(index, types.Integer)):  # fmt: skip
        return None
    sig = types.int64(arr, index, lo, hi)

    def codegen(context, builder, signature, args):
        aryty, idxty, loty, hity = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        i = context.cast(builder, args[1], idxty, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [i], wraparound=False)
        vt = ir.VectorType(ir.IntType(8), 32)
        v = builder.load(builder.bitcast(ptr, vt.as_pointer()), align=1)
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), 32), [0] * 32)

        def splat(x, xty):
            b = builder.trunc(context.cast(builder, x, xty, types.int64), ir.IntType(8))
            one = builder.insert_element(ir.Constant(vt, ir.Undefined), b,
                                         ir.Constant(ir.IntType(32), 0))  # fmt: skip
            return builder.shuffle_vector(one, ir.Constant(vt, ir.Undefined), zeros)

        inside = builder.and_(builder.icmp_unsigned(">=", v, splat(args[2], loty)),
                              builder.icmp_unsigned("<=", v, splat(args[3], hity)))  # fmt: skip
        return builder.zext(builder.bitcast(inside, ir.IntType(32)), ir.IntType(64))

    return sig, codegen


# --- atomics for the shared piece caches (rules' seqlock rows) ----------------------------
# Every read and write of a piece-cache row goes through these: the rows are shared by
# every thread of an engine, so an access that may race another must be atomic for the
# program to have a defined meaning (LLVM's memory model; a plain racing load is undefined).
# On x86-64 the relaxed, acquire and release forms are ordinary moves and the fences only
# stop the compiler reordering; the compare-and-swap is one locked instruction.
def _cell(context, builder, sig, args):
    """Pointer to ``arr[r, c]`` (``args`` = arr, r, c)."""
    aryty = sig.args[0]
    ary = context.make_array(aryty)(context, builder, args[0])
    idx = [
        context.cast(builder, v, t, types.intp)
        for v, t in zip(args[1:3], sig.args[1:3], strict=True)
    ]
    return cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False)


def _is_cell(arr, r, c) -> bool:
    return (
        isinstance(arr, types.Array)
        and arr.ndim == 2
        and arr.dtype == types.int64
        and isinstance(r, types.Integer)
        and isinstance(c, types.Integer)
    )


def _load(ordering):
    @intrinsic
    def load(typingctx, arr, r, c):
        if not _is_cell(arr, r, c):
            return None

        def codegen(context, builder, sig, args):
            return builder.load_atomic(_cell(context, builder, sig, args), ordering, 8)

        return types.int64(arr, r, c), codegen

    return load


def _store(ordering):
    @intrinsic
    def store(typingctx, arr, r, c, v):
        if not _is_cell(arr, r, c) or not isinstance(v, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            val = context.cast(builder, args[3], sig.args[3], types.int64)
            builder.store_atomic(val, _cell(context, builder, sig, args), ordering, 8)
            return context.get_dummy_value()

        return types.void(arr, r, c, v), codegen

    return store


@intrinsic
def cas_acquire(typingctx, arr, r, c, expected, new):
    """``arr[r, c] = new`` if it holds ``expected`` (atomically, acquire): whether it did."""
    if not _is_cell(arr, r, c):
        return None

    def codegen(context, builder, sig, args):
        old = context.cast(builder, args[3], sig.args[3], types.int64)
        val = context.cast(builder, args[4], sig.args[4], types.int64)
        res = builder.cmpxchg(_cell(context, builder, sig, args), old, val, "acquire", "acquire")
        return builder.extract_value(res, 1)

    return types.boolean(arr, r, c, expected, new), codegen


def _fence(ordering):
    @intrinsic
    def fence(typingctx):
        def codegen(context, builder, sig, args):
            builder.fence(ordering)
            return context.get_dummy_value()

        return types.void(), codegen

    return fence


class Atomics:
    """The hooks ``rules.make`` takes for shared rows, as CPU intrinsics."""

    load_relaxed = staticmethod(_load("monotonic"))
    load_acquire = staticmethod(_load("acquire"))
    store_relaxed = staticmethod(_store("monotonic"))
    store_release = staticmethod(_store("release"))
    cas_acquire = staticmethod(cas_acquire)
    fence_acquire = staticmethod(_fence("acquire"))
    fence_release = staticmethod(_fence("release"))
