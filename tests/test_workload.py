import numpy as np
import pytest

import toktier
from toktier.errors import ChecksumMismatchError, ToktierError
from toktier.workload import archives, stats, templates, trajectories


def _doc(times, usage=(100, 50)):
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task\r\n"}]
    for i, t in enumerate(times):
        msgs.append(
            {
                "role": "assistant",
                "content": f"answer {i}",
                "extra": {
                    "response": {
                        "created": t,
                        "usage": {
                            "prompt_tokens": usage[0],
                            "completion_tokens": 7,
                            "prompt_tokens_details": {"cached_tokens": usage[1]},
                        },
                    }
                },
            }
        )
        msgs.append({"role": "user", "content": "x" * (10 * (i + 1))})
    return {"messages": msgs, "instance_id": "demo"}


def test_parse_trajectory_calls_replay_message_prefixes():
    t = trajectories.parse_trajectory(_doc([100.0, 160.0, 560.0]))
    assert t.session == "demo"
    assert [c.prompt_messages for c in t.calls] == [2, 4, 6]
    assert all(t.messages[c.prompt_messages].role == "assistant" for c in t.calls)
    assert t.calls[1].cached_tokens == 50 and t.calls[2].created == 560.0


def test_call_table_and_summary_by_hand():
    t = trajectories.parse_trajectory(_doc([100.0, 160.0, 560.0]))
    table = stats.call_table([t], None)
    seg = [len(templates.plain(m.role, m.content)) for m in t.messages]
    c = table.columns
    assert c["n_chars"].tolist() == [sum(seg[:2]), sum(seg[:4]), sum(seg[:6])]
    assert c["delta_chars"].tolist() == [sum(seg[:2]), seg[2] + seg[3], seg[4] + seg[5]]
    assert c["first_call"].tolist() == [True, False, False]
    assert np.isnan(c["gap_s"][0]) and c["gap_s"][1:].tolist() == [60.0, 400.0]
    s = stats.summarize(table)
    assert s["sessions"] == 1 and s["calls"] == 3
    assert s["share_no_reusable_prefix"] == pytest.approx(1 / 3)
    assert s["share_gaps_over_300s"] == 0.5 and s["share_gaps_over_3600s"] == 0.0
    assert s["provider_hit_ratio_token_weighted"] == 0.5
    assert s["delta_chars_median"] == np.median([seg[2] + seg[3], seg[4] + seg[5]])


@pytest.mark.parametrize(
    "name", ["llama3", "qwen3.6", "gpt-oss", "cl100k", "deepseek-v4", "bert-uncased"]
)
def test_token_counts_add_up_across_message_segments(name, trajectory_archive):
    """Per-message token counts summed == the reference on the whole rendered prompt."""
    tok = toktier.load(name)
    traj = next(trajectories.iter_trajectories(trajectory_archive, limit=1))
    table = stats.call_table([traj], tok)
    for k in (0, len(traj.calls) // 2, len(traj.calls) - 1):
        end = traj.calls[k].prompt_messages
        full = "".join(templates.render_segments(traj.messages[:end], name))
        assert table.columns["n_tokens"][k] == len(tok.reference(full))
        assert table.columns["n_chars"][k] == len(full)


def test_real_corpus_counts(trajectory_archive):
    trajs = list(trajectories.iter_trajectories(trajectory_archive))
    assert len(trajs) == 500
    assert sum(len(t.calls) for t in trajs) == 20_163
    assert sum(len(t.messages) for t in trajs) == 41_326


def test_archive_verification(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / archives.ARCHIVES["tracelab"].filename).write_bytes(b"not the archive")
    with pytest.raises(ChecksumMismatchError):
        archives.obtain("tracelab", dest=tmp_path / "out.tar.xz", mirror=mirror)
    assert not (tmp_path / "out.tar.xz").exists()
    with pytest.raises(ToktierError, match="not found"):
        archives.obtain(
            "tracelab", dest=tmp_path / "o2.tar.xz", mirror=tmp_path / "empty", network=False
        )
    with pytest.raises(ToktierError, match="could not download"):
        archives.obtain(
            "tracelab", dest=tmp_path / "o3.tar.xz", mirror=tmp_path / "empty",
            source_url=(tmp_path / "no-such-snapshot.tar.gz").as_uri(),
        )  # fmt: skip


def _github_snapshot(path, files: dict[str, bytes], top: str) -> str:
    """A tar.gz laid out like GitHub's snapshot of a commit (one top folder, more files)."""
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tf:
        for name, data in {**files, "README.md": b"not selected", "src/x.py": b"pass\n"}.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path.as_uri()


def test_archive_from_its_public_source_is_checked_by_content(tmp_path):
    """No mirror: the files are taken from the repository snapshot at the pinned commit,
    checked against the pinned content digest, and packed; a changed file is refused."""
    pinned = archives.find_archive("tracelab")
    if pinned is None:
        pytest.skip("tracelab archive not available (no ../shared/data mirror)")
    files = archives.archive_files(pinned)
    arc = archives.ARCHIVES["tracelab"]
    top = f"TraceLab-{arc.origin.commit}"
    url = _github_snapshot(tmp_path / "snap.tar.gz", files, top)
    empty = tmp_path / "empty"
    dest = archives.obtain("tracelab", dest=tmp_path / "a.tar.xz", mirror=empty, source_url=url)
    assert archives.archive_files(dest) == files
    (tmp_path / "snap.tar.gz").unlink()  # a verified rebuild is reused, not fetched again
    assert archives.obtain("tracelab", dest=dest, mirror=empty, network=False) == dest
    dest.write_bytes(dest.read_bytes() + b"\0")  # a changed rebuild is no longer verified
    with pytest.raises(ToktierError, match="not found"):
        archives.obtain("tracelab", dest=dest, mirror=empty, network=False)
    name = sorted(files)[-1]
    bad = {**files, name: files[name] + b" "}
    url = _github_snapshot(tmp_path / "bad.tar.gz", bad, top)
    with pytest.raises(ChecksumMismatchError):
        archives.obtain("tracelab", dest=tmp_path / "b.tar.xz", mirror=empty, source_url=url)
    assert not (tmp_path / "b.tar.xz").exists()
