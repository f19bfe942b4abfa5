"""BM25 on (query, document) pairs: abnirml vs rank-bm25 vs bm25s, same pairs, one process.

The job: statistics (or an index) over the DL19 passages, then a score for each unique
(query, passage) pair of the DL19 measure-and-match battery. Every contender gets the same
analysed terms (abnirml's tokenizer, stopwords and Porter stemmer), each text analysed once,
so the comparison is about indexing and scoring. Scores are compared where the formulas
agree: Robertson idf log((N−df+.5)/(df+.5)) (natural log in the peers, log2 in Terrier's and
so abnirml's; bm25s also drops the constant (k1+1) factor), queries without repeated terms,
and no negative idf (rank-bm25 floors it).
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from benchmarks.common import print_table, require_dl19, timed


def battery_pairs(collection) -> list[tuple[str, str]]:
    pairs = []
    for qid, docno, _ in collection.judged():
        pairs.append((qid, docno))
    return pairs


def main() -> None:
    dl19 = require_dl19()
    if dl19 is None:
        return
    import bm25s
    import rank_bm25

    from abnirml.data.collection import load_collection
    from abnirml.data.stats import CollectionStats
    from abnirml.rankers.families.lexical import BM25
    from abnirml.text.analyzer import Analyzer

    collection = load_collection(str(dl19))
    docnos = list(collection.docs)
    position = {d: i for i, d in enumerate(docnos)}
    pairs = battery_pairs(collection)
    texts = [(collection.queries[q], collection.docs[d]) for q, d in pairs]

    def ours() -> np.ndarray:
        analyzer = Analyzer()
        stats = CollectionStats.build(collection.doc_texts(), analyzer)
        return BM25(stats).score(texts)

    analyzer = Analyzer()
    query_tokens = {q: list(analyzer.analyze_cached(t)) for q, t in collection.queries.items()}
    by_query: dict[str, list[int]] = defaultdict(list)
    for i, (q, _) in enumerate(pairs):
        by_query[q].append(i)

    def with_tokenization(fn):
        def run():
            fresh = Analyzer()
            tokens = [list(fresh.analyze_unshared(collection.docs[d])) for d in docnos]
            return fn(tokens)
        return run

    def rank_bm25_job(tokens) -> np.ndarray:
        index = rank_bm25.BM25Okapi(tokens, k1=1.2, b=0.75)
        out = np.empty(len(pairs))
        for q, rows in by_query.items():
            ids = [position[pairs[i][1]] for i in rows]
            out[rows] = index.get_batch_scores(query_tokens[q], ids)
        return out

    def bm25s_job(tokens) -> np.ndarray:
        index = bm25s.BM25(k1=1.2, b=0.75, method="robertson", dtype="float64")
        index.index(tokens, show_progress=False)
        out = np.empty(len(pairs))
        for q, rows in by_query.items():
            scores = index.get_scores(query_tokens[q])
            out[rows] = scores[[position[pairs[i][1]] for i in rows]]
        return out

    t_ours, s_ours = timed(ours, repeats=3)
    t_rank, s_rank = timed(with_tokenization(rank_bm25_job), repeats=3)
    t_bm25s, s_bm25s = timed(with_tokenization(bm25s_job), repeats=3)

    stats = CollectionStats.build(collection.doc_texts(), Analyzer())
    comparable = np.array([
        len(set(query_tokens[q])) == len(query_tokens[q])
        and all(stats.df.get(t, 0) < stats.num_docs / 2 for t in query_tokens[q])
        for q, _ in pairs])
    ln2 = math.log(2)
    diff_rank = np.abs(s_ours[comparable] - s_rank[comparable] / ln2).max()
    # bm25s's Robertson term-frequency component omits the (k1 + 1) factor.
    diff_bm25s = np.abs(s_ours[comparable] - s_bm25s[comparable] * (1.2 + 1) / ln2).max()
    n = len(pairs)
    rows = [
        ["abnirml BM25", t_ours, f"{n / t_ours:,.0f}", "1.00", "–"],
        ["rank-bm25 BM25Okapi", t_rank, f"{n / t_rank:,.0f}", f"{t_rank / t_ours:.2f}",
         f"{diff_rank:.2e}"],
        ["bm25s (robertson, float64)", t_bm25s, f"{n / t_bm25s:,.0f}",
         f"{t_bm25s / t_ours:.2f}", f"{diff_bm25s:.2e}"],
    ]
    print_table(f"BM25 on {n:,} DL19 battery pairs incl. statistics/index over "
                f"{len(docnos):,} passages and tokenization (median of 3; "
                f"{int(comparable.sum()):,} pairs comparable)",
                ["contender", "seconds", "pairs/s", "time / abnirml (target > 1)",
                 "max |score diff| (target ≤ 1e-6)"], rows)


if __name__ == "__main__":
    main()
