"""Third-party data archives: obtained from a local mirror or a URL, verified by sha256, never committed."""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..artifacts import sha256_file
from ..errors import ChecksumMismatchError, ToktierError


@dataclass(frozen=True)
class Archive:
    key: str
    filename: str
    sha256: str
    source: str  # where the content comes from (for provenance and citation)


ARCHIVES = {
    "mini-swe-agent": Archive(
        "mini-swe-agent",
        "mini-swe-agent-gemini3-swebench-verified.tar.xz",
        "bbf49b1449519b272ae350e2eb3333d5da6c3d3778c5594e76e80ddc66b06134",
        "github.com/gruckion/mini-swe-agent@d12a71affd95403b036b2bdbd827349b77bfffb9 "
        "swebench_results/20251118_gemini-3-pro-74pct/trajs (MIT); SWE-bench bash-only leaderboard run",
    ),
    "tracelab": Archive(
        "tracelab",
        "tracelab-example-sessions.tar.xz",
        "f3829c77e125c4483e996deac899d30d85fd3bf07b70fd5a67a60823fa8993de",
        "github.com/uw-syfi/TraceLab@0b8a262ba69602869133b65972d51a388bde45e1 example_sessions/ + replay/examples "
        "(Apache-2.0 code, CC BY 4.0 data)",
    ),
}


def default_mirror() -> Path | None:
    """TOKTIER_DATA_MIRROR, else ``../shared/data`` beside the checkout when it exists."""
    env = os.environ.get("TOKTIER_DATA_MIRROR")
    if env:
        return Path(env).expanduser()
    root = paths.repo_root()
    if root is not None and (root.parent / "shared" / "data").is_dir():
        return root.parent / "shared" / "data"
    return None


def archive_dir() -> Path:
    return paths.data_home() / "archives"


def obtain(
    key: str, dest: Path | None = None, mirror: Path | None = None, url: str | None = None
) -> Path:
    """Copy the archive from the mirror (or download it from ``url``) to ``dest`` and verify it."""
    arc = ARCHIVES[key]
    dest = Path(dest) if dest is not None else archive_dir() / arc.filename
    if dest.is_file() and sha256_file(dest) == arc.sha256:
        return dest
    mirror = Path(mirror) if mirror is not None else default_mirror()
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=dest.parent, delete=False, suffix=".part") as tmp:
        tmp_path = Path(tmp.name)
    try:
        if mirror is not None and (mirror / arc.filename).is_file():
            shutil.copyfile(mirror / arc.filename, tmp_path)
            origin = str(mirror / arc.filename)
        elif url:
            with urllib.request.urlopen(url, timeout=120) as resp, open(tmp_path, "wb") as out:
                shutil.copyfileobj(resp, out)
            origin = url
        else:
            raise ToktierError(
                f"archive {arc.filename} not found: no mirror holds it (looked in {mirror}) and no URL "
                "was given. Set TOKTIER_DATA_MIRROR (or config data.mirror) to a folder with the file, "
                "or data.url to a download address."
            )
        actual = sha256_file(tmp_path)
        if actual != arc.sha256:
            raise ChecksumMismatchError(f"archive {arc.filename} from {origin}", arc.sha256, actual)
        os.replace(tmp_path, dest)
    finally:
        tmp_path.unlink(missing_ok=True)
    return dest


def find_archive(key: str) -> Path | None:
    """A verified local copy if one can be had without the network, else None."""
    try:
        return obtain(key)
    except ToktierError:
        return None
