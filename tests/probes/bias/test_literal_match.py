"""Literal match with a synonym source whose answers are fixed: every passage word that is
the query word, used as the same part of speech, takes the query word's synonym; the
passage's other words, and the query word used otherwise, stay.

The real source (WordNet with the context rule) is what ``qvp:synonym`` uses; its choices
on DL19 and their precision in passages are on the ranking-biases page."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.data.collection import Collection
from abnirml.probes.base import build_table
from abnirml.probes.bias import probes as bias
from abnirml.probes.query_variation.synonyms import SynonymOptions
from tests._contexts import probe_context

pytest.importorskip("spacy")

QUERY = "cost of concrete floors"
DOCS = {"d1": "The cost of a concrete floor varies. Floors can cost $2 a foot; the Cost rises.",
        "d2": "Concrete cures slowly.",
        "d3": "Polished floors can cost more."}


def fixed_source(query: str) -> SynonymOptions:
    start = query.find("cost")
    return SynonymOptions((((start, start + 4), "price"),) if start >= 0 else (), 3, 2)


@pytest.fixture
def literal(monkeypatch):
    monkeypatch.setattr(bias, "_synonyms", lambda context: fixed_source)
    collection = Collection("tiny", {"q1": QUERY, "q2": "curing time"}, DOCS,
                            {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d2": 3}})
    return build_table(bias.BiasProbe(bias.BY_KEY["literal-match"]),
                       probe_context(collection))


def test_only_the_query_words_part_of_speech_is_replaced(literal):
    samples = [literal.sample(i) for i in range(len(literal))]
    assert [(s.meta["docno"], s.doc1, s.meta["replaced"]) for s in samples] == [
        ("d1", "The price of a concrete floor varies. Floors can cost $2 a foot; the Price rises.",
         2)]
    assert samples[0].doc2 == DOCS["d1"]
    # d2 lacks the word; d3 uses it only as a verb; q2's query has no synonym
    assert dict(literal.skipped) == {"no-query-word": 2, "no-synonym": 1}
    assert np.isnan(literal.grade).sum() == 0 and literal.grade.tolist() == [2.0]
