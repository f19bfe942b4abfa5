"""The architecture page's two recipes — a ranker family and a probe family, one file each —
run through the command exactly as printed, with answers known from their definitions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from abnirml.cli import main
from abnirml.registry import scoped_registrations
from tests.helpers import one_error_line

PAGE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
SOURCE = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(autouse=True)
def _undo_registrations():
    with scoped_registrations():
        yield


def _recipe(name: str, folder: Path) -> str:
    """The code block after ``<!-- recipe: name -->``, written where a user would save it."""
    match = re.search(rf"<!-- recipe: {name} -->\n```python\n(.*?)```",
                      PAGE.read_text(encoding="utf-8"), re.S)
    assert match, f"no {name} recipe on {PAGE.name}"
    code = match.group(1)
    assert all(line.startswith("from abnirml.plugin import ")
               for line in code.splitlines() if line.startswith("from abnirml"))
    file_name = re.match(r"# (\S+\.py) ", code).group(1)
    path = folder / file_name
    path.write_text(code, encoding="utf-8")
    return str(path)


def _conformance(name: str, folder: Path, monkeypatch) -> None:
    """Run the page's conformance test of recipe ``name`` where its file was saved."""
    match = re.search(rf"<!-- conformance: {name} -->\n```python\n(.*?)```",
                      PAGE.read_text(encoding="utf-8"), re.S)
    assert match, f"no conformance test of {name} on {PAGE.name}"
    monkeypatch.chdir(folder)
    exec(compile(match.group(1), f"{PAGE.name}:{name}", "exec"), {})


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text("utf-8").splitlines()]


def test_the_ranker_family_recipe(tmp_path, capsys, monkeypatch):
    plugin = _recipe("ranker-family", tmp_path)
    assert main(["rankers", "--plugin", plugin]) == 0
    listing = capsys.readouterr().out
    assert "overlap" in listing and "weight" in listing and "case" in listing

    out = tmp_path / "out"
    assert main(["run", "--plugin", plugin, "--ranker", "overlap+weight=2", "--probe",
                 "tmp:shuffle-words", "--probe", "tmp:prepend-query", "--no-effectiveness",
                 "--quiet", "--out", str(out)]) == 0
    by_probe = {r["probe"]: r for r in _records(out) if r["subset"] == "all"}
    # a bag of words is blind to order, and prepending the query adds every query word
    shuffled, prepended = by_probe["tmp:shuffle-words"], by_probe["tmp:prepend-query"]
    assert shuffled["ranker"] == "overlap+weight=2"
    assert shuffled["score"] == 0.0 and shuffled["pos"] == shuffled["neg"] == 0
    assert prepended["neg"] == 0 and prepended["pos"] > 0

    for spec, message in (("overlap+weight=-1", "must be >= 0"),
                          ("overlap+wieght=2", "did you mean weight?"),
                          ("overlap+case=upper", "case")):
        assert message in one_error_line(capsys, "run", "--plugin", plugin, "--ranker", spec,
                                         "--probe", "tmp:shuffle-words", "--quiet",
                                         "--out", str(tmp_path / "bad"))
    assert not (tmp_path / "bad").exists()
    _conformance("ranker-family", tmp_path, monkeypatch)


def test_the_probe_family_recipe(tmp_path, capsys, monkeypatch):
    plugin = _recipe("probe-family", tmp_path)
    assert main(["probes", "--plugin", plugin]) == 0
    assert "echo:query-vs-noise" in capsys.readouterr().out

    out = tmp_path / "out"
    assert main(["run", "--plugin", plugin, "--probe", "echo", "--ranker", "bm25",
                 "--option", "echo.queries=3", "--no-effectiveness", "--quiet",
                 "--out", str(out)]) == 0
    (record,) = [r for r in _records(out) if r["subset"] == "all"]
    # BM25 scores the query itself above words it has never seen, on every sample
    assert record["n"] == 3 and record["score"] == 1.0
    assert "Echo probes" in (out / "report.md").read_text("utf-8")

    assert "did you mean" in one_error_line(capsys, "run", "--plugin", plugin, "--probe",
                                            "echo", "--ranker", "bm25", "--option",
                                            "echo.querys=3", "--quiet",
                                            "--out", str(tmp_path / "bad"))
    _conformance("probe-family", tmp_path, monkeypatch)


def _mypy(folder: Path, *files: str) -> subprocess.CompletedProcess[str]:
    """mypy as a plugin author runs it on their own files: their settings, not the
    package's (an empty config), abnirml seen as an installed typed package whose own
    modules are not the author's to fix (``--follow-imports=silent``), function bodies
    checked even where unannotated."""
    (folder / "mypy.ini").write_text("[mypy]\n", encoding="utf-8")
    env = {**os.environ, "MYPYPATH": str(SOURCE)}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--follow-imports=silent",
         "--check-untyped-defs", "--no-error-summary", "--cache-dir", str(folder / "cache"),
         *files], cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def test_both_recipes_type_check_as_a_plugin_author_sees_them(tmp_path):
    pytest.importorskip("mypy", reason="mypy is not installed (the dev extra has it)")
    ranker = Path(_recipe("ranker-family", tmp_path)).name
    probe = Path(_recipe("probe-family", tmp_path)).name
    # a checker that caught nothing would pass anything: a factory returning no ranker is
    # refused by RankerFamily's declared factory type
    code = (tmp_path / ranker).read_text(encoding="utf-8")
    assert "return Overlap(spec.canonical, params)" in code
    (tmp_path / "wrong.py").write_text(
        code.replace("return Overlap(spec.canonical, params)", "return 3")
            .replace("-> Overlap:", "-> int:"), encoding="utf-8")
    checked = _mypy(tmp_path, ranker, probe, "wrong.py")
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert len(errors) == 1 and errors[0].startswith("wrong.py:"), checked.stdout
    assert 'Argument "factory" to "RankerFamily"' in errors[0]
