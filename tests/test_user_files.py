"""User tokenizer files (issue #13): added-token ids from the reference, one read of the file."""

from __future__ import annotations

import dataclasses
import json
import os
import random

import numpy as np
import pytest

import toktier
from toktier.campaigns import user_files
from toktier.engine.cpu import CpuEngine
from toktier.engine.tables import EngineUnsupported
from toktier.errors import TokenizerFileChangedError

PLAIN = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False}


def _with_added(tmp_path, name: str, extra: list[dict], base: str = "llama3"):
    doc = toktier.load(base).document()
    doc["added_tokens"] += [{**PLAIN, "special": True, **e} for e in extra]
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _same(tok, text: str) -> bool:
    return np.array_equal(tok.encode(text), np.asarray(tok.reference(text), dtype=np.uint32))


def test_added_token_ids_are_the_references_not_the_files(tmp_path):
    # The file: "hello" is a vocabulary entry; the file numbers it 128512.
    # A new literal numbered with a gap: the reference numbers it 128256.
    path = _with_added(
        tmp_path, "user.json",
        [{"id": 128512, "content": "hello"}, {"id": 128900, "content": "zzqq"}],
    )  # fmt: skip
    tok = toktier.load(path)
    ids = {t.content: t.id for t in tok.added_tokens}
    assert ids["hello"] == tok.hf.token_to_id("hello") == 15339
    assert ids["zzqq"] == 128256
    assert tok.engine is not None  # the engine keeps serving it, with the reference's ids
    for text in ("hello world", "xhelloy", "zzqq hello", "say hellohello"):
        assert _same(tok, text), text
    tier = toktier.Tier(tok, verify_rate=0)
    tier.encode("hello", session="s")
    r = tier.append("s", " world zzqq")
    assert list(r.ids) == tok.reference("hello world zzqq")
    assert 128512 not in r.ids


def test_the_literal_probe_refuses_an_engine_whose_literals_disagree(tmp_path):
    # An engine given the file's ids (what the engine did before) is caught by the probe.
    tok = toktier.load(_with_added(tmp_path, "probe.json", [{"id": 128512, "content": "hello"}]))
    wrong = tuple(
        dataclasses.replace(t, id=128512) if t.content == "hello" else t for t in tok.added_tokens
    )
    tok.added_tokens = wrong
    with pytest.raises(EngineUnsupported, match="added tokens"):
        CpuEngine(tok)


def test_the_file_is_read_once(tmp_path):
    # Replace the file between load() and the engine's first use: the engine is built
    # from the bytes load() hashed, so it still knows the literal the reference knows.
    path = _with_added(tmp_path, "swap.json", [{"id": 128256, "content": "zzqq"}])
    tok = toktier.load(path)
    other = tok.document()
    vocab = other["model"]["vocab"]  # a different model: two entries swap ids
    vocab["hello"], vocab["world"] = vocab["world"], vocab["hello"]
    path.write_text(json.dumps(other), encoding="utf-8")
    for text in ("a zzqq b", "hello world, the tokenizer is here", "def f(x):\n    return x"):
        assert _same(tok, text), text
    with pytest.raises(TokenizerFileChangedError, match="changed on disk"):
        tok.checked_path()
    path.unlink()
    with pytest.raises(TokenizerFileChangedError, match="can no longer be read"):
        tok.checked_path()


def test_reference_flags_send_unmodelled_literals_to_the_reference(tmp_path):
    path = _with_added(tmp_path, "lstrip.json", [{"id": 128256, "content": "zz", "lstrip": True}])
    tok = toktier.load(path)
    assert tok.family == "unsupported" and tok.engine is None
    assert _same(tok, "a zz b  zz")


def test_overlapping_and_nested_literals_pair_up():
    pairs = user_files_pairs(["ab", "bc", "xaby", "q"])
    assert ("ab", "bc") in pairs  # suffix "b" of ab is the prefix of bc
    assert ("ab", "xaby") in pairs  # nested
    assert all("q" not in p for p in pairs)


def user_files_pairs(literals):
    from toktier.engine.literal_probe import overlapping_pairs

    return overlapping_pairs(literals, limit=100)


@pytest.mark.parametrize("base", ["llama3", "qwen3"])
def test_mutated_user_files_campaign(tmp_path, base):
    files = int(os.environ.get("TOKTIER_USER_FILES", "2"))
    report = user_files.run_campaign(
        base, files, workdir=tmp_path, seed=random.Random(base).randrange(1000), progress=False
    )
    assert report.divergences == 0, report.failures[:3]
    assert report.files == files
    assert report.engine_kept + sum(report.engine_refused.values()) == files
    assert report.texts > 100 * files and report.tier_requests > 10 * files
