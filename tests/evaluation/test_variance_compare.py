"""Seed / checkpoint variance and the comparison of two models."""

from __future__ import annotations

import json
import math

import pytest

from abnirml.errors import ConfigError
from abnirml.evaluation.stats.variance import (
    expand_rankers,
    family_variance,
    parse_variant_group,
    probe_variance,
)


def _rec(ranker, probe, family, score, subset="all"):
    return {"ranker": ranker, "probe": probe, "family": family, "subset": subset,
            "score": score}


def test_probe_and_family_variance_known_answer():
    records = [
        _rec("k:s1", "tmp:shuffle", "tmp", 0.2), _rec("k:s2", "tmp:shuffle", "tmp", 0.4),
        _rec("k:s3", "tmp:shuffle", "tmp", 0.9),
        _rec("k:s1", "tmp:typos", "tmp", -0.1), _rec("k:s2", "tmp:typos", "tmp", -0.1),
        _rec("k:s3", "tmp:typos", "tmp", -0.1),
        _rec("k:s1", "mmp:tf:length", "mmp", 1.0), _rec("k:s2", "mmp:tf:length", "mmp", None),
        _rec("other", "tmp:shuffle", "tmp", -1.0),
    ]
    variances = {v.probe: v for v in probe_variance(records, {"k": ["k:s1", "k:s2", "k:s3"]})}
    shuffle = variances["tmp:shuffle"]
    assert shuffle.scores == (0.2, 0.4, 0.9)
    assert shuffle.mean == pytest.approx(0.5)
    assert shuffle.std == pytest.approx(math.sqrt((0.09 + 0.01 + 0.16) / 2))
    assert variances["tmp:typos"].std == pytest.approx(0.0)
    assert variances["mmp:tf:length"].std is None        # one score: no deviation
    families = {f.family: f for f in family_variance(list(variances.values()))}
    assert families["tmp"].mean_std == pytest.approx(shuffle.std / 2)
    assert families["tmp"].probes == 2
    assert families["mmp"].mean_std is None


def test_parse_and_expand_variant_groups():
    name, members = parse_variant_group("bm25=bm25+k1=0.9, BM25+k1=1.2")
    assert name == "bm25" and members == ["bm25+k1=0.9", "bm25+k1=1.2"]
    assert expand_rankers(["ql", "bm25+k1=0.9"], {"bm25": members}) == [
        "ql", "bm25+k1=0.9", "bm25+k1=1.2"]
    for bad in ("bm25", "g=bm25", "g=bm25,bm25"):
        with pytest.raises(ConfigError):
            parse_variant_group(bad)


@pytest.fixture(scope="module")
def grouped_run(tmp_path_factory):
    from abnirml.cli import main

    out = tmp_path_factory.mktemp("vg")
    code = main(["run", "--quiet", "--no-cache", "--probe", "mmp:tf:*", "--probe",
                 "mmp:length:*", "--ranker", "ql", "--variant-group",
                 "bm25=bm25+k1=0.5,bm25+k1=1.2,bm25+k1=3", "--out", str(out)])
    assert code == 0
    return out


def test_run_with_variant_group_reports_variance(grouped_run):
    run_info = json.loads((grouped_run / "run.json").read_text())
    assert run_info["variant_groups"] == {"bm25": ["bm25+k1=0.5", "bm25+k1=1.2", "bm25+k1=3"]}
    assert [r["name"] for r in run_info["rankers"]] == ["ql", "bm25+k1=0.5", "bm25+k1=1.2",
                                                         "bm25+k1=3"]
    records = [json.loads(line) for line in (grouped_run / "results.jsonl").open()]
    scores = [r["score"] for r in records if r["probe"] == "mmp:length:tf" and
              r["ranker"].startswith("bm25") and r["subset"] == "all"]
    expected = probe_variance(records, run_info["variant_groups"])
    row = next(v for v in expected if v.probe == "mmp:length:tf")
    assert row.mean == pytest.approx(sum(scores) / 3)
    csv_text = (grouped_run / "tables" / "variance-probes.csv").read_text()
    assert csv_text.startswith("Probe,bm25 mean,bm25 sd\n")        # tidy CSV
    assert f"mmp:length:tf,{row.mean:.2f},{row.std:.2f}" in csv_text
    assert "variance-families" in (grouped_run / "report.html").read_text()


def test_compare_two_rankers_in_one_run(grouped_run, capsys):
    from abnirml.evaluation.analyses.compare import compare
    from abnirml.evaluation.execution.score_file import load_scores

    store = load_scores(grouped_run / "scores.npz")
    same = compare(store, "ql", store, "ql")
    assert all(c.changed == 0 and not c.significant for c in same)
    assert all(c.p_value == 1.0 for c in same if c.n >= 2)
    rows = {c.probe: c for c in compare(store, "ql", store, "bm25+k1=1.2")}
    records = {(r["probe"], r["ranker"]): r for r in store.records() if r["subset"] == "all"}
    for probe, c in rows.items():
        assert c.score_a == pytest.approx(records[(probe, "ql")]["score"])
        assert c.score_b == pytest.approx(records[(probe, "bm25+k1=1.2")]["score"])
    # length vs summed TF: ql barely reacts (+0.03 on the demo) while bm25 prefers shorter
    # documents (−0.13); p ≈ 3e-4 over 124 samples
    assert rows["mmp:length:sumtf"].significant
    assert rows["mmp:length:sumtf"].changed > 0

    from abnirml.cli import main

    assert main(["compare", str(grouped_run), "--a", "ql", "--b", "bm25+k1=1.2",
                 "--out", str(grouped_run / "cmp")]) == 0
    printed = capsys.readouterr().out
    assert "mmp:length:sumtf" in printed and "differ significantly" in printed
    assert (grouped_run / "cmp" / "compare.csv").read_text().startswith("Probe,Subset,Samples")
    assert main(["compare", str(grouped_run)]) == 2       # four rankers: must name two
    assert main(["compare", str(grouped_run), "--a", "nope", "--b", "ql"]) == 2


def test_compare_across_directories_needs_identical_samples(grouped_run, tmp_path):
    from abnirml.evaluation.analyses.compare import compare
    from abnirml.evaluation.execution.score_file import load_scores
    from abnirml.pipeline import RunConfig, SessionSettings, run

    run(RunConfig(rankers=["bm25+k1=1.2"], probes=["mmp:tf:*", "mmp:length:*"],
                  out=str(tmp_path / "same"), session=SessionSettings(cache=None, progress=False)))
    run(RunConfig(rankers=["bm25+k1=1.2"], probes=["mmp:tf:*"], seed=0, out=str(tmp_path / "tol"),
                  options={"mmp.tolerance": 3},
                  session=SessionSettings(cache=None, progress=False)))
    a = load_scores(grouped_run / "scores.npz")
    same = compare(a, "bm25+k1=1.2", load_scores(tmp_path / "same" / "scores.npz"),
                   "bm25+k1=1.2")
    assert all(c.changed == 0 and c.note == "" for c in same)
    other = {c.probe: c for c in compare(a, "bm25+k1=1.2",
                                         load_scores(tmp_path / "tol" / "scores.npz"),
                                         "bm25+k1=1.2")}
    assert "different samples" in other["mmp:tf:relevance"].note
    assert other["mmp:length:tf"].note == "only in A"


def test_ranker_pairs_draw_each_probes_intervals_once_with_the_same_values(grouped_run):
    """The report's comparison of every pair of rankers draws a probe's resampled changes
    for all pairs at once; each pair's row is the one compare() draws for it alone."""
    from abnirml.evaluation.analyses.compare import compare, ranker_pairs
    from abnirml.evaluation.execution.score_file import load_scores

    store = load_scores(grouped_run / "scores.npz")
    pairs = ranker_pairs(store)
    assert len(pairs) == len(store.ranker_names) * (len(store.ranker_names) - 1) // 2
    for (a, b), rows in pairs.items():
        alone = {row.probe: row for row in compare(store, a, store, b)}
        assert rows == alone
        assert any(row.diff_ci_low is not None and row.diff_ci_low != row.diff_ci_high
                   for row in rows.values())
