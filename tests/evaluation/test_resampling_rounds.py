"""The resampling tests get enough rounds to reject after the table's correction, and a
count the user names that cannot reject is warned about; huge counts stay in bounded memory
or are refused."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.evaluation.execution.experiment import ProbeOutline, ProbeScores, build_records
from abnirml.evaluation.stats.calibration import fixed
from abnirml.evaluation.stats.significance import StatsConfig, bootstrap_p, check_config
from abnirml.evaluation.stats.stat_tests import rounds_needed
from abnirml.probes.base import DEFAULT_GRADE_BANDS

QUERIES = 54
PROBES = 12          # × 3 subsets (all, non-relevant, relevant) = 36 tests in one table


def _table(stats: StatsConfig):
    """12 MMP probes over 54 queries (two samples each, one non-relevant, one relevant);
    the first probe moves every sample by +1 (score +1.00), the others by noise."""
    rng = np.random.default_rng(3)
    cluster = np.repeat(np.arange(QUERIES), 2)
    grade = np.tile([0.0, 2.0], QUERIES)
    outlines, scores = [], {}
    for i in range(PROBES):
        name = f"mmp:p{i}"
        outlines.append(ProbeOutline(name, "mmp", False))
        diff = np.ones(2 * QUERIES) if i == 0 else rng.normal(0, 1, 2 * QUERIES)
        scores[(name, "r")] = ProbeScores(diff, np.zeros_like(diff), grade, cluster)
    return build_records(outlines, ["r"], scores, {"r": fixed(0.0)}, DEFAULT_GRADE_BANDS,
                         0.01, stats=stats)


@pytest.mark.parametrize(("test", "rounds"), [("clustered", 72_000), ("bootstrap", 72_000),
                                              ("permutation", 36_000)])
def test_a_full_effect_over_54_queries_is_significant_at_the_defaults(test, rounds):
    records = _table(StatsConfig(test=test))
    assert {r["tests_in_table"] for r in records} == {36}
    assert {r["test_rounds"] for r in records} == {rounds}
    for record in records:
        if record["probe"] == "mmp:p0":
            assert record["score"] == 1.0 and record["significant"], record
            assert record["p_adjusted"] <= 0.01 / 10 + 1e-12   # the floor, with margin


def test_rounds_follow_the_family_size_alpha_and_correction():
    # smallest bootstrap p 2/(R+1), ×36 tests, must be ≤ α/10 = 0.001
    assert rounds_needed("bootstrap", 36, 0.01, "bonferroni") == 72_000
    assert rounds_needed("permutation", 36, 0.01, "holm") == 36_000
    assert rounds_needed("permutation", 36, 0.05, "none") == 1_000
    # the configured count is kept when it is already enough
    records = _table(StatsConfig(test="permutation", permutations=50_000))
    assert {r["test_rounds"] for r in records} == {50_000}


def test_a_named_count_that_cannot_reject_is_used_and_warned_about():
    with pytest.warns(UserWarning, match=r"--bootstrap 1,000 cannot reject any test of mmp "
                                         r".* use at least 72,000"):
        records = _table(StatsConfig(test="bootstrap", resamples=1000, rounds_given=True))
    assert {r["test_rounds"] for r in records} == {1000}
    assert not any(r["significant"] for r in records)      # 2/1001 × 36 > 0.01


def test_t_test_records_carry_no_rounds():
    assert all("test_rounds" not in r for r in _table(StatsConfig(test="ttest")))


def test_huge_counts_are_refused_in_one_line_and_blocks_bound_memory(monkeypatch):
    with pytest.raises(ConfigError, match=r"--bootstrap 100,000,000 is above the 2,000,000"):
        check_config(StatsConfig(test="bootstrap", resamples=100_000_000))
    with pytest.raises(ConfigError, match=r"--permutations 100,000,000 is above"):
        check_config(StatsConfig(test="permutation", permutations=100_000_000))
    # blocks give the very same p as one draw, and never a matrix above the block size
    import abnirml.evaluation.stats.bootstrap as bootstrap

    values = np.random.default_rng(1).normal(0.1, 1, 400)
    cluster = np.arange(400) // 4
    whole = bootstrap_p(values, cluster, 5000, np.random.default_rng(7))
    shapes = []
    real = bootstrap.resample_weights

    def spy(k, resamples, rng, *dtype):
        shapes.append(resamples * k)
        return real(k, resamples, rng, *dtype)

    monkeypatch.setattr(bootstrap, "CHUNK_ELEMENTS", 100 * 1000)
    monkeypatch.setattr(bootstrap, "resample_weights", spy)
    assert bootstrap_p(values, cluster, 5000, np.random.default_rng(7)) == whole
    assert len(shapes) == 5 and max(shapes) <= 100 * 1000


def test_chunked_intervals_equal_one_draw(monkeypatch):
    import abnirml.evaluation.stats.bootstrap as bootstrap

    values = np.random.default_rng(2).normal(0, 1, 300)
    cluster = np.arange(300) // 3
    whole = bootstrap.clustered_ci(values, cluster, 2000, 0.95, 0, ("k",))
    monkeypatch.setattr(bootstrap, "CHUNK_ELEMENTS", 30_000)
    parts = bootstrap.clustered_ci(values, cluster, 2000, 0.95, 0, ("k",))
    assert np.array_equal(whole[0], parts[0]) and np.array_equal(whole[1], parts[1])


def test_compare_gives_its_resampling_test_the_rounds_its_correction_needs(tmp_path):
    """`compare` of bm25 with ql on the demo's MMP probes: a named 1,000 bootstrap
    resamples cannot reject after Bonferroni over the compared probes (warned); at the
    defaults the comparison finds the probes where the two models differ everywhere."""
    import warnings

    from abnirml.evaluation.analyses.compare import compare
    from abnirml.evaluation.execution.score_file import load_scores
    from abnirml.pipeline import RunConfig, SessionSettings, run

    out = tmp_path / "run"
    run(RunConfig(collection="demo", rankers=["bm25", "ql"], probes=["mmp"], out=str(out),
                  effectiveness=False, session=SessionSettings(cache=None, progress=False)))
    store = load_scores(out / "scores.npz")
    named = StatsConfig(test="bootstrap", resamples=1000, rounds_given=True)
    with pytest.warns(UserWarning, match=r"--bootstrap 1,000 cannot reject any test of the "
                                         r"comparison"):
        rows = compare(store, "bm25", store, "ql", stats=named)
    assert not any(r.significant for r in rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = compare(store, "bm25", store, "ql", stats=StatsConfig(test="bootstrap"))
    floor = 2 / (rounds_needed("bootstrap", len(rows), 0.01, "bonferroni") + 1)
    assert floor * len(rows) <= 0.001
    assert any(r.significant for r in rows)


def test_run_json_and_report_state_the_rounds_used(tmp_path, capsys):
    import json

    from abnirml.cli import main

    out = tmp_path / "run"
    assert main(["run", "--collection", "demo", "--ranker", "bm25", "--probe", "mmp",
                 "--test", "permutation", "--no-cache", "--quiet", "--no-effectiveness",
                 "--out", str(out)]) == 0
    records = [json.loads(line) for line in (out / "results.jsonl").open()]
    tests = records[0]["tests_in_table"]
    expected = max(10_000, rounds_needed("permutation", tests, 0.01, "bonferroni"))
    assert {r["test_rounds"] for r in records} == {expected}
    statistics = json.loads((out / "run.json").read_text())["statistics"]
    assert statistics["test_rounds"] == {"mmp": expected}
    assert f"sign-flip rounds per table: mmp {expected:,}" in (out / "report.md").read_text()
    assert "warning" not in capsys.readouterr().err
