"""A reviewer's audit of every statistic a run prints, each recomputed independently.

Nothing here calls the helper it checks to get the expected value: effects, δ, sweeps,
p-values, corrections, intervals, axiom fractions and effectiveness are recomputed from the
run's own files (``scores.npz``, ``reranked/*.run``, ``calibration.json``) with NumPy and
SciPy from their definitions, or enumerated exactly for small n.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from abnirml.evaluation.stats.bootstrap import clustered_ci
from abnirml.evaluation.stats.significance import StatsConfig, record_fields
from abnirml.evaluation.stats.statistics import greater_than_zero_p, paired_ttest_p
from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run

ALPHA = 0.01
PROBES = ["mmp:*", "tmp:remove-stops", "tmp:shuffle-words", "dtp:paraphrase-mrpc",
          "axiom:rennings-tfc1", "axiom:lnc2", "axiom:lb1"]


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("audit") / "run"
    run(RunConfig(collection="demo", rankers=["bm25", "ql"], probes=PROBES, out=str(out),
                  options={"dtp.data": "demo"},
                  session=SessionSettings(cache=None, progress=False),
                  statistics=StatisticsSettings(alpha=ALPHA, bootstrap=300, test="ttest")))
    return out


def _records(folder: Path) -> list[dict]:
    with (folder / "results.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _scores(folder: Path) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """(probe, ranker) → score1, score2, grade, cluster, read straight from scores.npz."""
    from abnirml.evaluation.execution.score_file import load_scores

    store = load_scores(folder / "scores.npz")
    return {key: {"score1": np.asarray(ps.score1, dtype=np.float64),
                  "score2": np.asarray(ps.score2, dtype=np.float64),
                  "grade": np.asarray(ps.grade, dtype=np.float64),
                  "cluster": None if ps.cluster is None else np.asarray(ps.cluster)}
            for key, ps in store.scores.items()}


def _mask(grade: np.ndarray, subset: str) -> np.ndarray:
    if subset == "all":
        return np.ones(grade.shape[0], dtype=bool)
    low, high = {"non-relevant": (0, 1), "relevant": (2, 3)}[subset]
    return (grade >= low) & (grade <= high)


# ----------------------------------------------------------------------------- effects


def test_effect_counts_scores_and_ties_within_delta_from_first_principles(audited):
    """pos / neg / neutral / score / mean_diff of every record, from the raw scores: a
    difference of exactly ±δ is neutral; symmetric probes count |diff| > δ."""
    scores = _scores(audited)
    records = _records(audited)
    assert any(r["symmetric"] for r in records) and any(not r["symmetric"] for r in records)
    for r in records:
        s = scores[(r["probe"], r["ranker"])]
        mask = _mask(s["grade"], r["subset"])
        diff = s["score1"][mask] - s["score2"][mask]
        delta = r["delta"]
        assert r["n"] == diff.shape[0]
        if r["symmetric"]:
            pos, neg = int(np.sum(np.abs(diff) > delta)), 0
        else:
            pos, neg = int(np.sum(diff > delta)), int(np.sum(diff < -delta))
        assert (r["pos"], r["neg"], r["neutral"]) == (pos, neg, diff.shape[0] - pos - neg)
        if diff.shape[0] == 0:
            assert r["score"] is None and r["mean_diff"] is None
            continue
        assert r["score"] == pytest.approx((pos - neg) / diff.shape[0], abs=1e-12)
        assert r["mean_diff"] == pytest.approx(diff.mean(), rel=1e-9, abs=1e-12)


def test_delta_is_the_median_adjacent_top10_gap_of_the_rankers_own_reranking(audited):
    """δ from the collection's own data: each query's candidates as the ranker re-scored
    them (reranked/<ranker>.run), the 9 gaps between its 10 best scores, pooled median."""
    calibration = json.loads((audited / "calibration.json").read_text(encoding="utf-8"))
    for ranker in ("bm25", "ql"):
        per_query: dict[str, list[float]] = {}
        for line in (audited / "reranked" / f"{ranker}.run").read_text().splitlines():
            qid, _, _docno, _rank, score, _tag = line.split()
            per_query.setdefault(qid, []).append(float(score))
        gaps = []
        for values in per_query.values():
            top = sorted(values, reverse=True)[:10]
            gaps += [top[i] - top[i + 1] for i in range(len(top) - 1)]
        expected = float(np.median(gaps))
        delta = {r["ranker"]: r["delta"] for r in _records(audited)}[ranker]
        assert delta == pytest.approx(expected, rel=1e-9)
        entry = calibration[ranker] if ranker in calibration else calibration["rankers"][ranker]
        assert entry["delta"] == pytest.approx(expected, rel=1e-9)


def test_delta_sweep_scores_equal_effects_recounted_at_each_percentile(audited):
    from abnirml.evaluation.execution.score_file import load_scores
    from abnirml.evaluation.stats.sweep import sweep

    store = load_scores(audited / "scores.npz")
    scores = _scores(audited)
    main = {(r["probe"], r["ranker"], r["subset"]): r["score"] for r in _records(audited)}
    points = sweep(store, percentiles=(0.0, 25.0, 50.0, 90.0, 100.0))
    assert points
    for point in points:
        gaps = store.calibrations[point.ranker].gaps
        delta = float(np.median(gaps)) if point.percentile == 50 else float(
            np.percentile(gaps, point.percentile))
        assert point.delta == pytest.approx(delta, rel=1e-12)
        s = scores[(point.probe, point.ranker)]
        mask = _mask(s["grade"], point.subset)
        diff = s["score1"][mask] - s["score2"][mask]
        if diff.shape[0] == 0:
            assert point.score is None
            continue
        symmetric = store.probe(point.probe).symmetric
        expected = (np.mean(np.abs(diff) > delta) if symmetric
                    else np.mean(diff > delta) - np.mean(diff < -delta))
        assert point.score == pytest.approx(expected, abs=1e-12)
        if point.percentile == 50:
            assert point.score == main[(point.probe, point.ranker, point.subset)]


# ------------------------------------------------------------------------- significance


def test_p_values_are_scipys_two_sided_paired_and_one_sided_symmetric_ttests(audited):
    scores = _scores(audited)
    checked = 0
    for r in _records(audited):
        s = scores[(r["probe"], r["ranker"])]
        mask = _mask(s["grade"], r["subset"])
        a, b = s["score1"][mask], s["score2"][mask]
        diff = a - b
        if diff.shape[0] < 2:
            assert r["p_value"] is None       # undefined, not 1.0
            continue
        if np.ptp(diff if not r["symmetric"] else np.abs(diff)) == 0:
            continue                          # no variance: the exact test below
        if r["symmetric"]:
            expected = stats.ttest_1samp(np.abs(diff) - r["delta"], 0.0,
                                         alternative="greater").pvalue
        else:
            expected = stats.ttest_rel(a, b).pvalue
        assert r["p_value"] == pytest.approx(expected, rel=1e-8, abs=1e-300)
        checked += 1
    assert checked > 20


def test_bonferroni_family_is_every_record_of_one_table_with_two_or_more_samples(audited):
    records = _records(audited)
    for family in {r["family"] for r in records}:
        tested = [r for r in records if r["family"] == family and r["n"] >= 2]
        m = len(tested)
        for r in tested:
            assert r["tests_in_table"] == m
            assert r["p_adjusted"] == pytest.approx(min(1.0, r["p_value"] * m), rel=1e-9)
            assert r["significant"] == (r["p_value"] * m < ALPHA)
        for r in records:
            if r["family"] == family and r["n"] < 2:
                assert not r["significant"] and "tests_in_table" not in r
                assert r["p_value"] is None


def test_holm_and_bh_agree_with_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    from abnirml.evaluation.stats.corrections import adjust, significant

    rng = np.random.default_rng(5)
    p = np.concatenate([rng.uniform(0, 0.002, 6), rng.uniform(0, 1, 20), [0.004, 0.004]])
    for ours, theirs in (("holm", "holm"), ("bh", "fdr_bh"), ("bonferroni", "bonferroni")):
        reject, corrected, _, _ = multitest.multipletests(p, alpha=0.05, method=theirs)
        assert adjust(p.tolist(), ours) == pytest.approx(corrected.tolist(), rel=1e-12)
        assert significant(p.tolist(), 0.05, ours) == reject.tolist()


def _sign_flip_p(values: np.ndarray, one_sided: bool) -> float:
    """Exact randomization p-value: every one of the 2ⁿ sign patterns, enumerated."""
    observed = values.mean()
    reached = 0
    for signs in itertools.product((1.0, -1.0), repeat=values.shape[0]):
        mean = float(np.dot(signs, values)) / values.shape[0]
        reached += mean >= observed - 1e-12 if one_sided else abs(mean) >= abs(observed) - 1e-12
    return reached / 2 ** values.shape[0]


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_equal_differences_get_the_exact_sign_flip_p_not_zero(n):
    """Every sample moved by exactly the same amount: no t statistic exists (SD 0). Before
    the audit p was 0 — 'significant' from two samples; the exact answer is 2·2⁻ⁿ."""
    a = np.arange(n, dtype=np.float64)
    b = a - 0.3
    assert paired_ttest_p(a, b) == pytest.approx(_sign_flip_p(a - b, False), rel=1e-12)
    assert paired_ttest_p(a, b) == pytest.approx(2.0 * 0.5 ** n)
    assert paired_ttest_p(a, a) == pytest.approx(_sign_flip_p(a - a, False)) == 1.0
    shifted = np.full(n, 0.4)
    assert greater_than_zero_p(shifted) == pytest.approx(_sign_flip_p(shifted, True))
    assert greater_than_zero_p(-shifted) == 1.0


def test_two_equal_shifts_are_not_significant_in_a_run():
    """End to end: a probe whose two samples both move by the same amount is reported
    with p = 0.5, never as a significant effect."""
    from abnirml.evaluation.execution.experiment import ProbeOutline, ProbeScores, build_records
    from abnirml.evaluation.stats.calibration import fixed

    outline = ProbeOutline("toy:shift", "toy", False, {}, {})
    scores = ProbeScores(np.array([1.0, 2.0]), np.array([0.5, 1.5]), np.full(2, np.nan),
                         np.array([0, 1]))
    records = build_records([outline], ["r"], {("toy:shift", "r"): scores}, {"r": fixed(0.1)},
                            (), ALPHA)
    assert records[0]["p_value"] == 0.5 and not records[0]["significant"]


@pytest.mark.parametrize("n", [0, 1])
def test_no_p_value_and_no_interval_below_two_samples(n):
    from abnirml.evaluation.execution.experiment import ProbeOutline, ProbeScores, build_records
    from abnirml.evaluation.stats.calibration import fixed

    outline = ProbeOutline("toy:tiny", "toy", False, {}, {})
    scores = ProbeScores(np.ones(n), np.zeros(n), np.full(n, np.nan), np.zeros(n, dtype=int))
    record = build_records([outline], ["r"], {("toy:tiny", "r"): scores}, {"r": fixed(0.1)},
                           (), ALPHA)[0]
    assert record["p_value"] is None and record["significant"] is False
    assert record["ci_low"] is None and record["ci_high"] is None
    assert "p_adjusted" not in record


def test_wilcoxon_small_n_is_the_exact_signed_rank_distribution():
    from abnirml.evaluation.stats.significance import p_value

    diff = np.array([0.9, -0.2, 0.5, 0.7, 0.3, 1.1, -0.05])
    ours = p_value(diff, np.zeros_like(diff), 0.0, False, StatsConfig(test="wilcoxon"))
    # exact: W+ over all 2^7 sign patterns of the ranks 1..7
    ranks = stats.rankdata(np.abs(diff))
    observed = ranks[diff > 0].sum()
    total = ranks.sum()
    w = [sum(r for r, s in zip(ranks, signs, strict=True) if s)
         for signs in itertools.product((True, False), repeat=diff.shape[0])]
    w = np.array(w)
    extreme = min(observed, total - observed)
    exact = np.mean((w <= extreme) | (w >= total - extreme))
    assert ours == pytest.approx(exact, rel=1e-12)


# --------------------------------------------------------------------------- intervals


def test_interval_coverage_of_a_known_mean_is_near_nominal():
    """200 simulated probes of 30 queries (4–12 samples each, query effects correlated):
    the 90 % query-clustered interval covers the population score in 80–97 % of them."""
    rng = np.random.default_rng(2024)
    true_p = 0.3
    # the population score: the mean per-query rate (query sizes do not depend on it)
    population = float(np.mean(np.clip(true_p + rng.normal(0, 0.15, 1_000_000), 0, 1)))
    covered = 0
    trials = 200
    for t in range(trials):
        sizes = rng.integers(4, 13, size=30)
        query_p = np.clip(true_p + rng.normal(0, 0.15, size=30), 0, 1)
        effect = np.concatenate([rng.binomial(1, p, size=k) for p, k in zip(query_p, sizes,
                                                                            strict=True)])
        cluster = np.repeat(np.arange(30), sizes)
        low, high = clustered_ci(effect.astype(np.float64), cluster, 400, 0.9, seed=0,
                                 key=("coverage", t))  # type: ignore[misc]
        covered += low <= population <= high
    assert 0.80 <= covered / trials <= 0.97


def test_intervals_are_seeded_and_identical_run_to_run():
    diff = np.linspace(-1, 2, 40)
    cluster = np.repeat(np.arange(10), 4)
    config = StatsConfig(resamples=200, seed=7)
    first = record_fields(diff, np.zeros(40), 0.2, False, config, cluster, ("p", "all"))
    again = record_fields(diff, np.zeros(40), 0.2, False, config, cluster, ("p", "all"))
    other = record_fields(diff, np.zeros(40), 0.2, False, StatsConfig(resamples=200, seed=8),
                          cluster, ("p", "all"))
    assert first == again
    assert first != other


def test_one_query_gives_no_interval_rather_than_a_point():
    """Every resample of a single query is that query: the percentile interval collapses
    to the score itself although the samples disagree. Undefined, not [s, s]."""
    effect = np.array([1.0, -1.0, 1.0, 0.0])
    assert clustered_ci(effect, np.zeros(4, dtype=int), 500, 0.95, seed=0) is None
    fields = record_fields(effect, np.zeros(4), 0.5, False, StatsConfig(resamples=500),
                           np.zeros(4, dtype=int), ("one", "all"))
    assert fields["ci_low"] is None and fields["mean_diff_ci_low"] is None


@pytest.mark.parametrize("queries", [2, 5, 10, 40])
def test_unanimous_effects_get_the_clopper_pearson_bound_over_queries(queries):
    """Score exactly +1 (every sample beyond δ): the percentile bootstrap says [1, 1] —
    certainty. The exact binomial interval for `queries` successes out of `queries` gives
    the lowest share of queries with effect +1 still compatible with the data; the score
    bound assumes the rest go the other way."""
    cluster = np.repeat(np.arange(queries), 3)
    n = cluster.shape[0]
    level = 0.95
    config = StatsConfig(resamples=300, ci_level=level)
    share_low = stats.binomtest(queries, queries).proportion_ci(level, method="exact").low
    up = record_fields(np.full(n, 2.0), np.zeros(n), 0.5, False, config, cluster, ("u", "a"))
    assert up["ci_low"] == pytest.approx(2 * share_low - 1, rel=1e-9)
    assert up["ci_high"] == 1.0
    down = record_fields(np.zeros(n), np.full(n, 2.0), 0.5, False, config, cluster, ("d", "a"))
    assert (down["ci_low"], down["ci_high"]) == pytest.approx((-1.0, 1 - 2 * share_low))
    ties = record_fields(np.zeros(n), np.zeros(n), 0.5, False, config, cluster, ("t", "a"))
    assert (ties["ci_low"], ties["ci_high"]) == pytest.approx((share_low - 1, 1 - share_low))
    paraphrase = record_fields(np.full(n, 2.0), np.zeros(n), 0.5, True, config, cluster,
                               ("s", "a"))
    assert (paraphrase["ci_low"], paraphrase["ci_high"]) == pytest.approx((share_low, 1.0))
    # the score itself is inside, and the interval is not a point
    assert up["ci_low"] < 1.0 and ties["ci_low"] < 0.0 < ties["ci_high"]


def test_mixed_effects_keep_the_percentile_interval():
    effect_diff = np.array([1.0, -1.0, 1.0, 1.0, 0.0, 1.0])
    cluster = np.array([0, 0, 1, 1, 2, 2])
    config = StatsConfig(resamples=300)
    fields = record_fields(effect_diff, np.zeros(6), 0.5, False, config, cluster, ("m", "a"))
    effect = np.array([1.0, -1.0, 1.0, 1.0, 0.0, 1.0])
    low, high = clustered_ci(np.stack([effect, effect_diff], axis=1), cluster, 300, 0.95, 0,
                             ("ci", "m", "a"))  # type: ignore[misc]
    # the percentile interval, widened to what a perfect score over 3 queries could claim:
    # the Clopper–Pearson bound of 3 × +1 at 95 % is 2·0.025^(1/3) − 1 ≈ −0.42 (and of −1
    # its mirror image), so no 3-query score excludes 0 at 95 %
    perfect = 2 * 0.025 ** (1 / 3) - 1
    assert (fields["ci_low"], fields["ci_high"]) == pytest.approx(
        (min(float(low[0]), perfect), max(float(high[0]), -perfect)), abs=1e-12)
    assert fields["ci_low"] <= perfect + 1e-12 < 0 < -perfect - 1e-12 <= fields["ci_high"]


# ------------------------------------------------------------------------------ axioms


def test_axiom_fractions_and_overlap_split_from_the_raw_scores(audited):
    scores = _scores(audited)
    axiom = [r for r in _records(audited) if r["family"] == "axiom" and r["subset"] == "all"]
    assert axiom
    for r in axiom:
        s = scores[(r["probe"], r["ranker"])]
        diff = s["score1"] - s["score2"]
        assert (r["satisfied"], r["violated"], r["ties"]) == (
            int((diff > 0).sum()), int((diff < 0).sum()), int((diff == 0).sum()))
        assert (r["satisfied_delta"], r["violated_delta"], r["ties_delta"]) == (
            int((diff > r["delta"]).sum()), int((diff < -r["delta"]).sum()),
            int((np.abs(diff) <= r["delta"]).sum()))
        split = r.get("overlap_split") or []
        if split:
            assert sum(b["n"] for b in split) == r["n"]
            assert sum(b["satisfied"] for b in split) == r["satisfied"]
        agree, disagree, tie = (r.get("relevance_agree"), r.get("relevance_disagree"),
                                r.get("relevance_ties"))
        if agree is not None and agree + disagree + tie:
            assert r["relevance_agreement"] == pytest.approx(agree / (agree + disagree + tie))
            if agree + disagree:
                assert r["relevance_agreement_decided"] == pytest.approx(
                    agree / (agree + disagree))


def test_axiom_table_cells_are_satisfied_over_instances(audited):
    from abnirml.report.axiom_tables import _label, satisfaction_table

    records = _records(audited)
    table = satisfaction_table([r for r in records if r["family"] == "axiom"],
                               with_delta=False)
    assert table is not None
    labels = table.header[1:]
    for row in table.rows:
        for label, cell in zip(labels, row[1:], strict=True):
            record = next(r for r in records if r["family"] == "axiom"
                          and r["subset"] == "all" and r["ranker"] == row[0]
                          and label == _label(r["probe"], r))
            if not record["n"]:
                assert cell == "–"
                continue
            assert cell == (f"{record['satisfied'] / record['n']:.2f} "
                            f"({record['ties'] / record['n']:.2f})")


# ------------------------------------------------------------------------ effectiveness


def _ndcg_at_10(ranking: list[tuple[str, float]], judged: dict[str, int]) -> float:
    """trec_eval's ndcg_cut_10: linear gains, log2(rank + 1), ties by docno descending."""
    ordered = sorted(ranking, key=lambda item: (-item[1], [-ord(c) for c in item[0]]))
    dcg = sum(judged.get(d, 0) / math.log2(i + 2) for i, (d, _) in enumerate(ordered[:10]))
    ideal = sorted(judged.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def test_ndcg_map_mrr_on_hand_made_qrels_with_known_answers():
    from abnirml.evaluation.analyses.effectiveness import evaluate

    qrels = {"q1": {"a": 3, "b": 0, "c": 2}, "q2": {"x": 1, "y": 2}}
    run_ = {"q1": [("b", 3.0), ("a", 2.0), ("d", 1.0), ("c", 0.5)],
            "q2": [("y", 9.0), ("x", 8.0)]}
    values = evaluate(run_, qrels)
    # q1: DCG = 3/log2(3) + 2/log2(5); IDCG = 3 + 2/log2(3).  q2: ideal order → 1.
    q1 = (3 / math.log2(3) + 2 / math.log2(5)) / (3 + 2 / math.log2(3))
    assert values["nDCG@10"] == pytest.approx((q1 + 1.0) / 2, abs=1e-12)
    # rel ≥ 2: q1 relevant a (rank 2), c (rank 4): AP = (1/2 + 2/4) / 2; q2: y at 1 → 1
    assert values["AP(rel=2)"] == pytest.approx((0.5 + 1.0) / 2, abs=1e-12)
    assert values["RR(rel=2)"] == pytest.approx((0.5 + 1.0) / 2, abs=1e-12)


def test_ndcg_on_dl19_matches_a_hand_written_ndcg(dl19):
    from abnirml.data.trec import read_qrels, read_run
    from abnirml.evaluation.analyses.effectiveness import evaluate

    qrels = read_qrels(dl19 / "qrels.txt")
    run_file = sorted((dl19 / "runs").glob("*.run"))[0]
    ranked = read_run(run_file)
    ours = evaluate(ranked, qrels, ["nDCG@10"])["nDCG@10"]
    per_query = [_ndcg_at_10(ranking, qrels[qid]) for qid, ranking in ranked.items()
                 if qid in qrels]
    assert ours == pytest.approx(float(np.mean(per_query)), abs=1e-9)


def test_rank_origin_fractions_on_hand_made_runs():
    from abnirml.evaluation.analyses.rank_origin import parse_ranges, rank_origin

    reference = {"q": [(f"d{i}", float(20 - i)) for i in range(1, 21)]}
    # the run's top 2 come from reference ranks 15 and 1; rank 3 was never retrieved
    moved = [("d15", 9.0), ("d1", 8.0), ("new", 7.0)]
    rest = [(d, 1.0) for d, _ in reference["q"] if d not in {"d15", "d1"}]
    origin = rank_origin(reference, {"q": moved + rest}, ranges=parse_ranges("1-3,4-20"))
    assert origin.fraction("all", "1-3", "1-3") == pytest.approx(1 / 3)
    assert origin.fraction("all", "1-3", "4-20") == pytest.approx(1 / 3)
    assert origin.fraction("all", "1-3", "absent") == pytest.approx(1 / 3)
    assert origin.fraction("all", "4-20", "1-3") == pytest.approx(2 / 17)


def test_no_judged_candidate_query_gives_no_effectiveness_instead_of_zeros():
    """ir_measures averages over zero queries as 0.0; a table of 0.0000 would read as a
    ranker that finds nothing relevant. Undefined: no table, and run.json says why."""
    import ir_measures

    assert ir_measures.calc_aggregate([ir_measures.parse_measure("nDCG@10")],
                                      {"other": {"d": 2}}, {"q": {"d": 1.0}}) == {
        ir_measures.parse_measure("nDCG@10"): 0.0}
    from types import SimpleNamespace

    from abnirml.evaluation.analyses.effectiveness import attach_effectiveness

    result = SimpleNamespace(extras={})
    collection = SimpleNamespace(qrels={"other": {"d": 2}}, queries={"q": "x"}, docs={"d": "x"})
    candidates = SimpleNamespace(ranking={"q": ["d"]}, source="test")
    info = attach_effectiveness(result, [], collection, candidates)
    assert "undefined" in info["skipped"] and "rankers" not in info


def test_overlap_groups_account_for_every_instance():
    """Câmara & Hauff's overlap split: instances of a query with no relevant document
    (no overlap value) were dropped from every group; they now form their own group, so
    the groups add up to the probe's instances."""
    from abnirml.evaluation.analyses.axiom_breakdown import UNSPLIT, overlap_split

    qids = np.array(["q1", "q1", "q2", "q3", "q4", "q4"], dtype=object)
    s1 = np.array([2.0, 1.0, 3.0, 1.0, 5.0, 0.0])
    s2 = np.array([1.0, 1.0, 1.0, 2.0, 1.0, 1.0])
    buckets = {"q1": "low", "q2": "medium", "q3": "high"}
    rows = overlap_split(qids, s1, s2, buckets, {"q1": 0.2, "q2": 0.5, "q3": 1.0},
                         unsplit_queries=1)
    assert [r["bucket"] for r in rows] == ["low", "medium", "high", UNSPLIT]
    assert sum(r["n"] for r in rows) == 6
    assert (rows[3]["n"], rows[3]["satisfied"], rows[3]["violated"], rows[3]["queries"]) == (
        2, 1, 1, 1)
    assert sum(r["satisfied"] for r in rows) == int((s1 > s2).sum())


def test_masking_tie_breaks_average_to_the_expected_ndcg_of_a_random_order():
    """Masking's figures: a ranker that ties a relevant and a non-relevant document. Under
    a random order nDCG@10 is 1 or 1/log2(3) with equal chance; the mean over seeded
    tie-breaks estimates their average, where trec_eval's docno order would always put
    'b' first."""
    from abnirml.evaluation.analyses.masking import evaluate
    from abnirml.evaluation.stats.ties import evaluate_without_tie_order

    qrels = {"q": {"a": 2, "b": 0}}
    tied = {"q": {"a": 1.0, "b": 1.0, "c": 0.0}}
    measures = ["nDCG@10"]
    expected = (1.0 + 1.0 / math.log2(3)) / 2
    broken = evaluate_without_tie_order(tied, lambda r: evaluate(r, qrels, measures),
                                        measures, seed=0, tie_breaks=400, key="audit")
    assert broken.tie_breaks == 400 and broken.tied == pytest.approx(2 / 3)
    # 400 fair coin flips: SD of the mean ≈ 0.184 · 0.5 / 20 ≈ 0.0046
    assert broken.mean["nDCG@10"] == pytest.approx(expected, abs=0.02)
    assert evaluate(tied, qrels, measures)["nDCG@10"] == pytest.approx(1 / math.log2(3))


@pytest.mark.parametrize("one_sided", [False, True])
def test_permutation_test_is_exact_for_small_n(one_sided):
    """With 2⁶ = 64 sign patterns, 10,000 random rounds only estimate what enumeration
    gives exactly; the p-value is now the enumeration, identical for every seed."""
    from abnirml.evaluation.stats.significance import permutation_p

    values = np.array([0.7, 0.2, -0.1, 0.9, 0.4, 0.3])
    exact = _sign_flip_p(values, one_sided)
    for seed in (0, 1):
        found = permutation_p(values, 10_000, np.random.default_rng(seed), one_sided=one_sided)
        assert found == pytest.approx(exact, rel=1e-12)


def test_seed_variance_is_the_sample_sd_of_the_variants_scores():
    from abnirml.evaluation.stats.variance import family_variance, probe_variance

    records = [{"probe": p, "family": "f", "subset": "all", "ranker": r, "score": s}
               for p, scores in (("p1", (0.1, 0.4, 0.25)), ("p2", (0.5, 0.5, -0.5)))
               for r, s in zip(("a", "b", "c"), scores, strict=True)]
    variances = probe_variance(records, {"g": ["a", "b", "c"]})
    sds = {v.probe: v.std for v in variances}
    assert sds["p1"] == pytest.approx(np.std([0.1, 0.4, 0.25], ddof=1))
    assert sds["p2"] == pytest.approx(np.std([0.5, 0.5, -0.5], ddof=1))
    (family,) = family_variance(variances)
    assert family.mean_std == pytest.approx((sds["p1"] + sds["p2"]) / 2)


def test_qvp_ndcg_at_10_equals_ir_measures_on_untied_pools():
    """The query-variation probes compute nDCG@10 themselves (per pool, in NumPy): with
    distinct scores it must be trec_eval's value for qrels restricted to the pool."""
    import ir_measures

    from abnirml.probes.query_variation.probes import ndcg_at

    rng = np.random.default_rng(9)
    measure = ir_measures.parse_measure("nDCG@10")
    for trial in range(20):
        size = int(rng.integers(3, 40))
        docnos = np.array([f"d{trial}-{i}" for i in range(size)], dtype=object)
        gains = rng.choice([0, 0, 0, 1, 2, 3], size=size).astype(np.float64)
        gains[0] = max(gains[0], 1.0)
        scores = rng.permutation(size).astype(np.float64)
        qrels = {"q": {d: int(g) for d, g in zip(docnos, gains, strict=True)}}
        run_ = {"q": {d: float(s) for d, s in zip(docnos, scores, strict=True)}}
        expected = ir_measures.calc_aggregate([measure], qrels, run_)[measure]
        assert ndcg_at(scores, gains, docnos.astype(str)) == pytest.approx(expected, abs=1e-12)


def test_qvp_ndcg_orders_tied_scores_as_trec_eval():
    """Tied scores: trec_eval (ir_measures, the effectiveness table) puts the larger docno
    first; the qvp nDCG put the smaller first, so one ranker's nDCG@10 differed between
    the two tables."""
    import ir_measures

    from abnirml.probes.query_variation.probes import ndcg_at

    measure = ir_measures.parse_measure("nDCG@10")
    docnos = np.array(["a", "b", "c", "d"])
    gains = np.array([2.0, 0.0, 1.0, 0.0])
    scores = np.array([1.0, 1.0, 0.5, 0.5])
    qrels = {"q": {d: int(g) for d, g in zip(docnos, gains, strict=True)}}
    run_ = {"q": {d: float(s) for d, s in zip(docnos, scores, strict=True)}}
    expected = ir_measures.calc_aggregate([measure], qrels, run_)[measure]
    # b before a, d before c: DCG = 2/log2(3) + 1/log2(5)
    ideal = 2.0 + 1.0 / math.log2(3)
    assert expected == pytest.approx((2 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert ndcg_at(scores, gains, docnos) == pytest.approx(expected, abs=1e-12)


def test_compare_of_identical_effects_gives_a_zero_width_interval(audited):
    """`abnirml compare` of a ranker with itself: no sample's effect changes, so the two
    behave alike on exactly these samples and the difference is 0 with nothing to resample:
    [0, 0]. (A change by one same non-zero amount on every sample gets the Clopper–Pearson
    bound over queries instead: a few queries never make a point interval.)"""
    from abnirml.evaluation.analyses.compare import compare
    from abnirml.evaluation.execution.score_file import load_scores

    store = load_scores(audited / "scores.npz")
    checked = 0
    for row in compare(store, "bm25", store, "bm25"):
        if row.n == 0 or row.diff_ci_low is None:
            continue
        assert row.changed == 0
        assert (row.diff_ci_low, row.diff_ci_high) == (0.0, 0.0)
        checked += 1
    assert checked >= 5


def test_report_shows_a_one_sample_statistic_as_undefined(audited):
    """axiom:lb1 has one instance on the demo: its p-value, interval and effect size do
    not exist, so the intervals table shows dashes (never 0.00, never 'yes')."""
    records = [r for r in _records(audited) if r["probe"] == "axiom:lb1"]
    assert records and all(r["n"] == 1 for r in records)
    markdown = (audited / "report.md").read_text(encoding="utf-8")
    rows = [line for line in markdown.splitlines() if line.startswith("| axiom:lb1 | bm25 |")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    # Probe, Ranker, Family, Score, Score CI, Mean diff, Mean diff CI, d_z, Size, p,
    # Significant, n
    assert cells[4] == cells[6] == cells[7] == cells[9] == "–"
    assert cells[10] == "no" and cells[11] == "1"


def test_bootstrap_test_of_one_query_is_undefined_not_significant():
    """Every resample of a single query is that query, so all resampled means equal the
    observed one and p came out as 2/(B + 1) — 'significant' from one query."""
    from abnirml.evaluation.stats.significance import p_value

    diff = np.array([0.3, 0.5, 0.2, 0.4])
    config = StatsConfig(test="bootstrap", resamples=999)
    p = p_value(diff, np.zeros(4), 0.0, False, config, np.zeros(4, dtype=int), ("b", "all"))
    assert math.isnan(p)
    spread = p_value(diff, np.zeros(4), 0.0, False, config, np.arange(4), ("b", "all"))
    # four queries, all above 0: the least p four queries allow, 2/2⁴ (not 2/1000)
    assert spread == 2 / 2 ** 4


def test_significance_the_query_clustered_interval_does_not_back_is_a_caveat():
    """On DL19 the paired t-test calls BM25's mmp:relevance:length effect significant
    (p = 6e-14 over 3,913 samples) while the interval that resamples queries spans
    [−0.54, +2.63]: the report says so instead of leaving the star to speak alone."""
    from abnirml.report.caveats import unbacked_significance

    def record(probe, significant, low, high):
        return {"probe": probe, "family": "mmp", "ranker": "bm25", "subset": "all",
                "significant": significant, "mean_diff_ci_low": low,
                "mean_diff_ci_high": high}

    records = [record("mmp:a", True, -0.5, 2.6), record("mmp:b", True, 0.1, 0.4),
               record("mmp:c", False, -1.0, 1.0), record("mmp:d", True, None, None)]
    caveat = unbacked_significance(records, {"statistics": {"test": "ttest", "ci": 0.95}},
                                   "mmp")
    assert caveat is not None and caveat.family == "mmp"
    assert caveat.text.startswith("1 of 3 significant results have a 95 % query-clustered")
    assert "mmp:a bm25 (all)" in caveat.text and "mmp:b" not in caveat.text
    assert unbacked_significance(records, {"statistics": {"test": "bootstrap"}}, "mmp") is None
    assert unbacked_significance(records, {"statistics": {"test": "clustered"}}, "mmp") is None
    assert unbacked_significance(records[1:], {}, "mmp") is None
