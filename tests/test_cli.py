import csv
import json

import toktier
from toktier.cli import main


def test_tokenizers_table(capsys):
    assert main(["tokenizers"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["name", "family"]
    assert len(out) == 1 + len(toktier.known())
    row = next(line for line in out if line.startswith("gpt-oss"))
    assert "o200k" in row and toktier.load("gpt-oss").sha256[:12] in row


def test_tokenizers_json(capsys):
    assert main(["tokenizers", "--json", "qwen3"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["family"] == "qwen" and rows[0]["vocab_size"] == toktier.load("qwen3").vocab_size


def test_encode_file_and_stdin(tmp_path, capsys, monkeypatch):
    text = "CRLF\r\nline two — ünïcode 12345\n"
    f = tmp_path / "in.txt"
    f.write_bytes(text.encode("utf-8"))
    assert main(["encode", "--tokenizer", "llama3", str(f), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == toktier.load("llama3").reference(text)
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["encode", "-t", "deepseek-v4", "-"]) == 0
    assert [int(x) for x in capsys.readouterr().out.split()] == toktier.load(
        "deepseek-v4"
    ).reference(text)


def test_errors_are_reported_not_raised(tmp_path, capsys):
    assert main(["encode", "--tokenizer", "nope", str(tmp_path / "x")]) == 2
    assert "Known names" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok \xff\xfe not utf-8")
    assert main(["encode", "--tokenizer", "llama3", str(bad)]) == 2
    assert "not valid UTF-8 (byte offset 3)" in capsys.readouterr().err
    for flag in ("--batch-graphs", "--no-batch-graphs", "--short-map", "--no-short-map", "--units"):
        assert main(["certify-engine", "--chars", "10", flag, "llama3"]) == 2
        assert "apply to --device gpu" in capsys.readouterr().err


def test_tokenizers_table_says_why_a_tokenizer_stays_on_the_reference(capsys, tmp_path):
    doc = toktier.load("llama3").document()
    doc["model"]["byte_fallback"] = True
    odd = tmp_path / "tokenizer.json"
    odd.write_text(json.dumps(doc))
    assert main(["tokenizers", str(odd), "bert-uncased", "tekken", "mistral-sp-v1"]) == 0
    out = capsys.readouterr().out
    assert "outside the SentencePiece shape" in out
    assert "engine + repair (WordPiece rules)" in out and "engine + repair" in out  # tekken
    assert "engine + repair (SentencePiece rules)" in out


def test_bench_continuation_times_any_tokenizer_and_checks_the_tier(tmp_path, capsys,
                                                                     trajectory_archive):  # fmt: skip
    out, run = tmp_path / "c.csv", tmp_path / "c.json"
    args = ["bench-continuation", "--tokenizers", "mistral-sp-v1", "--contexts", "4000",
            "--samples", "2", "--archive", str(trajectory_archive), "--out", str(out),
            "--run", str(run), "--quiet"]  # fmt: skip
    assert main(args) == 0
    rows = list(csv.DictReader(out.open()))
    methods = {r["method"] for r in rows}
    assert methods == {"tier append", "tier full text", "reference full re-encode"}
    assert all(r["exact"] == "True" for r in rows if r["method"].startswith("tier"))
    assert main([*args[:-1], "--methods", "tier append,warp drive"]) == 2
    assert "unknown methods" in capsys.readouterr().err


def test_an_output_path_that_cannot_be_a_file_is_refused_before_any_work(tmp_path, capsys,
                                                                         monkeypatch):  # fmt: skip
    """--out / --run / --table naming a folder, or below a file, is an error at once (exit 2),
    before the command runs: a long benchmark used to fail only when it wrote its answer."""
    import toktier.cli as cli

    ran = []
    monkeypatch.setattr(cli, "_cmd_bench_continuation", lambda args: ran.append(args) or 0)
    a_file = tmp_path / "f.csv"
    a_file.write_text("")
    for extra, what in (
        (["--out", str(tmp_path)], "is a folder"),
        (["--run", str(tmp_path)], "is a folder"),
        (["--out", str(a_file / "x.csv")], "is a file, not a folder"),
    ):
        assert main(["bench-continuation", "--tokenizers", "llama3", *extra]) == 2
        assert what in capsys.readouterr().err
    assert ran == []
    out = tmp_path / "new" / "deeper" / "t.csv"
    assert main(["bench-continuation", "--out", str(out), "--run", str(a_file)]) == 0
    assert len(ran) == 1


def test_engine_targets_figure_from_a_table_names_every_run_behind_it(tmp_path, capsys,
                                                                      monkeypatch):  # fmt: skip
    """``--from-table`` draws the committed grid without running it; rows a later run added
    (``--also-run``) are named in the title with their commit, and the counts cover them."""
    import toktier.bench.engine_targets as ET

    cols = ["tokenizer", "text", "chars", "toktier_1t_ms", "toktier_all_ms", "gigatoken_empty_ms",
            "fastokens_ms", "hf_ms", "1t_vs_gigatoken", "1t_vs_hf", "all_vs_fastokens",
            "parallel_speedup"]  # fmt: skip
    rows = [["llama3", "code", 1_000_000, 10, 7, 8, 6, 700, 0.8, 70, 0.86, 1.43],
            ["deepseek-v4", "code", 1_000_000, 11, 7, 12, 6, 800, 1.09, 73, 0.86, 1.57]]  # fmt: skip
    table = tmp_path / "t.csv"
    with open(table, "w", newline="") as f:
        csv.writer(f).writerows([cols, *rows])
    first, later = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"machine": {"cpu": "CPU", "cores": 2, "commit": "a" * 40}}))
    later.write_text(json.dumps({"machine": {"commit": "b" * 40},
                                 "summary": [{"tokenizer": "deepseek-v4"}] * 3}))  # fmt: skip
    titles = []
    real = ET.plot_targets
    monkeypatch.setattr(ET, "plot_targets",
                        lambda t, path, title: titles.append(title) or real(t, path, title))  # fmt: skip
    fig = tmp_path / "f.png"
    assert main(["bench-engine-targets", "--from-table", str(table), "--run", str(first),
                 "--also-run", str(later), "--figure", str(fig)]) == 0  # fmt: skip
    assert fig.stat().st_size > 0
    assert "runs (CPU x 2 @ aaaaaaa; deepseek-v4 @ bbbbbbb)" in titles[0]
    assert "1t_vs_gigatoken 1 of 2" in capsys.readouterr().out
