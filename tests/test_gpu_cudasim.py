"""The GPU kernels under the CUDA simulator: ``tests/cudasim``, run in a process of its own.

The simulator must be on (``NUMBA_ENABLE_CUDASIM=1``) before ``numba.cuda`` is
imported, so this test runs ``python -m pytest tests/cudasim`` with the
variable set, forwarding ``TOKTIER_EXAMPLES`` / ``TOKTIER_GPU_EXAMPLES`` (which size its
property test), and requires every test there to pass -- none skipped.  The run starts in
the background as soon as the session has collected this test (``tests/conftest.py``), so
it overlaps the other tests.
What it covers is listed in ``tests/cudasim/conftest.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 1200
_started: dict = {}


def start_suite() -> None:
    """Launch the simulator suite now, in the background (the conftest calls this once the
    session has collected this test): it is one Python thread for ~5 minutes on a 2-core CI
    machine, so it runs beside the rest of the tests instead of after them."""
    if _started:
        return
    out = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (read by the test, closed with the process)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    _started["out"] = out
    _started["proc"] = subprocess.Popen(
        [sys.executable, "-m", "pytest", "tests/cudasim", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def stop_suite() -> None:
    """End a suite still running when the session ends (a run interrupted, or -x)."""
    proc = _started.get("proc")
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


def test_the_cudasim_suite_passes():
    start_suite()  # already running unless this test was called without the conftest hook
    proc, out_file = _started["proc"], _started["out"]
    try:
        proc.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        stop_suite()
        raise
    out_file.seek(0)
    out = out_file.read()
    assert proc.returncode == 0, out[-8000:]
    summary = re.search(r"^=*\s*(\d+) passed(.*) in [\d.]+s", out, re.M)
    assert summary, out[-3000:]
    assert int(summary.group(1)) >= 30 and not summary.group(2).strip(", "), summary.group(0)
