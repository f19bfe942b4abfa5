"""Measure-and-match characteristics and pairing rules on hand-made documents."""

import numpy as np
import pytest

from abnirml.probes.base import ProbeContext, build_table
from abnirml.probes.family_registry import resolve_options
from abnirml.probes.measure_match import MeasureMatchProbe, all_mmp_probes
from abnirml.text.analyzer import Analyzer
from tests.helpers import make_collection

# Query terms (stemmed, stopped): "appl", "pie".
QUERY = "the apple pie"
DOCS = {
    # docno: text                               length tf(appl, pie) sumtf  grade
    "d1": "apple pie apple crust",            #   4      (2, 1)      3      3
    "d2": "apple pie crust crumbs",           #   4      (1, 1)      2      2
    "d3": "pie pie crust",                    #   3      (0, 2)      2      1
    "d4": "crust crumbs oven heat",           #   4      (0, 0)      0      0
    "d5": "apple crust",                      #   2      (1, 0)      1      2
}
GRADES = {"d1": 3, "d2": 2, "d3": 1, "d4": 0, "d5": 2}


@pytest.fixture()
def context():
    collection = make_collection({"q": QUERY}, DOCS, {"q": GRADES})
    return ProbeContext(collection=collection, analyzer=Analyzer())


def pairs(context, variable, control, **options):
    """The probe's (docno1, docno2) pairs; ``options`` are ``mmp.*`` keys without the family
    (``tolerance={"length": 1}``)."""
    context.settings.update(resolve_options({f"mmp.{k}": v for k, v in options.items()})
                            .settings)
    table = build_table(MeasureMatchProbe(variable, control), context)
    got = set()
    for i in range(len(table)):
        meta = table.meta(i)
        got.add((meta["docno1"], meta["docno2"]))
    return got


def test_eighteen_probes_without_tf_sumtf():
    names = [p.name for p in all_mmp_probes()]
    assert len(names) == 18 == len(set(names))
    assert "mmp:tf:sumtf" not in names and "mmp:sumtf:tf" not in names
    assert "mmp:tf:length" in names and "mmp:length:tf" in names


def test_tf_dominance_requires_ge_everywhere_and_gt_somewhere(context):
    # length control: d1, d2, d4 have length 4. d1 (2,1) ≥ d2 (1,1) ≥ d4 (0,0).
    assert pairs(context, "tf", "length") == {("d1", "d2"), ("d1", "d4"), ("d2", "d4")}


def test_tf_incomparable_vectors_are_not_paired(context):
    # relevance control: d2 (1,1) and d5 (1,0) share grade 2 → d2 dominates d5.
    assert pairs(context, "tf", "relevance") == {("d2", "d5")}
    # d3 (0,2) vs d5 (1,0) would be incomparable; they differ in grade anyway.


def test_length_with_sumtf_control(context):
    # sumtf 2: d2 (len 4) and d3 (len 3) → d2 is longer.
    assert pairs(context, "length", "sumtf") == {("d2", "d3")}


def test_relevance_with_length_control(context):
    assert pairs(context, "relevance", "length") == {("d1", "d2"), ("d1", "d4"), ("d2", "d4")}


def test_overlap_is_compared_exactly(context):
    # overlap: d1 3/4, d2 2/4, d3 2/3, d4 0, d5 1/2 → with length control (4): d1 > d2
    # (d4, without a query term, takes no part in overlap pairs)
    assert pairs(context, "overlap", "length") == {("d1", "d2")}
    # overlap control: d2 (2/4) and d5 (1/2) tie exactly; d2 has the higher sumtf
    assert pairs(context, "sumtf", "overlap") == {("d2", "d5")}


def test_documents_without_query_terms_take_no_part_in_overlap_pairs():
    """ABNIRML leaves overlap-0 documents out of overlap pairs; otherwise any two passages
    without a query term "match" on overlap and Length | Overlap gains pairs that
    Sum-TF | Overlap cannot have (the paper's two rows are the same pairs)."""
    docs = {"a": "crust crumbs", "b": "crust crumbs oven heat", "c": "apple crust",
            "e": "apple pie crust crumbs"}
    grades = {"a": 0, "b": 1, "c": 0, "e": 1}
    ctx = ProbeContext(collection=make_collection({"q": QUERY}, docs, {"q": grades}),
                       analyzer=Analyzer())
    # a and b both have overlap 0: no length or relevance pair between them
    assert pairs(ctx, "length", "overlap") == {("e", "c")}
    assert pairs(ctx, "length", "overlap") == pairs(ctx, "sumtf", "overlap")
    assert pairs(ctx, "relevance", "overlap") == {("e", "c")}
    # as the variable: c (1/2) is not "higher" than the query-less a or b
    assert pairs(ctx, "overlap", "relevance") == set()
    assert pairs(ctx, "length", "overlap", tolerance={"overlap": 1}) == {
        ("e", "c")}


def test_control_tolerance(context):
    # length within 1: d3 (3) pairs with the length-4 documents and d5 (2) with d3
    got = pairs(context, "sumtf", "length", tolerance={"length": 1})
    assert got == {("d1", "d2"), ("d1", "d4"), ("d2", "d4"), ("d3", "d4"), ("d1", "d3"),
                   ("d3", "d5")}


def test_samples_iterator_agrees_with_table(context):
    probe = MeasureMatchProbe("tf", "length")
    table = build_table(probe, context)
    samples = list(probe.samples(context))
    assert len(samples) == len(table)
    assert all(s.query == QUERY for s in samples)
    assert np.isnan(table.grade).all()


def test_judged_documents_without_text_are_counted():
    collection = make_collection({"q": QUERY}, DOCS, {"q": {**GRADES, "gone": 1}})
    collection.skipped["judged_without_text"] = 1
    context = ProbeContext(collection=collection, analyzer=Analyzer())
    table = build_table(MeasureMatchProbe("tf", "length"), context)
    assert table.skipped["missing-text"] == 1
