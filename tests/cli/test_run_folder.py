"""The output folder is replaced as a whole: no stale files of an earlier run, no mix after
a failure while writing, and never a folder holding someone else's files."""

from __future__ import annotations

import pytest

from abnirml.errors import ConfigError
from abnirml.pipeline import RunConfig, SessionSettings, run


def _run(out, probes, rankers=("bm25",)):
    return run(RunConfig(collection="demo", rankers=list(rankers), probes=list(probes),
                         out=str(out), session=SessionSettings(cache=None, progress=False)))


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_rerun_into_the_same_folder_leaves_no_file_of_the_earlier_run(tmp_path):
    out = tmp_path / "out"
    _run(out, ["axiom:rennings-tfc1", "mmp:tf:length"], rankers=["bm25", "ql"])
    first = _files(out)
    assert "tables/axiom-counts.csv" in first and "reranked/ql.run" in first
    (out / "rank_origin.csv").write_text("left by abnirml rank-origin\n")
    from abnirml.files.ownership import record_written

    record_written(out, [out / "rank_origin.csv"])      # what rank-origin does after writing

    with pytest.warns(UserWarning, match="drops the results of ql and axiom:rennings-tfc1"):
        _run(out, ["mmp:tf:length"])
    second = _files(out)
    assert not [f for f in second if "axiom" in f or f.startswith("reranked/ql")]
    assert "rank_origin.csv" not in second
    assert second == _files(_fresh(tmp_path, ["mmp:tf:length"]))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".abnirml")] == []


def _fresh(tmp_path, probes):
    out = tmp_path / "fresh"
    _run(out, probes)
    return out


def test_a_failure_while_writing_keeps_the_earlier_run_whole(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _run(out, ["mmp:tf:length"])
    before = {f: (out / f).read_bytes() for f in _files(out)}

    import abnirml.run_folder as run_folder

    def killed(*_args, **_kwargs):
        raise KeyboardInterrupt   # as if the process were stopped half-way through writing

    monkeypatch.setattr(run_folder, "_write_reranked", killed)
    with pytest.raises(KeyboardInterrupt):
        _run(out, ["tmp:reverse-words"])
    assert {f: (out / f).read_bytes() for f in _files(out)} == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]          # no staging left behind


def test_a_folder_with_foreign_files_is_refused_and_untouched(tmp_path):
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "chapter1.tex").write_text("mine")
    with pytest.raises(ConfigError,
                       match=r"holds 'chapter1.tex' \(this folder has no abnirml manifest\)"):
        _run(out, ["mmp:tf:length"])
    assert _files(out) == ["chapter1.tex"]


def test_report_modules_only_render_and_run_folder_writes_what_they_render(tmp_path):
    """report/ names and writes no file of the output folder; RunFolder writes exactly
    what render_reports returns, so a rebuild from the folder gives the same bytes."""
    from abnirml.report.analyses import render_reports
    from abnirml.run_folder import RunFolder

    out = tmp_path / "out"
    _run(out, ["mmp:tf:length", "tmp:reverse-words"], rankers=["bm25", "ql"])
    before = {f: (out / f).read_bytes() for f in _files(out)}
    rendered = render_reports(out)
    assert {f: (out / f).read_bytes() for f in _files(out)} == before     # wrote nothing
    report_files = {f for f in before if f.startswith("tables/")
                    or f in ("report.md", "report.html")}
    assert set(rendered) == report_files
    assert {"tables/delta-sweep.csv", "tables/per-query.csv"} <= report_files
    assert all(rendered[f].encode("utf-8") == before[f] for f in report_files)
    assert before["tables/delta-sweep.csv"].startswith(
        b"probe,family,ranker,subset,percentile,delta,score,n\n")
    assert before["tables/per-query.csv"].startswith(
        b"probe,ranker,query,n,score,mean_diff,contribution\r\n")
    for f in report_files:
        (out / f).unlink()
    RunFolder(out).write_reports()
    assert {f: (out / f).read_bytes() for f in _files(out)} == before


_WRITES = {"write_text", "write_bytes", "mkdir", "unlink", "rmdir", "touch", "rename",
           "makedirs", "rmtree", "savefig"}


def test_no_report_module_writes_files():
    """A static check: the renderers call no file-writing function (the figure cache in
    plots.py, which lives beside the score cache and never in the output folder, aside)."""
    import ast
    from pathlib import Path

    import abnirml.report

    found = []
    for path in sorted(Path(abnirml.report.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            mode = next((a.value for a in node.args[1:2] if isinstance(a, ast.Constant)), "")
            if name in _WRITES or (name == "open" and any(c in str(mode) for c in "wax")):
                found.append(f"{path.name}:{node.lineno} {name}")
    allowed = {"plots.py"}            # cached_png: the figure cache, and savefig to bytes
    assert [f for f in found if f.split(":")[0] not in allowed] == []


def test_a_run_of_other_rankers_or_probes_says_what_it_replaces(tmp_path, capsys):
    """Nothing is lost silently: one line names what the new run drops; --keep stops
    before any work and leaves the earlier run as it was."""
    from abnirml.cli import main
    from tests.helpers import one_error_line

    out = tmp_path / "out"
    base = ["run", "--out", str(out), "--quiet", "--no-cache", "--no-effectiveness"]
    assert main([*base, "--ranker", "bm25", "--ranker", "ql", "--probe", "mmp:tf:length"]) == 0
    capsys.readouterr()
    assert main([*base, "--ranker", "bm25", "--probe", "mmp:tf:length"]) == 0  # same probe
    warned = [line for line in capsys.readouterr().err.splitlines() if "holds a run" in line]
    assert warned == [f"abnirml: warning: {out} holds a run of bm25, ql over mmp:tf:length; "
                      "this run (bm25 over mmp:tf:length) replaces it and drops the results "
                      "of ql; --keep stops instead, or give --out a new folder"]
    assert main([*base, "--ranker", "bm25", "--probe", "mmp:tf:length"]) == 0   # a rerun
    assert "holds a run" not in capsys.readouterr().err
    before = _files(out), (out / "results.jsonl").read_bytes()
    line = one_error_line(capsys, *base, "--keep", "--ranker", "ql", "--probe", "mmp:tf:length",
                          "--probe", "tmp:shuffle-words")
    assert line.endswith("would replace it and drops the results of bm25; --keep keeps it: "
                         "give --out a new folder")
    assert (_files(out), (out / "results.jsonl").read_bytes()) == before
