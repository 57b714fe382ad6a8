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

ENGINE_SOURCES = ("rules.py", "cpu.py", "jit.py", "sentencepiece.py")


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
