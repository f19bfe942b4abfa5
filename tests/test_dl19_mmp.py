"""Known answers on TREC DL 2019 (needs ../shared/data; skipped otherwise)."""

import pytest

from abnirml.pipeline import RunConfig, run


@pytest.fixture(scope="module")
def dl19_mmp(dl19, tmp_path_factory):
    out = tmp_path_factory.mktemp("dl19-mmp")
    return run(RunConfig(collection=str(dl19), rankers=["bm25", "ql"], probes=["mmp:*"],
                         out=str(out), cache=None, progress=False))


def test_all_eighteen_rows_for_both_rankers(dl19_mmp):
    records = dl19_mmp.result.records
    assert len(records) == 36
    assert len({r["probe"] for r in records}) == 18
    assert all(r["n"] > 0 for r in records)
    # judged passages without text are skipped and counted, not dropped silently
    assert dl19_mmp.run_info["skipped"]["judged_without_text"] == 9260 - 4337


def test_bm25_prefers_higher_tf_at_equal_length(dl19_mmp):
    record = next(r for r in dl19_mmp.result.records
                  if r["probe"] == "mmp:tf:length" and r["ranker"] == "bm25")
    assert record["score"] >= 0.95
    assert record["significant"]


def test_lexical_rankers_prefer_higher_tf_under_every_control(dl19_mmp):
    for record in dl19_mmp.result.records:
        if record["probe"].startswith("mmp:tf:"):
            assert record["score"] > 0.5, record
            assert record["neg"] < record["pos"], record


def test_calibrated_on_the_bm25_run(dl19_mmp):
    for info in dl19_mmp.run_info["rankers"]:
        assert info["delta_source"] == "calibrated"
        assert info["calibration_queries"] == 43
        assert info["delta"] > 0
    assert dl19_mmp.run_info["candidates"].startswith("run bm25")
