"""The LightGBM ranker's features by name, and what each makes it sensitive to.

Kept apart from :mod:`.features` (which computes them) and free of imports, so the family
record in :mod:`abnirml.rankers.built_in` can describe the model — and the generated ranker
reference list its features and the invariances that follow — without loading NumPy or the
collection statistics. An invariance probe that moves lgbm is then read as the model's
design, not a bug: its features see word order and stopwords, in the query and in the
document, on purpose.
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

#: (side, invariance a probe tests, the features that break it, why), for the query side
#: (the qvp probes) and the document side (the tmp probes); a test computes the features
#: under the real edits and checks that exactly these move
NOT_INVARIANT: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("query", "word order", ("bigram_matches",),
     "bigram_matches reads the query's adjacent term pairs"),
    ("query", "stopword removal", ("raw_overlap",),
     "raw_overlap counts the query's words with stopwords kept"),
    ("document", "word order", ("first_match", "bigram_matches"),
     "first_match is where the first query term falls, bigram_matches asks whether the "
     "query's term pairs stand next to each other in the document"),
    ("document", "stopword removal", ("raw_overlap", "char_length"),
     "raw_overlap finds the query's stopwords in the document's raw words, char_length "
     "counts the characters removed"),
)


def not_invariant(side: str) -> tuple[tuple[str, tuple[str, ...], str], ...]:
    """The invariances one side's probes test that the features break (:data:`NOT_INVARIANT`)."""
    return tuple((what, names, why) for where, what, names, why in NOT_INVARIANT
                 if where == side)


def description() -> str:
    """The family's description: the model, its features, and the invariances it lacks."""
    def listed(side: str) -> str:
        return " nor to ".join(f"{what} ({why})" for what, _, why in not_invariant(side))

    return (f"LightGBM LambdaMART over {len(FEATURES)} text features (or loaded): "
            + ", ".join(FEATURES)
            + f". By design it is not invariant, in the query, to {listed('query')}, so the "
              "query-variation probes that reorder words or drop stopwords move it; nor, in "
              f"the document, to {listed('document')}, so the manipulation probes that "
              "shuffle or reverse words or remove stopwords move it too, where BM25 "
              "stays at 0. The other features read analysed (stopped, stemmed) terms in no "
              "order")
