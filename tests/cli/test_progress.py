"""The progress line while samples are built (before any scoring)."""

from __future__ import annotations

from abnirml.evaluation.execution.experiment import build_tables
from abnirml.samples import Sample


class _Probe:
    family, symmetric = "echo", False

    def __init__(self, name: str):
        self.name = name

    def samples(self, context):
        yield Sample("q", "d1", "d2", {"qid": "1"})


def test_sample_building_shows_a_progress_line_naming_the_probe(capsys):
    tables = build_tables([_Probe("echo:one"), _Probe("echo:two")], context=None, progress=True)
    assert sorted(tables) == ["echo:one", "echo:two"] and len(tables["echo:two"]) == 1
    err = capsys.readouterr().err
    assert "building samples" in err and "echo:two" in err and "0/2" in err


def test_no_progress_line_when_progress_is_off(capsys):
    tables = build_tables([_Probe("echo:one")], context=None, progress=False)
    assert len(tables["echo:one"]) == 1
    assert capsys.readouterr().err == ""


def test_progress_left_open_follows_the_environment(capsys, monkeypatch):
    monkeypatch.setenv("ABNIRML_PROGRESS", "0")
    build_tables([_Probe("echo:one")], context=None)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("ABNIRML_PROGRESS", "1")
    build_tables([_Probe("echo:one")], context=None)
    assert "building samples" in capsys.readouterr().err
