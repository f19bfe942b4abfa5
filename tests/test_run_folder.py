"""The output folder is replaced as a whole: no stale files of an earlier run, no mix after
a failure while writing, and never a folder holding someone else's files."""

from __future__ import annotations

import pytest

from abnirml.errors import ConfigError
from abnirml.pipeline import RunConfig, run


def _run(out, probes, rankers=("bm25",)):
    return run(RunConfig(collection="demo", rankers=list(rankers), probes=list(probes),
                         out=str(out), cache=None, progress=False))


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_rerun_into_the_same_folder_leaves_no_file_of_the_earlier_run(tmp_path):
    out = tmp_path / "out"
    _run(out, ["axiom:tfc1", "mmp:tf:length"], rankers=["bm25", "ql"])
    first = _files(out)
    assert "tables/axiom-counts.csv" in first and "reranked/ql.run" in first
    (out / "rank_origin.csv").write_text("left by abnirml rank-origin\n")

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
    with pytest.raises(ConfigError, match=r"holds 'chapter1.tex', which no abnirml run wrote"):
        _run(out, ["mmp:tf:length"])
    assert _files(out) == ["chapter1.tex"]
