"""Notebook use: quiet imports, progress bars easy to turn off, and the Python guide's
notebook example runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from abnirml.pipeline import RunConfig, SessionSettings, run
from abnirml.progress import ENV, progress_enabled

ROOT = Path(__file__).resolve().parents[2]
PYTHON_GUIDE = ROOT / "docs" / "guide" / "python.md"
GUIDE_DL19 = "../shared/data/trec-dl-2019"


def test_importing_abnirml_prints_nothing_and_loads_nothing_heavy():
    code = ("import sys, abnirml\n"
            "heavy = [m for m in ('numpy', 'pandas', 'torch', 'transformers', 'tqdm') "
            "if m in sys.modules]\n"
            "assert not heavy, heavy\n"
            "abnirml.RunConfig, abnirml.run, abnirml.load_results\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""


@pytest.mark.parametrize(("requested", "env", "expected"), [
    (None, None, True), (None, "0", False), (None, "off", False), (None, "1", True),
    (True, "0", True), (False, None, False),
])
def test_progress_rule(monkeypatch, requested, env, expected):
    if env is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, env)
    assert progress_enabled(requested) is expected


def _stderr_of_run(capsys, config, **kwargs) -> str:
    capsys.readouterr()
    run(config, **kwargs)
    return capsys.readouterr().err


def _config():
    return RunConfig(rankers=["bm25"], probes=["mmp:tf:length"], effectiveness=False,
                     session=SessionSettings(cache=None))


def test_progress_bars_follow_the_environment_and_the_argument(monkeypatch, capsys):
    monkeypatch.delenv(ENV, raising=False)
    assert "scoring bm25" in _stderr_of_run(capsys, _config())
    monkeypatch.setenv(ENV, "0")
    assert "scoring bm25" not in _stderr_of_run(capsys, _config())
    assert "scoring bm25" in _stderr_of_run(capsys, _config(), progress=True)
    monkeypatch.delenv(ENV)
    assert "scoring bm25" not in _stderr_of_run(capsys, _config(), progress=False)
    config = _config()
    config.session = SessionSettings(cache=None, progress=False)
    assert "scoring bm25" not in _stderr_of_run(capsys, config)


def test_a_field_of_a_nested_record_set_on_the_run_config_is_refused():
    """RunConfig has slots: ``config.progress = False`` (a session setting) must fail, not
    add an attribute nothing reads."""
    config = _config()
    with pytest.raises(AttributeError):
        config.progress = False


def guide_notebook_example() -> str:
    """The first python block of the Python guide's 'From a notebook' section."""
    text = PYTHON_GUIDE.read_text(encoding="utf-8")
    section = text.split("\n## From a notebook\n", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the Python guide's notebook section has no python example"
    return match.group(1)


@pytest.fixture(params=["demo", "dl19"])
def example_collection(request) -> str:
    if request.param == "demo":
        return "demo"
    return str(request.getfixturevalue("dl19"))          # skips without ../shared


def test_the_guides_notebook_example_runs(example_collection, tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    code = guide_notebook_example()
    assert GUIDE_DL19 in code
    namespace: dict = {}
    exec(compile(code.replace(GUIDE_DL19, example_collection), str(PYTHON_GUIDE), "exec"),
         namespace)
    import matplotlib.pyplot as plt

    frame, one = namespace["frame"], namespace["one"]
    assert set(frame.ranker) == {"bm25", "ql"}
    assert len(one) == 2 and one.score.notna().all()
    assert ((one.ci_low <= one.score) & (one.score <= one.ci_high)).all()
    lines = plt.gca().lines
    assert any(list(line.get_xdata()) == list(one.ranker) for line in lines)
    assert (tmp_path / "out" / "dl19" / "results.jsonl").is_file()
    plt.close("all")
