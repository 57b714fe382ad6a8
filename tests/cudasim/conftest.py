"""The GPU engine's kernels under the CUDA simulator -- a directory of its own process.

The simulator must be switched on (``NUMBA_ENABLE_CUDASIM=1``) before
``numba.cuda`` is first imported, so these tests cannot share a process with
the main suite.  ``tests/test_gpu_cudasim.py`` (main suite) runs

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cudasim -q -p no:cacheprovider

and asserts it passes; run that command directly to work on the kernels.
Without the variable this directory is not collected at all.

Under the simulator every kernel runs as Python threads (``engine.gpu.sim``
gives it warp shuffles), so these tests use small inputs that still reach
every path: all six byte-level tokenizers, thread/warp/block/heap BPE,
batches, literals, split level, the certified cuts, graph-replay host logic,
NFC delegation, broken kernels caught, the GPU certification campaign, and
SentencePiece BPE (its segment kernel, the prepended "▁" per document and literal).
"""

from __future__ import annotations

import os

import pytest

SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

if not SIMULATED:
    collect_ignore_glob = ["test_*.py"]


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here):
            # int64 wraparound in the rules' hashes: NumPy scalars warn, the device wraps
            item.add_marker(pytest.mark.filterwarnings("ignore::RuntimeWarning"))


@pytest.fixture(scope="session", autouse=True)
def _simulator():
    from toktier.engine import gpu

    assert gpu.SIMULATOR, "NUMBA_ENABLE_CUDASIM=1 must be set before numba.cuda is imported"
    gpu.tune_simulator()


@pytest.fixture(scope="session")
def engine():
    """``engine(name)``: the GPU engine of a tokenizer, built once per session."""
    import toktier
    from toktier.engine import gpu

    built: dict = {}

    def get(name: str):
        if name not in built:
            built[name] = gpu.GpuEngine(toktier.load(name))
        return built[name]

    return get
