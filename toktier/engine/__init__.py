"""Exact engines.  Each has ``name`` and ``encode(text) -> (ids, starts, ends)`` numpy arrays."""

from .reference import ReferenceEngine

__all__ = ["ReferenceEngine"]
