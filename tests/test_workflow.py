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


class _WordCount:
    """A hand-made Ranker object (the contract: name, fingerprint, score)."""

    name = "words"
    fingerprint = "test-word-count-v1"

    def score(self, pairs):
        import numpy as np

        return np.array([float(len(d.split())) for _, d in pairs])


def test_run_accepts_ranker_objects_and_pyterrier_transformers(tmp_path):
    import numpy as np

    import abnirml

    pt = pytest.importorskip("pyterrier")
    same_as_words = pt.apply.doc_score(lambda row: float(len(row["text"].split())))
    config = abnirml.RunConfig(rankers=["bm25", _WordCount(), same_as_words],
                               probes=["mmp:tf:length", "mmp:relevance:length"], cache=None,
                               out=str(tmp_path / "out"), progress=False, effectiveness=False)
    output = abnirml.run(config)
    frame = output.to_frame()
    assert list(frame.columns[:10]) == ["probe", "family", "ranker", "subset", "score",
                                        "ci_low", "ci_high", "p_value", "p_adjusted",
                                        "significant"]
    assert set(frame["ranker"]) == {"bm25", "words", "pyterrier"}
    assert len(frame) == len(output.result.records)
    assert frame["significant"].dtype == bool and frame["score"].dtype == np.float64
    # The wrapped transformer and the Ranker object compute the same function, so every
    # number but the ranker's name agrees; BM25 behaves differently.
    numbers = ["score", "n", "pos", "neg", "neutral", "delta"]
    words = frame[frame.ranker == "words"].reset_index(drop=True)
    wrapped = frame[frame.ranker == "pyterrier"].reset_index(drop=True)
    bm25 = frame[frame.ranker == "bm25"].reset_index(drop=True)
    assert words[numbers].equals(wrapped[numbers])
    assert not words[numbers].equals(bm25[numbers])
    # The folder reads back to the same frame; load_scores takes str paths and folders.
    loaded = abnirml.load_results(str(tmp_path / "out"))
    assert loaded[["probe", "ranker", "subset", "n"]].equals(
        frame[["probe", "ranker", "subset", "n"]])
    np.testing.assert_allclose(loaded["score"], frame["score"])
    assert abnirml.load_scores(str(tmp_path / "out" / "scores.npz")).ranker_names == [
        "bm25", "words", "pyterrier"]
    samples = abnirml.load_samples(str(tmp_path / "out"))
    mine = samples[(samples.probe == "mmp:tf:length") & (samples.ranker == "words")]
    n_all = int(words[(words.probe == "mmp:tf:length") & (words.subset == "all")].n.iloc[0])
    assert len(mine) == n_all
    np.testing.assert_allclose(mine["diff"], mine["score1"] - mine["score2"])
    assert (mine["score1"] == mine["score1"].round()).all()     # word counts


def test_run_rejects_something_that_is_not_a_ranker():
    import abnirml
    from abnirml.errors import ConfigError

    with pytest.raises(ConfigError, match="expected a spec string, a Ranker"):
        abnirml.run(abnirml.RunConfig(rankers=[42], probes=["mmp:tf:length"], cache=None,
                                      progress=False))
