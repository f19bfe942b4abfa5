"""The LightGBM ranker's features by name, and what each makes it sensitive to.

Kept apart from :mod:`.features` (which computes them) and free of imports, so the family
record in :mod:`abnirml.rankers.built_in` can describe the model — and the generated ranker
reference list its features and the invariances that follow — without loading NumPy or the
collection statistics. An invariance probe that moves lgbm is then read as the model's
design, not a bug: its features see query word order and stopwords on purpose.
"""

from __future__ import annotations

#: (name, meaning), in the column order of the feature matrix
FEATURE_NOTES: tuple[tuple[str, str], ...] = (
    ("bm25", "Terrier BM25"),
    ("ql", "Dirichlet query likelihood (μ = 2500)"),
    ("tfidf", "Terrier TF-IDF"),
    ("doc_length", "analysed document terms"),
    ("query_length", "analysed query terms"),
    ("matched_terms", "distinct query terms present in the document"),
    ("matched_fraction", "… as a fraction of distinct query terms"),
    ("sum_tf", "occurrences of query terms in the document"),
    ("overlap", "sum_tf / doc_length"),
    ("sum_idf_matched", "Σ idf over matched query terms"),
    ("max_idf_matched", "the largest idf of a matched query term"),
    ("min_idf_query", "the least specific query term (matched or not)"),
    ("raw_overlap", "fraction of raw query words (unstemmed, stopwords kept) present"),
    ("first_match", "position of the first query-term occurrence / doc_length (1: none)"),
    ("bigram_matches", "fraction of adjacent query-term pairs adjacent in the document"),
    ("char_length", "document characters"),
)

FEATURES: tuple[str, ...] = tuple(name for name, _ in FEATURE_NOTES)

#: (invariance a probe tests, the feature that breaks it and why)
NOT_INVARIANT: tuple[tuple[str, str], ...] = (
    ("word order", "bigram_matches reads the query's adjacent term pairs"),
    ("stopword removal", "raw_overlap counts the query's words with stopwords kept"),
)


def description() -> str:
    """The family's description: the model, its features, and the invariances it lacks."""
    moved = " nor to ".join(f"{what} ({why})" for what, why in NOT_INVARIANT)
    return (f"LightGBM LambdaMART over {len(FEATURES)} text features (or loaded): "
            + ", ".join(FEATURES)
            + f". By design it is not invariant to {moved}, so the query-variation probes "
              "that reorder words or drop stopwords move it; every other feature reads the "
              "query's analysed (stopped, stemmed) terms in no order")
