"""Third-party data archives: obtained from a local mirror or a URL, verified by sha256, never committed."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..artifacts import sha256_file
from ..errors import ChecksumMismatchError, ToktierError


@dataclass(frozen=True)
class Source:
    """Where an archive's files live publicly: a GitHub repository at one commit.

    The mirror's tar.xz cannot be rebuilt byte for byte from GitHub (tar headers,
    compression), so a download is checked by *content*: ``content_sha256`` is
    ``content_digest`` of exactly the selected files, computed from the pinned archive.
    """

    repo: str  # owner/name
    commit: str
    paths: tuple[str, ...]  # files, or folders ending in "/"
    files: int
    content_sha256: str

    def url(self) -> str:
        return f"https://codeload.github.com/{self.repo}/tar.gz/{self.commit}"

    def selects(self, path: str) -> bool:
        return any(path == p or (p.endswith("/") and path.startswith(p)) for p in self.paths)


@dataclass(frozen=True)
class Archive:
    key: str
    filename: str
    sha256: str
    source: str  # where the content comes from (for provenance and citation)
    origin: Source | None = None


# content_digest of the pinned archives' files (508 and 15 files)
MINI_FILES = 508
MINI_CONTENT = "8cb95382247fa37ebd10cb8fbd26ffffd752bb5bb4e3c34a96818cd2df0a5ef7"
TRACELAB_FILES = 15
TRACELAB_CONTENT = "bd162ca46d72f54ce9c1831fc418e9fb8bbf5e8689107f9b776e34b24b8701c3"

ARCHIVES = {
    "mini-swe-agent": Archive(
        "mini-swe-agent",
        "mini-swe-agent-gemini3-swebench-verified.tar.xz",
        "bbf49b1449519b272ae350e2eb3333d5da6c3d3778c5594e76e80ddc66b06134",
        "github.com/gruckion/mini-swe-agent@d12a71affd95403b036b2bdbd827349b77bfffb9 "
        "swebench_results/20251118_gemini-3-pro-74pct/trajs (MIT); SWE-bench bash-only leaderboard run",
        Source(
            "gruckion/mini-swe-agent",
            "d12a71affd95403b036b2bdbd827349b77bfffb9",
            ("LICENSE.md", "swebench_results/20251118_gemini-3-pro-74pct/trajs/"),
            MINI_FILES,
            MINI_CONTENT,
        ),
    ),
    "tracelab": Archive(
        "tracelab",
        "tracelab-example-sessions.tar.xz",
        "f3829c77e125c4483e996deac899d30d85fd3bf07b70fd5a67a60823fa8993de",
        "github.com/uw-syfi/TraceLab@0b8a262ba69602869133b65972d51a388bde45e1 example_sessions/ + replay/examples "
        "(Apache-2.0 code, CC BY 4.0 data)",
        Source(
            "uw-syfi/TraceLab",
            "0b8a262ba69602869133b65972d51a388bde45e1",
            ("LICENSE", "LICENSE-DATASET.md", "example_sessions/", "replay/examples/"),
            TRACELAB_FILES,
            TRACELAB_CONTENT,
        ),
    ),
}


def content_digest(files: dict[str, bytes]) -> str:
    """sha256 over the sorted (path, sha256 of the bytes) pairs: an archive's content identity."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(f"{path}\0{hashlib.sha256(files[path]).hexdigest()}\n".encode())
    return h.hexdigest()


def archive_files(path: Path) -> dict[str, bytes]:
    """The regular files of a tar archive (any compression), by member name."""
    out = {}
    with tarfile.open(path, "r:*") as tf:
        for m in tf.getmembers():
            if m.isfile():
                out[m.name] = tf.extractfile(m).read()
    return out


def _sidecar(dest: Path) -> Path:
    return dest.with_name(dest.name + ".content")


def _verified(dest: Path, arc: Archive) -> bool:
    """The pinned archive itself, or a rebuild from the public source with the pinned content."""
    if not dest.is_file():
        return False
    actual = sha256_file(dest)
    if actual == arc.sha256:
        return True
    side = _sidecar(dest)
    if arc.origin is None or not side.is_file():
        return False
    tar_sha, _, content = side.read_text(encoding="utf-8").strip().partition(" ")
    return tar_sha == actual and content == arc.origin.content_sha256


def _from_source(arc: Archive, tmp_path: Path, url: str) -> str:
    """Download the repository snapshot, keep the selected files, check their content digest,
    and write them as a tar.xz (sorted, fixed metadata); returns the content digest."""
    src = arc.origin
    files: dict[str, bytes] = {}
    try:
        with (
            urllib.request.urlopen(url, timeout=600) as resp,
            tarfile.open(fileobj=resp, mode="r|gz") as tf,
        ):
            for m in tf:  # streamed: the snapshot is never stored whole
                if not m.isfile():
                    continue
                path = m.name.split("/", 1)[1] if "/" in m.name else ""  # drop "<repo>-<commit>/"
                if path and src.selects(path):
                    files[path] = tf.extractfile(m).read()
    except (OSError, tarfile.TarError) as exc:  # URLError is an OSError
        raise ToktierError(
            f"could not download {arc.filename}'s files from {url}: {exc}. Without network access, "
            "set TOKTIER_DATA_MIRROR to a folder holding the archive."
        ) from exc
    digest = content_digest(files)
    if digest != src.content_sha256 or len(files) != src.files:
        raise ChecksumMismatchError(
            f"content of {arc.filename} from {url} ({len(files)} files; pinned {src.files})",
            src.content_sha256,
            digest,
        )
    with tarfile.open(tmp_path, "w:xz") as out:
        for path in sorted(files):
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(files[path]), 0o644, 0
            out.addfile(info, io.BytesIO(files[path]))
    return digest


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
    key: str,
    dest: Path | None = None,
    mirror: Path | None = None,
    url: str | None = None,
    *,
    network: bool = True,
    source_url: str | None = None,
) -> Path:
    """Put a verified copy of the archive at ``dest``: from the mirror, else ``url``, else
    (with ``network``) its public source on GitHub, rebuilt from the pinned commit and
    checked file by file (``Source``).  ``source_url`` replaces the GitHub address (tests)."""
    arc = ARCHIVES[key]
    dest = Path(dest) if dest is not None else archive_dir() / arc.filename
    if _verified(dest, arc):
        return dest
    mirror = Path(mirror) if mirror is not None else default_mirror()
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=dest.parent, delete=False, suffix=".part") as tmp:
        tmp_path = Path(tmp.name)
    content = None
    try:
        if mirror is not None and (mirror / arc.filename).is_file():
            shutil.copyfile(mirror / arc.filename, tmp_path)
            origin = str(mirror / arc.filename)
        elif url:
            with urllib.request.urlopen(url, timeout=120) as resp, open(tmp_path, "wb") as out:
                shutil.copyfileobj(resp, out)
            origin = url
        elif network and arc.origin is not None:
            origin = source_url or arc.origin.url()
            content = _from_source(arc, tmp_path, origin)
        else:
            raise ToktierError(
                f"archive {arc.filename} not found: no mirror holds it (looked in {mirror}), no URL "
                "was given and downloading is off. Set TOKTIER_DATA_MIRROR (or config data.mirror) "
                "to a folder with the file, or data.url to a download address, or allow the "
                f"download from {arc.origin.url() if arc.origin else 'its source'}."
            )
        actual = sha256_file(tmp_path)
        if content is not None:  # rebuilt from the source: identified by its content
            _sidecar(dest).write_text(f"{actual} {content}\n", encoding="utf-8")
        elif actual != arc.sha256:
            raise ChecksumMismatchError(f"archive {arc.filename} from {origin}", arc.sha256, actual)
        else:
            _sidecar(dest).unlink(missing_ok=True)
        os.replace(tmp_path, dest)
    finally:
        tmp_path.unlink(missing_ok=True)
    return dest


def find_archive(key: str) -> Path | None:
    """A verified local copy if one can be had without the network, else None."""
    try:
        return obtain(key, network=False)
    except ToktierError:
        return None
