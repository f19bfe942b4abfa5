"""ir_axioms' retrieval axioms as probes: exact preferences on hand-made pools, BM25's known
answers, and (slow, with ir_axioms installed) agreement with ir_axioms 1.2.5 on DL19."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.data.collection import Collection
from abnirml.evaluation.execution.experiment import ExperimentConfig, run_experiment
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.probes.axioms import ir_axioms_mining as im
from abnirml.probes.axioms.ir_axioms_extra import IraxAxiomProbe, ir_axioms_probes
from abnirml.probes.base import ProbeContext
from abnirml.probes.probe_registry import select_probes
from abnirml.rankers.registry import RankerEnv, build_ranker
from abnirml.rankers.support.cache import ScoreCache
from abnirml.text.analyzer import Analyzer

NAMES = ["axiom:ir-tfc1", "axiom:tfc3", "axiom:ir-m-tdc", "axiom:len-m-tdc", "axiom:ir-lnc1",
         "axiom:tf-lnc", "axiom:lb1", "axiom:prox1",
         "axiom:prox2", "axiom:prox3", "axiom:prox4", "axiom:prox5", "axiom:reg",
         "axiom:anti-reg", "axiom:aspect-reg", "axiom:and", "axiom:len-and", "axiom:m-and",
         "axiom:len-m-and", "axiom:div", "axiom:len-div", "axiom:ir-stmc1", "axiom:ir-stmc2",
         "axiom:asl", "axiom:orig", "axiom:oracle"]


def view(docs: list[list[int]], query: list[int], idf=None, **kw) -> im.IraxQuery:
    """An IraxQuery from term-id sequences (query terms are the distinct ids of ``query``)."""
    terms = np.array(list(dict.fromkeys(query)), dtype=np.int64)
    counts = np.array([[seq.count(int(t)) for t in terms] for seq in docs], dtype=np.int64)
    return im.IraxQuery(
        counts=counts, lengths=np.array([len(s) for s in docs]),
        vocabulary=np.array([len(set(s)) for s in docs]),
        sequences=[np.array(s, dtype=np.int64) for s in docs],
        query_sequence=np.array(query, dtype=np.int64), term_ids=terms,
        idf=np.ones(terms.size) if idf is None else np.asarray(idf, dtype=float),
        qtf=np.array([query.count(int(t)) for t in terms]), **kw)


# ids: 1, 2 = query terms; 7, 8, 9 = other words
def test_proximity_axioms_exact():
    docs = [[1, 2, 7, 7, 7],        # adjacent query terms, phrase at 0
            [1, 7, 7, 7, 2],        # far apart
            [7, 1, 2, 7, 7],        # adjacent, phrase at 1
            [1, 7, 7, 7, 7]]        # only one query term: no proximity preference
    q = view(docs, [1, 2])
    p1 = im.prox1(q)
    assert p1[0, 1] == 1 and p1[1, 0] == -1 and p1[0, 2] == 0 and p1[2, 1] == 1
    assert (p1[3] == 0).all() and (p1[:, 3] == 0).all()
    p2 = im.prox2(q)                                   # first positions: 1, 4, 3
    assert p2[0, 1] == 1 and p2[0, 2] == 1 and p2[2, 1] == 1
    p3 = im.prox3(q)                                   # phrase positions: 0, inf, 1
    assert p3[0, 2] == 1 and p3[2, 1] == 1 and p3[0, 1] == 1
    p4 = im.prox4(q)                                   # non-query terms inside groups: 0, 3, 0
    assert p4[0, 1] == 1 and p4[0, 2] == 0
    p5 = im.prox5(q)                                   # average spans: 1, 4, 1
    assert p5[0, 1] == 1 and p5[2, 1] == 1 and p5[0, 2] == 0


def test_ir_tfc1_sums_relative_frequencies_with_query_repeats_under_len():
    # lengths 10, 10, 10, 30; query [1, 1, 2]: term 1 counts twice
    docs = [[1, 1, 2] + [7] * 7,          # tf sum 2·0.2 + 0.1 = 0.5
            [1, 2, 2] + [7] * 7,          # 2·0.1 + 0.2 = 0.4: not within 10 % of 0.5
            [1, 1, 2, 2] + [7] * 6,       # 2·0.2 + 0.2 = 0.6
            [1] * 15 + [7] * 15]          # 2·0.5 = 1.0, but LEN fails against all
    q = view(docs, [1, 1, 2])
    p = im.tfc1(q)
    assert p[0, 1] == 1 and p[1, 0] == -1 and p[2, 0] == 1 and p[2, 1] == 1
    assert (p[3] == 0).all() and (p[:, 3] == 0).all()
    # equal lengths, sums 2·0.2 + 0.1 = 0.50 and 2·0.2 + 0.08 = 0.48: within 10 %, no
    # preference; 0.50 against 2·0.2 + 0.04 = 0.44 is beyond it, 0.48 against 0.44 not
    base = [1] * 10 + [2] * 5 + [7] * 35
    near = [1] * 10 + [2] * 4 + [7] * 36
    far = [1] * 10 + [2] * 2 + [7] * 38
    margins = im.tfc1(view([base, near, far], [1, 1, 2]))
    assert margins[0, 1] == 0 and margins[0, 2] == 1 and margins[1, 2] == 0


def test_ir_lnc1_prefers_the_shorter_of_documents_with_alike_relative_frequencies():
    docs = [[1, 2] + [7] * 8,             # tf 0.1, 0.1, length 10
            [1, 2] + [7] * 9,             # tf 0.0909…: within 10 % of 0.1, length 11
            [1, 1, 2] + [7] * 7,          # tf 0.2 for term 1: not alike
            [7] * 4, [8] * 6]             # no query term: alike (both 0), lengths 4 and 6
    p = im.lnc1(view(docs, [1, 2]))
    assert p[0, 1] == 1 and p[1, 0] == -1
    assert p[0, 2] == 0 and p[2, 1] == 0
    assert p[3, 4] == 1 and p[3, 0] == 0


def test_orig_follows_the_run_and_oracle_the_grades():
    docs = [[1], [1], [1], [1]]
    q = view(docs, [1], scores=np.array([3.0, 1.0, 3.0, np.nan]),
             grades=np.array([2.0, 0.0, np.nan, 1.0]))
    orig = im.orig(q)
    assert orig[0, 1] == 1 and orig[1, 0] == -1 and orig[0, 2] == 0      # tie: none
    assert (orig[3] == 0).all() and (orig[:, 3] == 0).all()             # not scored
    oracle = im.oracle(q)
    assert oracle[0, 1] == 1 and oracle[3, 1] == 1 and oracle[0, 3] == 1
    assert (oracle[2] == 0).all() and (oracle[:, 2] == 0).all()         # unjudged


def test_asl_prefers_readable_sentence_lengths_under_len():
    q = view([[7] * 30, [7] * 30, [7] * 30, [7] * 100], [1],
             sentence_lengths=np.array([15.0, 30.0, np.nan, 15.0]))
    p = im.asl(q)
    assert p[0, 1] == 1 and p[1, 0] == -1 and p[0, 2] == 1 and p[1, 2] == 0
    assert p[3, 1] == 0                                  # lengths 100 vs 30: LEN fails


def test_asl_counts_analysed_terms_per_sentence(demo_collection):
    from abnirml.probes.axioms.features import QueryFeatures, TextStore
    from abnirml.probes.axioms.ir_axioms_extra import _with_sentence_lengths

    store = TextStore(Analyzer())
    text = ("Apples grow on trees. Bananas grow in bunches near the river.")
    features = QueryFeatures("q", "apples", ["d"], [text], [], np.zeros(0, dtype=np.int64),
                             np.zeros(0), np.zeros((1, 0)), np.array([8]), np.array([10]),
                             np.array([np.nan]), np.array([np.inf]))

    class Data:
        pass

    data = Data()
    data.store = store
    query = view([[7] * 8], [1])
    # "apples grow trees" (on: stopword) = 3; "bananas grow bunches near river" = 5 → 4.0
    assert _with_sentence_lengths(query, features, data).sentence_lengths.tolist() == [4.0]


def test_prox4_prefers_more_tight_groups_on_equal_gaps():
    q = view([[1, 2, 7, 1, 2], [1, 2, 7, 7, 7]], [1, 2])
    assert im.prox4(q)[0, 1] == 1


def test_term_axioms_exact():
    docs = [[1, 2, 7, 7],          # both terms once
            [1, 1, 7, 7],          # term 1 twice, no term 2 (the combined count)
            [1, 7, 7, 7],
            [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]]
    q = view(docs, [1, 2])
    tfc3 = im.tfc3(q)
    assert tfc3[0, 1] == 1 and tfc3[1, 0] == -1 and tfc3[0, 2] == 0
    assert im.tfc3(view(docs, [1, 2], idf=[1.0, 2.0]))[0, 1] == 0   # idf not within 10 %
    assert im.m_and(q)[0, 1] == 1 and im.m_and(q)[1, 2] == 0
    assert im.and_(q)[0, 1] == 1 and im.and_(q)[1, 3] == 0
    assert im.len_and(q)[0, 3] == 0 and im.and_(q)[0, 3] == 1        # lengths 4 vs 12
    div = im.div(q)                       # Jaccard: 2/4, 1/3, 1/3, 0 → prefer less overlap
    assert div[1, 0] == 1 and div[3, 1] == 1 and div[1, 2] == 0
    lnc = im.tf_lnc(q)                    # docs 1 and 2: same number of non-"1" terms? 2 vs 3
    assert lnc[1, 2] == 0
    same_rest = view([[1, 1, 7, 7], [1, 7, 7]], [1])
    assert im.tf_lnc(same_rest)[0, 1] == 1
    aspect = im.aspect_reg(q)
    assert aspect[0, 3] == 1 and aspect[0, 1] == 0
    assert (im.aspect_reg(view(docs, [1, 2], idf=[1.0, 3.0])) == 0).all()


def test_modified_tdc_prefers_more_of_the_rarer_term():
    docs = [[1, 1, 2, 7], [1, 2, 2, 7], [1, 1, 2, 2, 7, 7, 7, 7]]
    q = view(docs, [1, 2], idf=[3.0, 1.0])             # term 1 is rarer
    assert im.m_tdc(q)[0, 1] == 1 and im.m_tdc(q)[1, 0] == -1
    assert im.len_m_tdc(q)[0, 1] == 1
    # relative frequencies differ in total (3/4 vs 4/8): M-TDC does not apply
    assert im.m_tdc(q)[0, 2] == 0


def test_reg_uses_the_least_similar_query_term():
    sim = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.2], [0.1, 0.2, 1.0]])
    docs = [[1, 2, 3, 3, 7], [1, 2, 3, 7, 7], [1, 1, 2, 3, 7]]
    q = view(docs, [1, 2, 3], similarity=sim)
    assert im.reg(q)[0, 1] == 1 and im.reg(q)[2, 1] == 0    # term 3 is the odd one out
    assert im.anti_reg(q)[2, 1] == 0 and im.anti_reg(q)[0, 1] == 0
    assert im.anti_reg(view([[1, 2, 7], [7, 7, 3]], [1, 2, 3], similarity=sim))[0, 1] == 1


def test_lb1_needs_close_scores():
    docs = [[1, 7], [2, 7], [1, 2]]
    q = view(docs, [1, 2], scores=np.array([1.0, 1.05, 5.0]))
    lb1 = im.lb1(q)
    assert lb1[0, 1] == 0                # each holds a term the other lacks
    assert lb1[2, 0] == 0                # scores far apart
    close = view([[1, 2], [1, 7]], [1, 2], scores=np.array([1.0, 1.02]))
    assert im.lb1(close)[0, 1] == 1
    with pytest.raises(ValueError):
        im.lb1(view(docs, [1, 2]))


def test_ir_stmc2_compares_frequency_ratios_with_length_ratios():
    # query term 1; 7 is very similar to it (0.9), 8 barely (0.1); doc 3 has no other term
    docs = [[1, 8], [7, 8], [7, 7, 8, 9], [1, 1]]
    none = np.zeros(0, dtype=np.int64)
    pairs = [(0.1, np.array([0]), np.array([8])), (0.9, np.array([0]), np.array([7])),
             (0.9, np.array([0]), np.array([7])), (-np.inf, none, none)]
    prefs = im.stmc2(view(docs, [1], max_similarity_pairs=pairs))
    # doc 1 holds the max pair (1, 7): tf(7, d1) / tf(1, d0) = 1 = |d1| / |d0|
    assert prefs[0, 1] == 1 and prefs[1, 0] == -1
    # doc 2 is twice as long but uses 7 as often as doc 0 uses 1, relatively: no preference
    assert prefs[0, 2] == 0 and prefs[2, 0] == 0
    # doc 1 and 2 tie on the pair, but neither holds the query term: ratios undefined
    assert prefs[1, 2] == 0 and prefs[2, 1] == 0
    # doc 3's side has no pair; doc 0's pair (1, 8): 0.5 / 1 is not |d0| / |d3| = 1
    assert prefs[3, 0] == 0 and prefs[0, 3] == 0
    assert (np.diag(prefs) == 0).all()
    # equal lengths: d1 must use 7 within 20 % as often as d0 uses 1 (10 times)
    def equal_lengths(sevens: int) -> int:
        d0, d1 = [1] * 10 + [8], [7] * sevens + [9] * (11 - sevens)
        found = [(0.1, np.array([0]), np.array([8])), (0.9, np.array([0]), np.array([7]))]
        return int(im.stmc2(view([d0, d1], [1], max_similarity_pairs=found))[0, 1])

    assert equal_lengths(9) == 1 and equal_lengths(11) == 1
    assert equal_lengths(7) == 0 and equal_lengths(3) == 0
    with pytest.raises(ValueError):
        im.stmc2(view(docs, [1]))


def lb1_instances(scores: dict[str, float] | None) -> set[tuple[str, str]]:
    """``axiom:lb1``'s (preferred, other) docno pairs on a three-document pool whose
    candidate run gave ``scores`` (None: a context that knows no run scores)."""
    from abnirml.probes.axioms.features import axiom_data
    from abnirml.probes.axioms.options import AxiomOptions

    docs = {"a": "apple x", "b": "x y", "c": "apple banana"}
    collection = Collection(name="lb1", queries={"q1": "apple banana"}, docs=docs,
                            qrels={"q1": {"a": 1}})
    ctx = ProbeContext(collection=collection, analyzer=Analyzer(stopwords="none", stem=False),
                       candidates=lambda: {"q1": list(docs)},
                       candidate_scores=None if scores is None else lambda: {"q1": scores})
    data = axiom_data(ctx, AxiomOptions())
    (features,) = data.queries
    rows, columns = np.nonzero(IraxAxiomProbe("lb1").preferences(features, data, ctx) > 0)
    return {(features.docnos[i], features.docnos[j])
            for i, j in zip(rows.tolist(), columns.tolist(), strict=True)}


def test_lb1_probe_reads_the_candidate_runs_own_scores():
    # a holds apple, b nothing, c both: with all scores within 10 % every holder wins
    assert lb1_instances({"a": 2.0, "b": 2.1, "c": 2.05}) == {("a", "b"), ("c", "b"),
                                                              ("c", "a")}
    # c scored far higher: only a and b are close enough to compare
    assert lb1_instances({"a": 2.0, "b": 2.1, "c": 9.0}) == {("a", "b")}
    # a document the run did not score (a judged pool) is compared with nothing
    assert lb1_instances({"a": 2.0, "c": 2.05}) == {("c", "a")}
    assert lb1_instances(None) == set()


def test_candidates_keep_the_runs_scores(demo_collection, tmp_path):
    from abnirml.evaluation.execution.candidates import resolve_candidates

    qid = sorted(demo_collection.queries)[0]
    docnos = sorted(demo_collection.docs)[:3]
    lines = [f"{qid} Q0 {d} {rank + 1} {10.5 - rank} run" for rank, d in enumerate(docnos)]
    lines.append(f"{qid} Q0 no-such-doc 4 1.25 run")
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n")
    candidates = resolve_candidates(demo_collection, str(tmp_path / "run.txt"), 10)
    assert candidates.ranking[qid] == docnos
    assert candidates.scores[qid] == {docnos[0]: 10.5, docnos[1]: 9.5, docnos[2]: 8.5}
    assert candidates.skipped == {"candidates_without_text": 1}


def test_the_probes_are_registered_with_public_names():
    names = [p.name for p in ir_axioms_probes()]
    assert names == NAMES
    assert [p.name for p in select_probes(["axiom:prox*"])] == NAMES[7:12]
    assert all(name in [p.name for p in select_probes(["axiom"])] for name in NAMES)


# --------------------------------------------------------------------------- known answers

PERMUTED = {                 # every document is a permutation of the same words
    "a": "apple banana w x y z",
    "b": "apple w x y z banana",
    "c": "w apple x banana y z",
    "d": "z y x w banana apple",
    "e": "banana z apple y x w",
}


def permuted_context() -> ProbeContext:
    collection = Collection(name="permuted", queries={"q1": "apple banana"},
                            docs=dict(PERMUTED), qrels={"q1": {"a": 1}})
    ranking = {"q1": list(PERMUTED)}
    return ProbeContext(collection=collection, analyzer=Analyzer(stopwords="none", stem=False),
                        candidates=lambda: ranking)


def test_bm25_ties_every_proximity_instance_since_it_ignores_positions():
    ctx = permuted_context()
    probes = [IraxAxiomProbe(a) for a in ("prox1", "prox2", "prox3", "prox4", "prox5")]
    bm25 = build_ranker("bm25", RankerEnv(collection=ctx.collection, analyzer=ctx.analyzer))
    with ScoreCache(None) as cache:
        result = run_experiment(probes, [bm25], ctx, Scorer(cache, progress=False),
                                ExperimentConfig(delta_all=0.0))
    records = {r["probe"]: r for r in result.records if r["subset"] == "all"}
    for name in (p.name for p in probes):
        record = records[name]
        assert record["n"] > 0, name
        assert record["ties"] == record["n"] and record["satisfied"] == 0, name
        assert record["score"] == 0.0


def test_bm25_satisfies_m_and_on_the_demo_where_lengths_match(demo_collection):
    """BM25 sums positive per-term weights: holding more distinct query terms at about the
    same length (LEN-M-AND) almost always scores higher."""
    from abnirml.evaluation.execution.candidates import resolve_candidates

    env = RankerEnv(collection=demo_collection)
    ranking = resolve_candidates(demo_collection, None, 30).ranking
    ctx = ProbeContext(collection=demo_collection, analyzer=env.analyzer, ranker_env=env,
                       candidates=lambda: ranking)
    with ScoreCache(None) as cache:
        result = run_experiment([IraxAxiomProbe("len-m-and")], [build_ranker("bm25", env)],
                                ctx, Scorer(cache, progress=False),
                                ExperimentConfig(delta_all=0.0))
    (record,) = [r for r in result.records if r["subset"] == "all"]
    assert record["n"] > 50
    assert record["satisfied"] / record["n"] > 0.8


# --------------------------------------------------------------------------- ir_axioms itself


@pytest.mark.slow
@pytest.mark.shared
def test_agreement_with_ir_axioms_on_dl19(dl19):
    from benchmarks import ir_axioms_agreement as bench
    from benchmarks.common import ir_axioms_python

    python = ir_axioms_python()
    if python is None:
        pytest.skip("ir_axioms 1.2.5 is not importable (make .venv-irax/.installed)")
    context = bench.agreement_context(dl19, depth=25, queries=4)
    payload, ours = bench.abnirml_side(context)
    rows = bench.agreement(ours, bench.theirs(python, payload), bench.length_masks(payload))
    for axiom, row in rows.items():
        value = row.get("agreement_len", row["agreement"])
        assert value >= 0.99, (axiom, row)
        assert row["ir_axioms_nonzero"] > 0 or axiom == "aspect-reg", (axiom, row)
