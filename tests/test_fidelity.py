"""Fidelity faults of issue #15: mask tokens in lexical analysis, relevance conventions,
Câmara agreement ties, non-relevant donors and the δ calibration depth."""

from __future__ import annotations

import numpy as np

from abnirml.data.collection import Collection
from abnirml.probes import manipulations as m
from abnirml.text.analyzer import Analyzer


def test_mask_token_is_not_a_lexical_term() -> None:
    analyzer = Analyzer()
    masked = "[MASK] cat [MASK] [MASK] dogs"
    assert analyzer.analyze(masked) == ["cat", "dog"]
    # the word "mask" itself is still a term; only the token is dropped
    assert analyzer.analyze("a mask for the cat") == ["mask", "cat"]
    assert Analyzer(mask_token=None).analyze(masked) == ["mask", "cat", "mask", "mask", "dog"]
    assert Analyzer().signature != Analyzer(mask_token=None).signature   # cache keys differ


def test_only_query_document_has_only_query_terms_for_bm25() -> None:
    from abnirml.rankers.lexical import BM25
    from abnirml.rankers.stats import CollectionStats

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
