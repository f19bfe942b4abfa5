"""δ sweep and the persisted per-sample scores (scores.npz)."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from abnirml.evaluation.execution.experiment import ProbeScores
from abnirml.evaluation.execution.score_file import (
    ProbeInfo,
    RankerInfo,
    ScoreStore,
    load_scores,
    save_scores,
)
from abnirml.evaluation.stats.calibration import Calibration
from abnirml.evaluation.stats.sweep import delta_at, parse_percentiles, records_at, sweep


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    from abnirml.pipeline import RunConfig, SessionSettings, run

    out = tmp_path_factory.mktemp("demo")
    return run(RunConfig(rankers=["bm25", "ql"], probes=["mmp:*"], out=str(out),
                         session=SessionSettings(cache=None, progress=False)))


def test_sweep_at_median_reproduces_main_table_exactly(demo_run):
    store = load_scores(demo_run.out / "scores.npz")
    assert records_at(store, 50.0) == demo_run.result.records
    main = {(r["probe"], r["ranker"], r["subset"]): r for r in demo_run.result.records}
    points = [p for p in sweep(store) if p.percentile == 50.0]
    assert len(points) == len(main)
    for p in points:
        record = main[(p.probe, p.ranker, p.subset)]
        assert p.score == record["score"]
        assert p.delta == demo_run.result.calibrations[p.ranker].delta
        assert p.n == record["n"]


def test_scores_file_round_trips_without_pickle(demo_run):
    path = demo_run.out / "scores.npz"
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    assert "manifest.npy" in names
    with np.load(path, allow_pickle=False) as data:      # would raise on object arrays
        for key in data.files:
            assert data[key].dtype != object
    store = load_scores(path)
    assert store.ranker_names == ["bm25", "ql"]
    for (probe, ranker), ps in demo_run.result.probe_scores.items():
        loaded = store.scores[(probe, ranker)]
        np.testing.assert_array_equal(loaded.score1, ps.score1)
        np.testing.assert_array_equal(loaded.score2, ps.score2)
    np.testing.assert_array_equal(store.calibrations["ql"].gaps,
                                  demo_run.result.calibrations["ql"].gaps)
    assert store.records() == demo_run.result.records


def _store(diff, gaps, symmetric=False, grade=None):
    diff = np.asarray(diff, dtype=np.float64)
    grade = np.full(diff.shape, np.nan) if grade is None else np.asarray(grade, np.float64)
    cal = Calibration(delta=float(np.median(gaps)), gaps=np.asarray(gaps, np.float64),
                      queries=1, source="calibrated")
    return ScoreStore(probes=[ProbeInfo("tmp:x", "tmp", symmetric)], rankers=[RankerInfo("r")],
                      scores={("tmp:x", "r"): ProbeScores(diff, np.zeros_like(diff), grade)},
                      calibrations={"r": cal})


def test_sweep_counts_known_answer():
    store = _store([-3.0, -1.0, 0.0, 1.0, 2.0, 5.0], gaps=[1.0, 2.0, 4.0])
    by_p = {p.percentile: p for p in sweep(store, [0.0, 50.0, 100.0])}
    # δ=1: >1 → {2, 5}, <−1 → {−3}: (2 − 1) / 6
    assert by_p[0.0].delta == 1.0 and by_p[0.0].score == pytest.approx(1 / 6)
    # δ=2 (median): >2 → {5}, <−2 → {−3}: 0
    assert by_p[50.0].delta == 2.0 and by_p[50.0].score == 0.0
    # δ=4: >4 → {5}: 1/6
    assert by_p[100.0].score == pytest.approx(1 / 6)


def test_symmetric_sweep_counts_absolute_differences():
    store = _store([-3.0, -1.0, 0.0, 1.0, 2.0, 5.0], gaps=[1.0, 2.0, 4.0], symmetric=True)
    by_p = {p.percentile: p.score for p in sweep(store, [0.0, 50.0])}
    assert by_p[0.0] == pytest.approx(3 / 6)   # |d| > 1: −3, 2, 5
    assert by_p[50.0] == pytest.approx(2 / 6)  # |d| > 2: −3, 5


def test_sweep_subsets_follow_grade_bands():
    store = _store([3.0, 3.0, -3.0, -3.0], gaps=[1.0], grade=[0, 1, 2, 3])
    scores = {p.subset: p.score for p in sweep(store, [50.0])}
    assert scores == {"all": 0.0, "non-relevant": 1.0, "relevant": -1.0}


def test_given_delta_has_no_curve():
    store = _store([1.0, 2.0], gaps=[1.0])
    store.calibrations["r"] = Calibration(0.5, np.zeros(0), 0, "given")
    assert delta_at(store.calibrations["r"], 10.0) is None
    assert sweep(store) == []


def test_median_operating_point_is_the_calibrated_delta_even_when_percentile_rounds():
    # np.median averages the middle pair; np.percentile interpolates — they can differ by
    # one ulp. The operating point must use the calibrated δ itself.
    gaps = np.array([0.1, 0.7, 0.3, 0.9])
    cal = Calibration(float(np.median(gaps)), gaps, 1, "calibrated")
    assert delta_at(cal, 50.0) == cal.delta
    assert delta_at(cal, 0.0) == 0.1 and delta_at(cal, 100.0) == 0.9
    with pytest.raises(ValueError):
        delta_at(cal, 101.0)


def test_parse_percentiles():
    assert parse_percentiles("0-100:25") == (0.0, 25.0, 50.0, 75.0, 100.0)
    assert parse_percentiles("50,10") == (10.0, 50.0)
    from abnirml.errors import ConfigError

    with pytest.raises(ConfigError):
        parse_percentiles("0-120:10")


def test_save_scores_rejects_foreign_files(tmp_path):
    from abnirml.errors import InputError

    bogus = tmp_path / "scores.npz"
    np.savez(bogus, manifest=np.array('{"format": "other"}'))
    with pytest.raises(InputError, match="not an abnirml score file"):
        load_scores(bogus)
    store = _store([1.0], gaps=[1.0])
    save_scores(tmp_path / "ok.npz", store)
    assert load_scores(tmp_path / "ok.npz").records() == store.records()
