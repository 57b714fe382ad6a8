"""What every kernel module shares: the rules as device functions, the device data layout.

``DEVICE`` is ``rules.make(cuda.jit(device=True))``: the very functions the CPU
engine compiles with ``numba.njit``, compiled for the GPU.  The kernels call
them through module globals (numba resolves callees that way, and tests patch
them there).

The tables reach the kernels as three named tuples of device arrays (numba-cuda
passes tuples and namedtuples of arrays as kernel arguments, flattened into
the launch's parameters; the fields are read by name inside the kernels):
``TextTables`` (classes, case folding, the cut matrix, the family),
``LiteralTrie`` (one per added-token pass) and ``BpeTables`` (merges and
vocabulary).  ``engine.GpuEngine`` builds them once per tokenizer.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from numba import cuda

from .. import rules as _rules

DEVICE = _rules.make(cuda.jit(device=True))

NO_RANK = _rules.NO_RANK
NFC_UNSAFE = _rules.NFC_UNSAFE

# Piece byte lengths and the BPE kernel that takes them.
SMALL_MAX = 32  # bytes: thread per piece at or below
SMALL_HEAP = 3 * SMALL_MAX  # heap entries of rules.merge_large for such a piece (<= 3L - 3)
WARP_MAX = 128  # bytes: warp per piece at or below
BLOCK_MAX = 4096  # bytes: block per piece at or below; longer: thread + heap (fallback)

# meta: device-side counts and parameters of one pipeline run
M_NB, M_N, M_NCAND, M_NLIT, M_NSEG, M_NP, M_NMID, M_NBIG, M_NHUGE = range(9)
M_NTOK, M_UNSAFE, M_NDOCS, M_MODE, M_NMATCH = range(9, 14)
M_NUNITS, M_UBYTES = 14, 15  # 16-bit characters uploaded (0: UTF-8 was), their UTF-8 bytes
M_SIZE = 16
MODE_LITERALS = 1  # extract added-token literals (off for split-level runs)

# lmark bits per character
LM_INSIDE = 1  # strictly inside a literal: never a cut
LM_CUT = 2  # literal start or end, or a document start: always a cut
LM_LIT = 4  # a literal starts here; its index is lmark >> 3


class TextTables(NamedTuple):
    """Per-code-point tables and the family's settings (``EngineTables`` + cut matrix)."""

    bits: Any  # uint16[0x110000] class bits
    fold: Any  # uint8[0x110000] case folding of the contraction letters
    class_of: Any  # uint8[0x110000] class index of the family's cut matrix
    stable: Any  # uint8[ncls, ncls] stable (cuttable) class pairs
    family: int  # rules.F_* family code
    nfc: bool  # the tokenizer normalizes with NFC


class LiteralTrie(NamedTuple):
    """An added-token trie (``tables.LiteralTrie``): first-code-point flags, edges, terminals."""

    first: Any
    keys: Any
    child: Any
    term: Any


BpeTables = _rules.BpeTables  # the CPU's own: merge table, byte pairs, vocabulary, lengths
