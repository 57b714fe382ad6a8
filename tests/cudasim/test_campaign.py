"""``toktier certify-engine --device gpu`` runs the campaign end to end (simulator, tiny)."""

from __future__ import annotations

import json

from toktier.cli import main


def test_certify_engine_gpu_campaign(tmp_path, capsys):
    out = tmp_path / "cert.json"
    args = ["certify-engine", "--device", "gpu", "--chars", "300", "--codepoint-stride", "65536",
            "--max-synthetic", "40", "--single-limit", "1", "--cut-limit", "1", "--batch", "64",
            "--units", "--quiet", "--out", str(out), "qwen3"]  # fmt: skip
    assert main(args) == 0, capsys.readouterr()
    rec = json.loads(out.read_text())
    (r,) = rec["results"]
    assert rec["gpu_options"]["units"] and r["engine_stats"]["units"]  # the option reached it
    assert rec["device"] == "gpu" and rec["gpu"]["device"] == "cudasim" and r["device"] == "cudasim"
    assert r["divergences"] == 0 and r["synthetic_inputs"] == 40
    assert r["split_inputs"] >= 41 and r["id_inputs"] >= 41 and r["single_inputs"] >= 1
    assert r["cuts_checked"] >= 1 and r["engine_stats"]["host_syncs_per_request"] >= 1


def test_certify_engine_gpu_campaign_sentencepiece(tmp_path, capsys):
    """SentencePiece on the device: no split level, IDs and spans and cuts all checked."""
    out = tmp_path / "cert.json"
    args = ["certify-engine", "--device", "gpu", "--chars", "300", "--codepoint-stride", "65536",
            "--max-synthetic", "40", "--single-limit", "1", "--cut-limit", "1", "--batch", "64",
            "--quiet", "--out", str(out), "mistral-sp-v3"]  # fmt: skip
    assert main(args) == 0, capsys.readouterr()
    (r,) = json.loads(out.read_text())["results"]
    assert r["family"] == "sentencepiece" and r["divergences"] == 0
    assert r["split_inputs"] == 0 and r["id_inputs"] >= 41 and r["single_inputs"] >= 1
    assert r["cuts_checked"] >= 1
