"""The architecture page is the map of the house: every module and every folder of the
package is named on it, so a new room cannot appear without a line saying what it holds."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "abnirml"


def _page_words() -> set[str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def test_every_module_and_folder_is_named_on_the_architecture_page():
    words = _page_words()
    unnamed = sorted(
        path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*")
        if "__pycache__" not in path.parts
        and ((path.suffix == ".py" and path.stem != "__init__" and path.stem not in words)
             or (path.is_dir() and (path / "__init__.py").exists() and path.name not in words)))
    assert unnamed == []


def test_the_evaluation_and_ranker_rooms_say_what_they_hold():
    rooms = {"evaluation": {"stats", "execution", "analyses"},
             "rankers": {"families", "support"}}
    for top, expected in rooms.items():
        folders = {p.name for p in (PACKAGE / top).iterdir()
                   if p.is_dir() and (p / "__init__.py").exists()}
        assert expected <= folders
        loose = {p.stem for p in (PACKAGE / top).glob("*.py")} - {"__init__"}
        # evaluation keeps no module outside its rooms; rankers keeps only its contracts
        assert loose == (set() if top == "evaluation" else
                         {"base", "pairwise", "listwise", "family", "built_in", "registry",
                          "availability", "identity"})


def test_output_file_names_are_written_once():
    """The names of a run's files live in files/run_names.py; a literal elsewhere would let
    a reader and a writer disagree about a name."""
    names = ('"results.jsonl"', '"examples.jsonl"', '"run.json"', '"calibration.json"',
             '"report.md"', '"report.html"', '"scores.npz"')
    found = [f"{path.relative_to(PACKAGE).as_posix()}:{number}"
             for path in PACKAGE.rglob("*.py") if path.name != "run_names.py"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if any(name in line for name in names) and not line.lstrip().startswith("#")]
    assert found == []
