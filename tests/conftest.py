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


_CUDASIM_SUITE = pytest.StashKey()
_CUDASIM_TEST = "test_gpu_cudasim.py::test_the_cudasim_suite_passes"


def _xdist_worker() -> bool:
    """Whether this session is one of pytest-xdist's workers (``pytest -n N``)."""
    return "PYTEST_XDIST_WORKER" in os.environ


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist the CUDA-simulator suite's test goes first.  Every worker collects
    every test, so no worker can start the suite at collection (each would); the worker
    that takes this test first starts the suite and waits on its process -- ~5 minutes of
    one core -- while the other workers run the rest, and by the time it moves on they
    have compiled the engine's kernels into the on-disk cache it then loads."""
    if not _xdist_worker():
        return
    for k, item in enumerate(items):
        if item.nodeid.endswith(_CUDASIM_TEST):
            items.insert(0, items.pop(k))
            return


def pytest_collection_finish(session):
    """Start the CUDA-simulator suite (``test_gpu_cudasim.py``) in the background as soon as
    its test is collected: ~5 minutes of one Python thread, which on CI's two cores would
    otherwise run after everything else.  Not in the simulator's own session, nor in an
    xdist worker (``pytest_collection_modifyitems``)."""
    if (session.config.option.collectonly or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
            or _xdist_worker()):  # fmt: skip
        return
    for item in session.items:
        if item.nodeid.endswith(_CUDASIM_TEST):
            session.config.stash[_CUDASIM_SUITE] = item.module
            item.module.start_suite()
            return


def pytest_sessionfinish(session):
    module = session.config.stash.get(_CUDASIM_SUITE, None)
    if module is not None:
        module.stop_suite()  # only if still running: an interrupted or -x session
