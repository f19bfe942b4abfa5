"""The architecture page's two recipes — a ranker family and a probe family, one file each —
run through the command exactly as printed, with answers known from their definitions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from abnirml.cli import main
from abnirml.registry import scoped_registrations
from tests.helpers import one_error_line

PAGE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


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


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text("utf-8").splitlines()]


def test_the_ranker_family_recipe(tmp_path, capsys):
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


def test_the_probe_family_recipe(tmp_path, capsys):
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
