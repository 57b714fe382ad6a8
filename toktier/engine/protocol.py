"""The engine interface that ``Tier`` and ``Router`` are written against.

``Engine``: what every exact engine offers -- ``ReferenceEngine``, the numba
``CpuEngine`` and the ``GpuEngine`` (and test doubles):

- ``name``;
- ``encode(text) -> (ids uint32, starts int64, ends int64)``: each token's
  character span in ``text`` (single thread: the window engine of repair);
- ``encode_full(text)``: the same result on the full path (may use every core,
  or the device);
- ``encode_ids(text) -> ids uint32``: the IDs alone on the full path, for callers that
  need no spans (``Tier``'s stateless requests); an engine may skip span work here;
- ``warmup() -> float``: compile or load everything outside request latency,
  returning the seconds it took (0.0 when there is nothing to do).

``OffloadEngine``: an ``Engine`` that serves misses off the CPU (the GPU
engine), with ``busy()`` -- True while a request is in flight, so the router
can spill to the CPU engine instead of queueing.

Both are ``runtime_checkable``: ``isinstance`` checks that the members exist
(not their signatures).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

Encoding = tuple[np.ndarray, np.ndarray, np.ndarray]  # (ids uint32, starts int64, ends int64)


@runtime_checkable
class Engine(Protocol):
    name: str

    def encode(self, text: str) -> Encoding: ...

    def encode_full(self, text: str) -> Encoding: ...

    def encode_ids(self, text: str) -> np.ndarray: ...

    def warmup(self) -> float: ...


@runtime_checkable
class OffloadEngine(Engine, Protocol):
    def busy(self) -> bool: ...


__all__ = ["Encoding", "Engine", "OffloadEngine"]
