"""Exact engines.  Each has ``name``, ``encode(text) -> (ids, starts, ends)`` numpy arrays
(single thread: repair windows), ``encode_full(text)`` (the full path, may use every core) and
``warmup() -> float`` -- the ``engine.protocol.Engine`` interface ``Tier`` and ``Router`` use
(the GPU engine is also an ``OffloadEngine``: ``busy()``).

- ``reference``: HF tokenizers itself (every family; WordPiece and unsupported stay here);
- ``cpu``: toktier's numba engine for the byte-level BPE families, certified against the
  reference (``toktier certify-engine``), the default wherever it applies;
  ``sentencepiece``: the same for SentencePiece BPE (``rules.sp_*``; ``cpu.new_engine``
  picks the engine of a tokenizer's family);
- ``gpu``: the same rules as a chain of numba-cuda kernels (``engine.gpu.GpuEngine``; a CUDA
  GPU with CuPy, or the CUDA simulator in CI), certified with ``certify-engine --device gpu``.
"""

from .reference import ReferenceEngine


def default_engine(tok):
    """The certified numba engine for ``tok`` when its family has one, else the reference."""
    from .cpu import engine_for

    eng = engine_for(tok)
    return eng if eng is not None else ReferenceEngine(tok)


__all__ = ["ReferenceEngine", "default_engine"]
