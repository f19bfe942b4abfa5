"""Output folders: abnirml replaces or overwrites only what it wrote, unchanged; every
command here runs between two file-system snapshots (:mod:`.fs_snapshot`)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from .fs_snapshot import Guard, snapshot

RUN = ("run", "--probe", "mmp:tf:length", "--ranker", "bm25", "--no-cache", "--quiet")


@pytest.fixture
def cli(tmp_path, capsys):
    return Guard(tmp_path, capsys)


def _run(cli, out: Path, *extra: str):
    return cli(*RUN, "--out", out, *extra, may_change=[out])


def test_a_folder_holding_user_files_below_its_top_level_is_refused(cli, tmp_path):
    paper = tmp_path / "paper"
    for rel, text in {"report.md": "# my paper\n", "tables/table1.tex": "\\begin{table}\n",
                      "reranked/my-system.run": "q1 Q0 d1 1 2.0 mine\n"}.items():
        (paper / rel).parent.mkdir(parents=True, exist_ok=True)
        (paper / rel).write_text(text)
    line = cli(*RUN, "--out", paper).error_line()       # may change nothing
    assert "holds 'report.md'" in line and "no abnirml manifest" in line


def test_a_file_added_to_or_edited_in_a_run_folder_stops_the_next_run(cli, tmp_path):
    out = tmp_path / "out"
    assert _run(cli, out).code == 0
    (out / "tables" / "table1.tex").write_text("mine\n")
    assert "holds 'tables/table1.tex'" in cli(*RUN, "--out", out).error_line()
    (out / "tables" / "table1.tex").unlink()
    with (out / "report.md").open("a") as handle:
        handle.write("\nmy conclusions\n")
    assert "holds 'report.md'" in cli(*RUN, "--out", out).error_line()
    (out / "report.md").unlink()          # what abnirml wrote, less a file: replaceable
    assert _run(cli, out).code == 0 and (out / "report.md").is_file()


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_run_folders_follow_the_umask(cli, tmp_path, umask):
    previous = os.umask(umask)
    try:
        assert _run(cli, tmp_path / "out").code == 0
    finally:
        os.umask(previous)
    for path in [tmp_path / "out", *(tmp_path / "out").rglob("*")]:
        expected = (0o777 if path.is_dir() else 0o666) & ~umask
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


def test_a_symlinked_out_is_followed_and_never_replaced(cli, tmp_path):
    real = tmp_path / "results"
    real.mkdir()
    link = tmp_path / "latest"
    link.symlink_to(real)
    for _ in range(2):                   # the second run replaces the first, through the link
        assert cli(*RUN, "--out", link, may_change=[real]).code == 0
        assert link.is_symlink() and os.readlink(link) == str(real)
        assert (real / "results.jsonl").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "results"]


def test_report_never_writes_through_a_symlinked_tables_folder(cli, tmp_path):
    out = tmp_path / "out"
    assert _run(cli, out).code == 0
    elsewhere = tmp_path / "thesis-tables"
    (out / "tables").rename(elsewhere)
    (out / "tables").symlink_to(elsewhere)
    line = cli("report", out).error_line()
    assert "tables is a symbolic link" in line


@pytest.mark.parametrize("edited", ["report.md", "tables/per-query.csv"])
def test_report_never_overwrites_a_hand_edited_file(cli, tmp_path, edited):
    out = tmp_path / "out"
    assert _run(cli, out).code == 0
    assert cli("report", out, may_change=[out]).code == 0      # its own files: rebuilt
    with (out / edited).open("a") as handle:
        handle.write("my edit\n")
    assert f"{edited} was edited or not written by abnirml" in cli("report", out).error_line()


def test_report_keeps_the_folder_replaceable(cli, tmp_path):
    out = tmp_path / "out"
    assert _run(cli, out).code == 0
    (out / "report.md").unlink()
    assert cli("report", out, may_change=[out]).code == 0
    from abnirml.files.ownership import MANIFEST

    manifest = json.loads((out / MANIFEST).read_text())["files"]
    assert set(manifest) >= {"report.md", "results.jsonl", "tables/per-query.csv"}
    assert _run(cli, out).code == 0


def test_train_out_never_deletes_a_file_beside_the_model(cli, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "my-notes.txt").write_text("which seeds I tried\n")
    line = cli("train", "--model", "lgbm+rounds=5", "--out", models, "--quiet").error_line()
    assert "holds 'my-notes.txt'" in line


def test_train_replaces_its_own_model_folder(cli, tmp_path):
    pytest.importorskip("lightgbm")
    models = tmp_path / "models"
    for _ in range(2):
        assert cli("train", "--model", "lgbm+rounds=5", "--out", models, "--quiet",
                   may_change=[models]).code == 0
    from abnirml.files.ownership import MANIFEST

    assert (models / MANIFEST).is_file() and (models / "abnirml-model.json").is_file()
    (models / "my-notes.txt").write_text("which seeds I tried\n")    # beside a real model
    line = cli("train", "--model", "lgbm+rounds=5", "--out", models, "--quiet").error_line()
    assert "holds 'my-notes.txt'" in line


def _killed_writer_staging(parent: Path, name: str) -> Path:
    """What a run killed (SIGKILL) while writing leaves: its marked staging folder."""
    from abnirml.files.ownership import make_staging_folder

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                  # the child: start writing, then die
        os.close(read)
        staging = make_staging_folder(parent, name)
        (staging / "results.jsonl").write_text("{}\n")
        os.write(write, str(staging).encode())
        os._exit(0)
    os.close(write)
    path = Path(os.read(read, 4096).decode())
    os.close(read)
    os.waitpid(pid, 0)
    return path


def test_a_killed_runs_staging_folder_is_cleaned_by_the_next_run(cli, tmp_path):
    from abnirml.files.ownership import STAGING_MARK, make_staging_folder

    stale = _killed_writer_staging(tmp_path, "out")
    assert (stale / STAGING_MARK).is_file()
    look_alike = tmp_path / ".abnirml-staging-out-1-notmine"        # no mark, not a pid form
    look_alike.mkdir()
    (look_alike / "keep.txt").write_text("mine\n")
    live = make_staging_folder(tmp_path, "out")                     # this process: alive
    before = snapshot(tmp_path)
    assert cli(*RUN, "--out", tmp_path / "out", may_change=[tmp_path / "out", stale]).code == 0
    assert not stale.exists()
    after = snapshot(tmp_path)
    for keep in (look_alike.name, f"{look_alike.name}/keep.txt", live.name):
        assert after[keep] == before[keep]


def test_a_ranker_spec_over_250_characters_runs_to_the_end(cli, tmp_path):
    spec = "bm25+k1=1." + "0" * 260        # a ranker's name is its spec: 270 characters
    out = tmp_path / "out"
    outcome = cli("run", "--probe", "mmp:tf:length", "--ranker", spec, "--no-cache",
                  "--quiet", "--out", out, may_change=[out])
    assert outcome.code == 0, outcome.err
    runs = sorted(p.name for p in (out / "reranked").iterdir())
    assert len(runs) == 2 and all(len(r.encode()) < 200 for r in runs)


def test_a_cache_inside_out_is_refused_before_scoring(cli, tmp_path):
    out = tmp_path / "out"
    line = cli(*RUN[:-2], "--quiet", "--cache", out / "scores.sqlite", "--out", out).error_line()
    assert "is inside --out" in line


def test_compare_never_writes_through_a_linked_output_file(cli, tmp_path):
    out = tmp_path / "a"
    assert _run(cli, out).code == 0
    mine = tmp_path / "my-table.csv"
    mine.write_text("name,value\n")
    folder = tmp_path / "cmp"
    folder.mkdir()
    (folder / "compare.csv").symlink_to(mine)
    line = cli("compare", out, out, "--a", "bm25", "--b", "bm25", "--out", folder).error_line()
    assert "compare.csv is a symbolic link" in line


def test_rank_origin_files_in_a_run_folder_are_the_runs_to_replace_and_nothing_else(
        cli, tmp_path):
    out = tmp_path / "out"
    assert _run(cli, out).code == 0
    reference = tmp_path / "candidates.run"
    reference.write_bytes((out / "reranked" / "candidates.run").read_bytes())
    assert cli("rank-origin", reference, out / "reranked" / "bm25.run", "--out", out,
               may_change=[out]).code == 0
    assert (out / "rank_origin.csv").is_file()
    assert _run(cli, out).code == 0                    # rank-origin's files: replaceable
    assert not (out / "rank_origin.csv").exists()
    assert cli("rank-origin", reference, out / "reranked" / "bm25.run", "--out", out,
               may_change=[out]).code == 0
    (out / "rank_origin_notes.txt").write_text("mine\n")       # a user's file of like name
    assert "holds 'rank_origin_notes.txt'" in cli(*RUN, "--out", out).error_line()


@pytest.mark.parametrize("entry", ["/etc/hostname", "../elsewhere.txt", "a/../../b", "./x",
                                   "", "a//b"])
def test_a_manifest_entry_outside_its_folder_is_refused_in_one_line(cli, tmp_path, entry):
    from abnirml.files.ownership import MANIFEST

    out = tmp_path / "out"
    assert _run(cli, out).code == 0
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["files"][entry] = "0" * 64
    (out / MANIFEST).write_text(json.dumps(manifest))
    line = cli(*RUN, "--out", out).error_line()          # at once, touching nothing
    assert f"the entry {entry!r} is not a relative path inside" in line


def test_a_leftover_retired_folder_with_an_absolute_entry_is_left_alone(cli, tmp_path):
    from abnirml.files.ownership import MANIFEST

    retired = tmp_path / ".abnirml-retired-out-999999999-0a1b2c3d"   # no such process
    retired.mkdir()
    (retired / MANIFEST).write_text(json.dumps({"format": "abnirml-manifest/1",
                                                "files": {"/etc/hostname": "0" * 64}}))
    out = tmp_path / "out"
    assert _run(cli, out).code == 0 and retired.is_dir()
    assert _run(cli, out).code == 0 and retired.is_dir()


def test_compare_never_overwrites_a_hand_edited_compare_md(cli, tmp_path):
    out = tmp_path / "a"
    assert _run(cli, out).code == 0
    folder = tmp_path / "cmp"
    compare = ("compare", out, out, "--a", "bm25", "--b", "bm25", "--out", folder)
    assert cli(*compare, may_change=[folder]).code == 0
    assert cli(*compare, may_change=[folder]).code == 0           # its own files: rewritten
    with (folder / "compare.md").open("a") as handle:             # starts as compare's does
        handle.write("\nThe difference on tmp:typos is what my paper is about.\n")
    line = cli(*compare).error_line()
    assert "compare.md was edited or not written by abnirml" in line
