"""Statistics end to end: intervals and effect sizes in results, run.json, report, compare."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from abnirml.cli import main
from abnirml.pipeline import RunConfig, SessionSettings, run


@pytest.fixture(scope="module")
def stats_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("stats") / "run"
    run(RunConfig(collection="demo", rankers=["bm25", "ql"], probes=["mmp:*"], out=str(out),
                  effectiveness=False, session=SessionSettings(cache=None, progress=False)))
    return out


def _records(directory):
    with (directory / "results.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_records_carry_intervals_effect_sizes_and_adjusted_p(stats_run):
    records = _records(stats_run)
    assert records
    for r in records:
        for name in ("ci_low", "ci_high", "mean_diff_ci_low", "mean_diff_ci_high",
                     "effect_size"):
            assert name in r
        if r["n"] >= 2:
            assert r["ci_low"] <= r["ci_high"]
            assert r["mean_diff_ci_low"] <= r["mean_diff_ci_high"]
            # Bonferroni: adjusted p is m · p capped at 1
            assert r["p_adjusted"] == pytest.approx(min(1.0, r["p_value"] * r["tests_in_table"]),
                                                    rel=1e-9)
    covered = [r["ci_low"] <= r["score"] <= r["ci_high"] for r in records if r["n"] >= 5]
    assert all(covered)


def test_run_json_states_statistics_and_calibration_depth(stats_run):
    info = json.loads((stats_run / "run.json").read_text(encoding="utf-8"))
    # 18 mmp probes × 2 rankers = 36 tests: 2 · 36 · 10 / 0.01 resamples of queries
    assert info["statistics"] == {"test": "clustered", "correction": "bonferroni",
                                  "permutations": 10000, "bootstrap": 1000, "ci": 0.95,
                                  "seed": 0, "test_rounds": {"mmp": 72000}}
    assert info["delta_calibration"]["candidate_depth"] == 100
    assert "top-1000" in info["delta_calibration"]["note"]


def test_report_rebuilt_from_files_gives_the_same_intervals(stats_run):
    from abnirml.evaluation.execution.score_file import load_scores

    store = load_scores(stats_run / "scores.npz")
    assert store.records() == _records(stats_run)


def test_per_query_table_adds_up_to_each_score(stats_run):
    with (stats_run / "tables" / "per-query.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    records = {(r["probe"], r["ranker"]): r for r in _records(stats_run) if r["subset"] == "all"}
    totals: dict[tuple[str, str], float] = {}
    counts: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row["probe"], row["ranker"])
        totals[key] = totals.get(key, 0.0) + float(row["contribution"])
        counts[key] = counts.get(key, 0) + int(row["n"])
    assert set(totals) == {k for k, r in records.items() if r["n"]}
    for key, total in totals.items():
        assert total == pytest.approx(records[key]["score"], abs=1e-4)
        assert counts[key] == records[key]["n"]


def test_report_shows_intervals_table_error_bars_and_caption(stats_run):
    markdown = (stats_run / "report.md").read_text(encoding="utf-8")
    assert "## Intervals and effect sizes" in markdown
    assert ("Score brackets: the test's own query-clustered percentile bootstrap interval, "
            "drawn from the same resampled queries, each end a quantile at the level the "
            "correction tests the row at: coverage 1 − α/m for a table of m tests (1 − 2α/m "
            "for symmetric probes, tested one-sided, each end a one-sided bound at that "
            "level); a score is significant exactly when its bracket excludes 0.") in markdown
    assert "With k queries no p is below 2/2ᵏ" in markdown
    assert "Queries: the distinct queries of the row's samples" in markdown
    assert "Mean-difference brackets: 95 % (1,000 resamples of queries)" in markdown
    # the test, its sidedness (and the symmetric probes' one-sided test), the family the
    # correction covers and α, in words
    assert ("(two-sided query-clustered bootstrap test of the score (symmetric probes: "
            "one-sided, score > 0), Bonferroni correction over every test of one table "
            "(probe × ranker × subset with ≥ 2 samples), α = 0.01)") in markdown
    with (stats_run / "tables" / "intervals.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    # largest |d_z| first, but rows from fewer than 10 samples after all others
    small = [int(r["Samples"]) < 10 for r in rows]
    assert any(small) and small == sorted(small)
    for part in (False, True):
        sizes = [abs(float(r["Effect size d_z"])) for r, s in zip(rows, small, strict=True)
                 if s is part and r["Effect size d_z"] != "–"]
        assert sizes == sorted(sizes, reverse=True)
    assert {r["Family"] for r in rows} == {"mmp"}
    html = (stats_run / "report.html").read_text(encoding="utf-8")
    assert 'alt="Intervals: mmp"' in html


def test_other_test_and_correction_are_recorded_and_change_only_p(tmp_path):
    out = tmp_path / "wilcoxon"
    assert main(["run", "--collection", "demo", "--ranker", "bm25", "--probe", "mmp:tf:*",
                 "--out", str(out), "--no-cache", "--quiet", "--no-effectiveness",
                 "--test", "wilcoxon", "--correction", "holm", "--bootstrap", "200",
                 "--ci", "0.9"]) == 0
    info = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert info["statistics"]["test"] == "wilcoxon" and info["statistics"]["ci"] == 0.9
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "two-sided Wilcoxon signed-rank test (symmetric probes: one-sided" in markdown
    assert "Holm correction over every test of one table" in markdown
    assert "90 % query-clustered percentile bootstrap interval (200 resamples" in markdown
    from scipy.stats import wilcoxon

    from abnirml.evaluation.execution.score_file import load_scores

    store = load_scores(out / "scores.npz")
    for r in _records(out):
        if r["subset"] != "all" or r["n"] < 2:
            continue
        ps = store.scores[(r["probe"], r["ranker"])]
        diff = ps.score1 - ps.score2
        expected = 1.0 if not np.any(diff != 0) else wilcoxon(diff).pvalue
        assert r["p_value"] == pytest.approx(expected, rel=1e-9)


def test_bad_statistics_options_are_one_line_errors(tmp_path, capsys):
    assert main(["run", "--collection", "demo", "--ranker", "bm25", "--probe", "mmp:tf:*",
                 "--out", str(tmp_path / "x"), "--no-cache", "--quiet", "--ci", "1.5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("abnirml: error: --ci must be a coverage in (0, 1)")
    assert err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_compare_uses_the_chosen_test_and_gives_an_interval(stats_run, capsys):
    from abnirml.evaluation.analyses.compare import compare
    from abnirml.evaluation.execution.score_file import load_scores
    from abnirml.evaluation.stats.significance import StatsConfig

    store = load_scores(stats_run / "scores.npz")
    rows = compare(store, "ql", store, "bm25",
                   stats=StatsConfig(test="permutation", correction="holm", permutations=2000))
    for c in rows:
        if c.n >= 5:
            assert c.diff_ci_low <= c.score_b - c.score_a <= c.diff_ci_high
    assert rows and all(c.p_value is None or 0 < c.p_value <= 1 for c in rows)
    assert main(["compare", str(stats_run), "--test", "bootstrap", "--correction", "bh"]) == 0
    printed = capsys.readouterr().out
    assert "query-clustered bootstrap test, Benjamini–Hochberg correction" in printed
    assert "| bm25 | ql | ql − bm25 interval |" in printed
