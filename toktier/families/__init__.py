"""Pre-tokenizer families, detected from a tokenizer.json's structure, never from its name.

A family fixes the rules that repair and the engine rely on (which boundaries
are stable, how pieces are cut).  A tokenizer is placed in a family only when
its normalizer, pre-tokenizer and model match that family's shape exactly;
anything else is ``unsupported`` and always takes the reference path.
"""

from __future__ import annotations

from .detect import BYTE_LEVEL_FAMILIES, ENGINE_FAMILIES, FAMILIES, classify, detect_family

__all__ = ["BYTE_LEVEL_FAMILIES", "ENGINE_FAMILIES", "FAMILIES", "classify", "detect_family"]
