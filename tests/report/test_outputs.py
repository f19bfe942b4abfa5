"""What a run's report says about the run itself: scoring counts, effectiveness in
ir_measures' names with per-query values, run tags, and names a user mistypes."""

from __future__ import annotations

import csv
import json
from collections import defaultdict

import pytest

from abnirml.cli import main


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    pytest.importorskip("ir_measures")
    from abnirml.pipeline import RunConfig, SessionSettings, run

    out = tmp_path_factory.mktemp("outputs") / "out"
    run(RunConfig(collection="demo", rankers=["bm25", "ql"], probes=["mmp:tf:length"],
                  out=str(out), session=SessionSettings(cache=None, progress=False)))
    return out


def test_scoring_counts_name_totals_over_rankers(small_run):
    counts = json.loads((small_run / "run.json").read_text())["counts"]
    # no cache: every ranker scored every unique pair
    assert counts["scored"] == 2 * counts["unique_pairs"] and counts["from_cache"] == 0
    expected = (f"unique (query, document) pairs: {counts['unique_pairs']:,}, each scored by "
                f"every ranker; scores over 2 rankers: {counts['scored']:,} computed, "
                "0 read from the cache.")
    assert expected in (small_run / "report.md").read_text("utf-8")
    assert expected in (small_run / "report.html").read_text("utf-8")


def test_effectiveness_uses_ir_measures_names_and_writes_per_query_values(small_run):
    info = json.loads((small_run / "run.json").read_text())["effectiveness"]
    with (small_run / "tables" / "effectiveness.csv").open(encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["Ranker", "nDCG@10", "AP(rel=2)", "RR(rel=2)"]
    with (small_run / "tables" / "per-query-effectiveness.csv").open(encoding="utf-8") as handle:
        per_query = list(csv.DictReader(handle))
    assert list(per_query[0]) == ["run", "query_id", "measure", "value"]
    assert {r["run"] for r in per_query} == {"candidates", "bm25", "ql"}
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in per_query:
        values[(row["run"], row["measure"])].append(float(row["value"]))
    # every judged query once per measure, and the means are the table's values
    assert all(len(v) == info["queries"] for v in values.values())
    for ranker in ("bm25", "ql"):
        for measure, mean in info["rankers"][ranker].items():
            got = values[(ranker, measure)]
            assert sum(got) / len(got) == pytest.approx(mean, abs=1e-9)
    for measure, mean in info["candidate_run"].items():
        got = values[("candidates", measure)]
        assert sum(got) / len(got) == pytest.approx(mean, abs=1e-9)


def test_rank_origin_rerank_tags_the_run_with_the_rankers_name(tmp_path, demo_collection):
    from abnirml.data.trec import write_run

    docs = sorted(demo_collection.docs)[:20]
    first = {qid: [(d, float(20 - i)) for i, d in enumerate(docs)]
             for qid in demo_collection.queries}
    write_run(tmp_path / "first.run", first, "first")
    out = tmp_path / "o"
    assert main(["rank-origin", str(tmp_path / "first.run"), "--rerank", "ql",
                 "--ranges", "1-10,11-20", "--out", str(out), "--quiet"]) == 0
    tags = {line.split()[-1] for line in (out / "reranked.run").read_text().splitlines()}
    assert tags == {"ql"}


@pytest.mark.parametrize(("given", "hint"), [("axioms", "(did you mean axiom?)"),
                                             ("MMPs", "(did you mean mmp"),
                                             ("tmp:shufle-word", "tmp:shuffle-words")])
def test_a_mistyped_family_suggests_the_family(given, hint):
    from abnirml.errors import ConfigError
    from abnirml.probes.probe_registry import select_probes

    with pytest.raises(ConfigError) as caught:
        select_probes([given])
    assert hint in str(caught.value)
