"""Conventions the probes follow to match the papers: mask tokens in lexical analysis,
relevance conventions, Câmara agreement ties, non-relevant donors and the δ calibration depth."""

from __future__ import annotations

import numpy as np

from abnirml.data.collection import Collection
from abnirml.probes.manipulation import edits as m
from abnirml.text.analyzer import Analyzer
from tests._contexts import probe_context


def test_mask_token_is_not_a_lexical_term() -> None:
    analyzer = Analyzer()
    masked = "[MASK] cat [MASK] [MASK] dogs"
    assert analyzer.analyze(masked) == ["cat", "dog"]
    # the word "mask" itself is still a term; only the token is dropped
    assert analyzer.analyze("a mask for the cat") == ["mask", "cat"]
    assert Analyzer(mask_token=None).analyze(masked) == ["mask", "cat", "mask", "mask", "dog"]
    assert Analyzer().signature != Analyzer(mask_token=None).signature   # cache keys differ


def test_only_query_document_has_only_query_terms_for_bm25() -> None:
    from abnirml.data.stats import CollectionStats
    from abnirml.rankers.families.lexical import BM25

    docs = {"d1": "the cat sat on the mat with another cat", "d2": "dogs bark at night"}
    analyzer = Analyzer()
    stats = CollectionStats.build(list(docs.values()), analyzer)
    context = m.ManipulationContext(stem=analyzer.stem)
    only = m.only_query("cat", docs["d1"], context, np.random.default_rng(0))
    assert only is not None and "[MASK]" in only
    # Only-Q keeps two "cat"s: the analysed document is exactly those two terms
    assert analyzer.analyze(only) == ["cat", "cat"]
    bm25 = BM25(stats)
    short = bm25.score([("cat", "cat cat")])[0]
    assert bm25.score([("cat", only)])[0] == short


def _collection() -> Collection:
    return Collection(name="c", queries={"q": "cat food"},
                      docs={"a": "cat food", "b": "dog"}, qrels={"q": {"a": 2, "b": 0}})


def _donor_context(mode: str | None, grade: int | None = None):

    collection = Collection(
        name="donors", queries={"q1": "cat food", "q2": "river boats"},
        docs={"a": "Cats love fish.", "b": "A cat ate the food. Dogs bark.",
              "c": "Bread is baked daily.", "d": "Boats sail the river. Fish swim.",
              "e": "Mountains are tall."},
        qrels={"q1": {"a": 2, "b": 0, "c": 0}, "q2": {"d": 2, "e": 0}})
    options = {} if mode is None else {"tmp.nonrel_donor": mode}
    if grade is not None:
        options["tmp.nonrel_grade"] = grade
    return probe_context(collection=collection, seed=0, options=options)


def _donor_rows(mode: str | None, grade: int | None = None):
    from abnirml.probes.base import build_table
    from abnirml.probes.manipulation.probes import SPECS, DonorProbe

    spec = next(s for s in SPECS if s.key == "add-nonrel-sentence")
    table = build_table(DonorProbe(spec), _donor_context(mode, grade))
    appended = {}
    for i in range(len(table)):
        sample = table.sample(i)
        appended[(sample.meta["qid"], sample.meta["docno"])] = sample.doc1[len(sample.doc2):]
    return appended, table.extra["record"]


def test_nonrel_donor_default_is_same_query_and_reports_query_term_rate() -> None:
    appended, record = _donor_rows(None)
    assert record["nonrel_donor"] == "same-query"
    # q1's donors are b and c (grade 0); q2's only donor is e, so e itself takes its
    # sentence from the collection-wide grade-0 pool (b, c)
    q1 = ["A cat ate the food.", "Dogs bark.", "Bread is baked daily."]
    for (qid, docno), sentence in appended.items():
        donors = q1 if qid == "q1" or docno == "e" else ["Mountains are tall."]
        assert sentence.strip() in donors, (qid, docno, sentence)
    hits = sum("cat" in s or "food" in s for s in appended.values())
    assert record["donor_query_term_rate"] == round(hits / len(appended), 6)


def test_nonrel_grade_picks_the_donors_grade() -> None:
    # grade 2 donors: a for q1, d for q2 (ANTIQUE-style scales have no grade 0); a and d
    # are their query's only donors, so each takes the other's sentence (never its own)
    appended, _ = _donor_rows(None, grade=2)
    from_a, from_d = ["Cats love fish."], ["Boats sail the river.", "Fish swim."]
    for (qid, docno), sentence in appended.items():
        donors = {"a": from_d, "d": from_a}.get(docno, from_a if qid == "q1" else from_d)
        assert sentence.strip() in donors, (qid, docno, sentence)
    assert set(appended) == {("q1", "a"), ("q1", "b"), ("q1", "c"), ("q2", "d"), ("q2", "e")}


def test_nonrel_donor_other_query_and_no_query_terms() -> None:
    appended, record = _donor_rows("other-query")
    assert record["nonrel_donor"] == "other-query"
    for (qid, _), sentence in appended.items():
        # never a document judged for the same query
        mine = {"q1": "A cat ate the food. Dogs bark. Bread is baked daily. Cats love fish.",
                "q2": "Mountains are tall. Boats sail the river. Fish swim."}[qid]
        assert sentence.strip() not in mine
    appended, record = _donor_rows("no-query-terms")
    assert record["donor_query_term_rate"] == 0.0
    for (qid, _), sentence in appended.items():
        if qid == "q1":      # b holds "cat" and "food": only c qualifies
            assert sentence.strip() == "Bread is baked daily."


def test_nonrel_donor_bad_value_is_one_clear_error() -> None:
    import pytest

    from abnirml.errors import ConfigError

    with pytest.raises(ConfigError, match="nonrel_donor must be one of same-query"):
        _donor_rows("elsewhere")


def test_calibration_depth_is_stated_and_changes_delta(tmp_path) -> None:
    import json

    from abnirml.pipeline import RunConfig, SessionSettings, run

    deltas = {}
    for depth in (5, 100):
        out = tmp_path / f"d{depth}"
        run(RunConfig(collection="demo", rankers=["bm25"], probes=["mmp:tf:length"], out=str(out),
                      effectiveness=False,
                      session=SessionSettings(cache=None, progress=False, candidate_depth=depth)))
        info = json.loads((out / "run.json").read_text(encoding="utf-8"))
        assert info["delta_calibration"]["candidate_depth"] == depth
        assert f"depth {depth}" in info["delta_calibration"]["note"]
        assert f"top {depth}" in info["delta_calibration"]["candidates"]
        deltas[depth] = info["rankers"][0]["delta"]
    assert deltas[5] != deltas[100]      # a shallower candidate set calibrates another δ


def test_dl19_same_query_donors_hold_query_terms_and_flip_bm25(dl19) -> None:
    # On DL19 most same-query grade-0 donors share a term with the query, which
    # makes BM25 prefer the "non-relevant" addition; donors without query terms restore the
    # paper's negative sign.
    from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run

    scores = {}
    for mode in ("same-query", "no-query-terms"):
        output = run(RunConfig(collection=str(dl19), rankers=["bm25"],
                               probes=["tmp:add-nonrel-sentence"], effectiveness=False,
                               options={"tmp.nonrel_donor": mode},
                               session=SessionSettings(cache=None, progress=False),
                               # the sign of the effect, read off 200 resamples of
                               # its query-clustered interval (not the test's verdict)
                               statistics=StatisticsSettings(test="ttest", bootstrap=200)))
        record = next(r for r in output.result.records if r["subset"] == "all")
        scores[mode] = record
    assert 0.6 < scores["same-query"]["donor_query_term_rate"] < 0.75
    assert scores["no-query-terms"]["donor_query_term_rate"] == 0.0
    assert scores["same-query"]["score"] > 0
    assert scores["no-query-terms"]["ci_high"] < 0
