"""Rank origin (Rau & Kamps fig. 1): hand-computed case, DL19 runs, CLI, re-ranking."""

from __future__ import annotations

import csv

import pytest

from abnirml.errors import ConfigError
from abnirml.evaluation.analyses.rank_origin import (
    ABSENT,
    RankRange,
    parse_ranges,
    rank_origin,
    read_csv,
    rerank,
)


def _run(*docnos):
    return [(d, float(len(docnos) - i)) for i, d in enumerate(docnos)]


RANGES = (RankRange(1, 2), RankRange(3, 4))


def test_hand_computed_case():
    reference = {"q1": _run("a", "b", "c", "d", "e"), "q2": _run("x", "y", "z")}
    run = {"q1": _run("c", "f", "a", "e", "b"), "q2": _run("z", "x", "w")}
    qrels = {"q1": {"c": 2, "a": 0, "f": 2}, "q2": {"z": 2}}
    origin = rank_origin(reference, run, qrels, RANGES)
    assert origin.columns == ("1-2", "3-4", ">4", ABSENT)
    # run ranks 1-2: c (ref 3), f (absent), z (ref 3), x (ref 1)
    assert origin.counts["all"]["1-2"] == {"1-2": 1, "3-4": 2, ">4": 0, ABSENT: 1}
    # run ranks 3-4: a (ref 1), e (ref 5 → deeper than the ranges), w (absent); b is rank 5
    assert origin.counts["all"]["3-4"] == {"1-2": 1, "3-4": 0, ">4": 1, ABSENT: 1}
    assert origin.fraction("all", "1-2", "3-4") == 0.5
    assert origin.fraction("all", "3-4", ">4") == pytest.approx(1 / 3)
    assert origin.subsets() == ["all", "grade=2", "grade=0", "unjudged"]
    assert origin.counts["grade=2"]["1-2"] == {"1-2": 0, "3-4": 2, ">4": 0, ABSENT: 1}
    assert origin.rows("grade=0") == ["3-4"]            # a only; the empty row is left out
    assert origin.matrix("grade=0") == [[1.0, 0.0, 0.0, 0.0]]
    assert origin.counts["unjudged"]["3-4"][ABSENT] == 1  # w
    for subset in origin.subsets():
        for row in origin.matrix(subset):
            assert sum(row) == pytest.approx(1.0)


def test_queries_missing_from_reference_are_left_out_and_counted():
    origin = rank_origin({"q1": _run("a")}, {"q1": _run("a"), "q9": _run("b")}, None, RANGES)
    assert origin.queries == 1
    assert origin.skipped == {"queries_missing_from_reference": 1}
    assert origin.counts["all"]["1-2"][ABSENT] == 0


def test_ranges_must_be_contiguous_from_one():
    assert parse_ranges("1-10,11-20") == (RankRange(1, 10), RankRange(11, 20))
    for bad in ("2-10", "1-10,12-20", "1-10,x", "1-10,20-11", ""):
        with pytest.raises(ConfigError):
            parse_ranges(bad)


def test_rerank_orders_by_ranker_score():
    class Count:
        name = "count"
        fingerprint = "count"

        def score(self, pairs):
            import numpy as np

            return np.array([float(d.count(q)) for q, d in pairs])

    docs = {"a": "x", "b": "x x x", "c": "x x", "d": "no text match"}
    out = rerank({"q": _run("a", "b", "c", "d", "zz")}, {"q": "x"}, docs, Count(), depth=3)
    assert [d for d, _ in out["q"]] == ["b", "c", "a"]


def test_dl19_tas_b_against_bm25(dl19):
    from abnirml.data.trec import read_qrels, read_run

    reference = read_run(dl19 / "runs" / "bm25.run")
    run = read_run(dl19 / "runs" / "tas-b.run")
    qrels = read_qrels(dl19 / "qrels.txt")
    origin = rank_origin(reference, run, qrels)
    assert origin.queries == len(run)
    for subset in origin.subsets():
        for row in origin.matrix(subset):
            assert sum(row) == pytest.approx(1.0)
    # both runs hold 100 documents per query: nothing at run ranks beyond 100
    assert origin.rows("all") == ["1-10", "11-100"]
    total_top10 = sum(origin.counts["all"]["1-10"].values())
    assert total_top10 == 10 * len(run)
    # recount one cell independently: tas-b top-10 documents that bm25 also ranked top 10
    expected = sum(len({d for d, _ in run[q][:10]} & {d for d, _ in reference[q][:10]})
                   for q in run)
    assert origin.counts["all"]["1-10"]["1-10"] == expected


def test_cli_writes_csv_and_heatmaps(dl19, tmp_path):
    from abnirml.cli import main

    out = tmp_path / "ro"
    code = main(["rank-origin", str(dl19 / "runs" / "bm25.run"), str(dl19 / "runs" / "tas-b.run"),
                 "--qrels", str(dl19 / "qrels.txt"), "--ranges", "1-10,11-50,51-100",
                 "--out", str(out)])
    assert code == 0
    with (out / "rank_origin.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert set(rows[0]) >= {"subset", "run_range", "reference_range", "fraction"}
    sums: dict[tuple[str, str], float] = {}
    for row in rows:
        key = (row["subset"], row["run_range"])
        sums[key] = sums.get(key, 0.0) + float(row["fraction"])
    assert all(s == pytest.approx(1.0, abs=1e-5) for s in sums.values())
    assert {r["reference_range"] for r in rows} == {"1-10", "11-50", "51-100", ">100", "absent"}
    assert (out / "rank_origin_all.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "rank_origin_grade-3.png").is_file()
    assert read_csv(out / "rank_origin.csv")["all"]["1-10"]["absent"] > 0


def test_cli_rerank_on_demo(tmp_path, demo_collection):
    from abnirml.cli import main
    from abnirml.data.trec import read_run, write_run

    first = {qid: _run(*sorted(demo_collection.docs)[:30]) for qid in demo_collection.queries}
    write_run(tmp_path / "first.run", first, "first")
    code = main(["rank-origin", str(tmp_path / "first.run"), "--rerank", "bm25",
                 "--collection", "demo", "--ranges", "1-10,11-30", "--out", str(tmp_path / "o")])
    assert code == 0
    reranked = read_run(tmp_path / "o" / "reranked.run")
    assert set(reranked) == set(first)
    assert all(len(v) == 30 for v in reranked.values())
    fractions = read_csv(tmp_path / "o" / "rank_origin.csv")["all"]
    assert fractions["1-10"]["absent"] == 0.0
    assert fractions["1-10"][">30"] == 0.0


def test_cli_rerank_takes_the_shared_session_flags(tmp_path, demo_collection, capsys):
    """rank-origin builds its session through the Workspace: --cache names the score cache
    it fills, --stopwords changes BM25's scores, a bad --batch-size is refused like in run."""
    from abnirml.cli import main
    from abnirml.data.trec import read_run, write_run

    first = {qid: _run(*sorted(demo_collection.docs)[:30]) for qid in demo_collection.queries}
    write_run(tmp_path / "first.run", first, "first")
    base = ["rank-origin", str(tmp_path / "first.run"), "--rerank", "bm25", "--quiet",
            "--ranges", "1-10,11-30"]
    cache = tmp_path / "scores.sqlite"
    assert main([*base, "--cache", str(cache), "--out", str(tmp_path / "a")]) == 0
    assert cache.is_file() and cache.stat().st_size > 0
    assert main([*base, "--no-cache", "--stopwords", "none", "--out", str(tmp_path / "b")]) == 0
    with_stops = read_run(tmp_path / "a" / "reranked.run")
    without = read_run(tmp_path / "b" / "reranked.run")
    assert with_stops.keys() == without.keys() and with_stops != without
    capsys.readouterr()
    assert main([*base, "--no-cache", "--batch-size", "0", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "batch size must be ≥ 1" in err[0]


def test_cli_refuses_runs_that_share_no_query(tmp_path, capsys):
    """A run of another collection (no query id in common with the reference) is a plausible
    mistake: one line, exit 2, and no empty rank_origin.csv left behind as if it were a
    result."""
    from abnirml.cli import main
    from abnirml.data.trec import write_run

    write_run(tmp_path / "ref.run", {"q1": _run("a", "b"), "q2": _run("c", "d")}, "ref")
    write_run(tmp_path / "other.run", {"x1": _run("a", "b")}, "other")
    out = tmp_path / "ro"
    code = main(["rank-origin", str(tmp_path / "ref.run"), str(tmp_path / "other.run"),
                 "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "share no query" in err[0] and "other.run" in err[0]
    assert not out.exists()


def test_cli_refuses_qrels_that_judge_none_of_the_queries(tmp_path, capsys):
    """Qrels of another collection would silently turn every document 'unjudged'."""
    from abnirml.cli import main
    from abnirml.data.trec import write_run

    write_run(tmp_path / "ref.run", {"q1": _run("a", "b")}, "ref")
    write_run(tmp_path / "run.run", {"q1": _run("b", "a")}, "run")
    (tmp_path / "qrels.txt").write_text("x9 0 a 2\n", encoding="utf-8")
    out = tmp_path / "ro"
    code = main(["rank-origin", str(tmp_path / "ref.run"), str(tmp_path / "run.run"),
                 "--qrels", str(tmp_path / "qrels.txt"), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "qrels.txt" in err[0] and "judge none" in err[0]
    assert not out.exists()
