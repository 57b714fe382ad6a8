"""The GPU kernels under the CUDA simulator: ``tests/cudasim``, run in a process of its own.

The simulator must be on (``NUMBA_ENABLE_CUDASIM=1``) before ``numba.cuda`` is
imported, so this test launches ``python -m pytest tests/cudasim`` with the
variable set (forwarding ``TOKTIER_EXAMPLES`` / ``TOKTIER_GPU_EXAMPLES``, which
size its property test) and requires every test there to pass -- none skipped.
What it covers is listed in ``tests/cudasim/conftest.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_cudasim_suite_passes():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/cudasim", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    summary = re.search(r"^=*\s*(\d+) passed(.*) in [\d.]+s", proc.stdout, re.M)
    assert summary, out[-3000:]
    assert int(summary.group(1)) >= 30 and not summary.group(2).strip(", "), summary.group(0)
