"""Compatibility name of ``toktier.engine.gpu.ranges`` (the one-thread-per-range harness)."""

from .gpu.ranges import (
    DEVICE,
    GPU_CACHE_SLOTS,
    GPU_LONG_SLOTS,
    encode_ranges,
    k_encode_ranges,
    k_split,
    split,
)

__all__ = [
    "DEVICE",
    "GPU_CACHE_SLOTS",
    "GPU_LONG_SLOTS",
    "encode_ranges",
    "k_encode_ranges",
    "k_split",
    "split",
]
