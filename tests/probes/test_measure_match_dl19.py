"""Known answers on TREC DL 2019 (needs ../shared/data; skipped otherwise)."""

import pytest

from abnirml.pipeline import RunConfig, SessionSettings, run


@pytest.fixture(scope="module")
def dl19_mmp(dl19, tmp_path_factory):
    out = tmp_path_factory.mktemp("dl19-mmp")
    return run(RunConfig(collection=str(dl19), rankers=["bm25", "ql"], probes=["mmp:*"],
                         out=str(out), session=SessionSettings(cache=None, progress=False)))


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


def test_report_states_dl19_caveats_on_both_pages(dl19_mmp):
    """The caveats a DL19 reader needs, with the run's own numbers, in report.md and the
    page alike (README: 4,923 of 9,260 judged passages lack text; BM25 re-ranking the run's
    top 100 reaches nDCG@10 0.442 against 0.506 for the run's own order)."""
    import html as html_module
    import re

    md = (dl19_mmp.out / "report.md").read_text("utf-8")
    page = html_module.unescape(re.sub(r"<[^>]+>", "", (dl19_mmp.out / "report.html")
                                       .read_text("utf-8")))
    for text in ("Judged documents without text: 4,923 of 9,260 judgments",
                 "gives nDCG@10 0.442 (bm25)", "against 0.506 for the candidate run's own order"):
        assert text in md and text in page, text


def test_length_and_sumtf_under_overlap_control_are_the_same_pairs(dl19_mmp):
    """At equal overlap (> 0) the longer passage is the one with more query-term matches, so
    ABNIRML's Table 1 has identical Length | Overlap and Sum-TF | Overlap rows. That holds
    only when passages without a query term stay out of overlap pairs (before the fix,
    BM25's Length | Overlap had 2,944 pairs against 1,138)."""
    by = {(r["probe"], r["ranker"]): r for r in dl19_mmp.result.records if r["subset"] == "all"}
    for ranker in ("bm25", "ql"):
        length, sumtf = by[("mmp:length:overlap", ranker)], by[("mmp:sumtf:overlap", ranker)]
        assert length["n"] == sumtf["n"] == 1138
        assert (length["pos"], length["neg"]) == (sumtf["pos"], sumtf["neg"])
