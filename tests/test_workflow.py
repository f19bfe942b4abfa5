"""Issue #18: a researcher's workflow — wrong results fixed, notebook API, CLI papercuts,
tidy tables. The PyTerrier fingerprint tests live with the adapters in
``test_rankers_adapters.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from abnirml.cli import main

from .helpers import write_collection_dir
from .test_adversarial import one_error_line


def _run(out: Path, *extra: str, probe: str = "mmp:tf:length") -> Path:
    assert main(["run", "--probe", probe, "--ranker", "bm25", "--out", str(out), "--quiet",
                 "--no-effectiveness", *extra]) == 0
    return out


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("demo") / "out")


def test_compare_of_runs_on_different_collections_is_an_error(demo_run, tmp_path, capsys):
    tiny = write_collection_dir(
        tmp_path / "coll",
        {"q1": "apple pie", "q2": "river bank"},
        {"d1": "apple pie with apples", "d2": "a pie", "d3": "the river bank is muddy",
         "d4": "bank loans"},
        {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 3, "d4": 0}})
    other = _run(tmp_path / "other", "--collection", str(tiny))
    capsys.readouterr()
    line = one_error_line(capsys, "compare", str(demo_run), str(other))
    assert "different collections" in line


def test_compare_with_nothing_in_common_is_an_error(demo_run, tmp_path, capsys):
    other = _run(tmp_path / "other", probe="mmp:sumtf:length")
    capsys.readouterr()
    line = one_error_line(capsys, "compare", str(demo_run), str(other))
    assert "nothing to compare" in line and "only in A" in line
    # The same folders compared with themselves still work.
    assert main(["compare", str(demo_run), str(demo_run), "--a", "bm25", "--b", "bm25"]) == 0


def test_expect_without_transfer_data_raises_with_the_reason():
    from abnirml.errors import ConfigError
    from abnirml.expect import expect

    with pytest.raises(ConfigError, match=r"dtp:paraphrase-mrpc has no samples on demo: "
                                          r"no transfer data given"):
        expect("bm25", "dtp:paraphrase-mrpc")
    found = expect("bm25", "dtp:paraphrase-mrpc", options={"dtp.data": "demo"})
    assert found.n > 0 and -1.0 <= found.score <= 1.0
