"""Shared fixtures.  TOKTIER_EXAMPLES sets the hypothesis example count (CI small, campaigns large)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "toktier",
    max_examples=int(os.environ.get("TOKTIER_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("toktier")

REGISTRY_FAMILIES = {
    "llama3": "cl100k",
    "deepseek-v4": "deepseek",
    "bert-uncased": "wordpiece",
    "qwen3": "qwen",
    "qwen3.6": "qwen-lm",
    "gpt-oss": "o200k",
    "cl100k": "cl100k",
    "tekken": "tekken",
    "mistral-sp-v1": "sentencepiece",  # reference engine, repaired (certificate from the vocabulary)
    "mistral-sp-v3": "sentencepiece",
}
# tokenizers with a repair certificate (the rest are always encoded in full, by the reference)
REPAIRABLE = [n for n, f in REGISTRY_FAMILIES.items() if f != "unsupported"]


@pytest.fixture(scope="session")
def trajectory_archive():
    from toktier.workload import archives

    path = archives.find_archive("mini-swe-agent")
    if path is None:
        pytest.skip("trajectory archive not available (no ../shared/data mirror)")
    return path
