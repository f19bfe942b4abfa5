"""Probing pairwise preference rankers directly.

A probe sample ⟨q, d1, d2⟩ asks whether a ranker prefers d1 to d2; a pairwise ranker answers
that question itself. Definitions (docs/guide/rankers.md, *Pairwise preference rankers*):

* both orders are asked, p₁₂ = P(d1 ≻ d2) and p₂₁ = P(d2 ≻ d1), and the **symmetrised
  preference** is p = (p₁₂ + 1 − p₂₁) / 2, which cancels a constant bias towards either
  input position;
* the **position-bias rate** is the fraction of samples whose verdict depends on the order:
  p₁₂ and p₂₁ both above 0.5 (the first input wins either way) or both below;
* effect +1 when p > 0.5 + δ, −1 when p < 0.5 − δ (symmetric probes: |p − 0.5| > δ) — the
  engine's statistics applied to the scores (p, 0.5), so significance tests are unchanged;
* δ is calibrated as for pointwise rankers: the median of |p − 0.5| over the adjacent
  candidates (ranks 1–2, 2–3, …, 9–10) of each query's candidate top 10;
* effectiveness: the top ``rerank_depth`` candidates are compared all-pairs and ordered by the
  sum of their symmetrised preferences over the others (duoT5's aggregation); candidates below
  keep the candidate order.

Preferences go through the ordinary score cache: a triple is stored as the pair (q, "len:d1d2"),
an unambiguous encoding of (d1, d2), so the cache key is (fingerprint, q, d1, d2).
Probes whose samples compare more than two documents (TFC2) are not defined for preferences
and get no samples.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from abnirml.evaluation.stats.calibration import TOP, Calibration, fixed
from abnirml.rankers.base import RankerHints, hints
from abnirml.rankers.pairwise import PairwiseRanker, Triple, is_pairwise

if TYPE_CHECKING:
    from abnirml.result_fields import ResultRow

__all__ = [
    "is_pairwise",
    "position_bias",
    "preferences",
    "rerank_run",
    "score_probes",
    "symmetrise",
]


def encode_documents(d1: str, d2: str) -> str:
    return f"{len(d1)}:{d1}{d2}"


def decode_documents(joint: str) -> tuple[str, str]:
    size, _, rest = joint.partition(":")
    n = int(size)
    return rest[:n], rest[n:]


class _StreamedPreferences(Protocol):
    """A pairwise ranker that tokenizes ahead across calls (a token-budget model)."""

    def preference_batches(self, batches: Sequence[Sequence[Triple]]
                           ) -> Iterator[np.ndarray]: ...


class PreferenceAsPairs:
    """A pairwise ranker seen by the :class:`~abnirml.evaluation.execution.scoring.Scorer` as a
    pointwise one over (q, encoded (d1, d2)) pairs, so caching, batching and executors are
    shared."""

    def __init__(self, ranker: PairwiseRanker):
        self.ranker = ranker
        self.name = ranker.name
        self.fingerprint = ranker.fingerprint
        base = hints(ranker)
        self.hints = RankerHints(batch_size=base.batch_size, sort_by_length=True,
                                 own_batches=base.own_batches)
        # A ranker that tokenizes ahead across engine calls (token-budget models) is streamed
        # like a pointwise one; others are called batch by batch.
        if callable(getattr(ranker, "preference_batches", None)):
            self.score_batches = self._streamed

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        return self.ranker.preferences(_triples(pairs))

    def _streamed(self, batches: Sequence[Sequence[tuple[str, str]]]) -> Iterator[np.ndarray]:
        # chosen by __init__ only for a ranker that has preference_batches
        streamed = cast(_StreamedPreferences, self.ranker)
        return streamed.preference_batches([_triples(batch) for batch in batches])


def _triples(pairs: Sequence[tuple[str, str]]) -> list[Triple]:
    return [(q, *decode_documents(j)) for q, j in pairs]


def preferences(scorer: Any, ranker: Any, triples: Sequence[Triple]) -> np.ndarray:
    """P(d1 ≻ d2) per triple, each distinct triple computed (or read from the cache) once."""
    keys = [(q, encode_documents(a, b)) for q, a, b in triples]
    unique = list(dict.fromkeys(keys))
    adapter = PreferenceAsPairs(ranker)
    if not unique:
        values = np.zeros(0)
    elif scorer is None:
        values = adapter.score(unique)
    else:
        values = scorer.score(adapter, unique)
    lookup = dict(zip(unique, values.tolist(), strict=True))
    return np.array([lookup[k] for k in keys], dtype=np.float64)


def symmetrise(p12: np.ndarray, p21: np.ndarray) -> np.ndarray:
    symmetric: np.ndarray = (np.asarray(p12) + 1.0 - np.asarray(p21)) / 2.0
    return symmetric


def position_direction(p12: np.ndarray, p21: np.ndarray) -> np.ndarray:
    """Per sample, whether the verdict followed the input position and which way:
    +1 when the document shown first won in both orders, −1 when the one shown second won
    in both, 0 when the same document won both times (a verdict on the documents)."""
    p12, p21 = np.asarray(p12), np.asarray(p21)
    first = (p12 > 0.5) & (p21 > 0.5)
    second = (p12 < 0.5) & (p21 < 0.5)
    return first.astype(np.int8) - second.astype(np.int8)


def position_bias(p12: np.ndarray, p21: np.ndarray) -> float | None:
    """Fraction of samples whose verdict follows the input position (either way), not the
    documents."""
    if np.asarray(p12).size == 0:
        return None
    return float((position_direction(p12, p21) != 0).mean())


def both_orders(scorer: Any, ranker: Any, triples: Sequence[Triple]
                ) -> tuple[np.ndarray, np.ndarray]:
    swapped = [(q, b, a) for q, a, b in triples]
    values = preferences(scorer, ranker, [*triples, *swapped])
    return values[:len(triples)], values[len(triples):]


def calibrate_pairwise(scorer: Any, ranker: Any, ranking: Mapping[str, list[str]],
                       queries: Mapping[str, str], docs: Any, top: int = TOP) -> Calibration:
    triples: list[Triple] = []
    for qid in sorted(ranking):
        head = [d for d in ranking[qid][:top] if d in docs]
        triples += [(queries[qid], docs[a], docs[b]) for a, b in itertools.pairwise(head)]
    p12, p21 = both_orders(scorer, ranker, triples)
    gaps = np.abs(symmetrise(p12, p21) - 0.5)
    delta = float(np.median(gaps)) if gaps.size else 0.0
    return Calibration(delta=delta, gaps=gaps, queries=len(ranking), source="calibrated")


def score_probes(rankers: Sequence[Any], tables: Mapping[str, Any], scorer: Any,
                 delta_for: Any, candidates: Any, context: Any
                 ) -> tuple[dict[str, Calibration], dict[tuple[str, str], tuple[np.ndarray,
                                                                                  np.ndarray]]]:
    """Per ranker its δ (``delta_for(name)`` gives a fixed one, or None to calibrate) and per
    (probe, ranker) the symmetrised preferences and the per-sample position flags."""
    calibrations: dict[str, Calibration] = {}
    results: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    for ranker in rankers:
        given = delta_for(ranker.name)
        if given is not None:
            calibrations[ranker.name] = fixed(given)
        elif candidates is not None:
            collection = context.collection
            calibrations[ranker.name] = calibrate_pairwise(
                scorer, ranker, candidates.ranking, collection.queries, collection.docs)
        else:
            calibrations[ranker.name] = fixed(0.0)
        for name, table in tables.items():
            if table.more_docs or not len(table):
                results[(name, ranker.name)] = (np.zeros(0), np.zeros(0, dtype=np.int8))
                continue
            texts = table.texts
            triples = [(texts[q], texts[a], texts[b])
                       for q, a, b in zip(table.query.tolist(), table.doc1.tolist(),
                                          table.doc2.tolist(), strict=True)]
            p12, p21 = both_orders(scorer, ranker, triples)
            results[(name, ranker.name)] = (symmetrise(p12, p21),
                                            position_direction(p12, p21))
    return calibrations, results


def rerank_run(ranker: Any, scorer: Any, ranking: Mapping[str, list[str]],
               queries: Mapping[str, str], docs: Any) -> dict[str, list[tuple[str, float]]]:
    """duoT5-style aggregation: the top ``rerank_depth`` by summed symmetrised preference,
    the rest below in candidate order."""
    depth = int(getattr(ranker, "rerank_depth", 10))
    run: dict[str, list[tuple[str, float]]] = {}
    for qid in sorted(ranking):
        present = [d for d in ranking[qid] if d in docs]
        head, tail = present[:depth], present[depth:]
        triples = [(queries[qid], docs[a], docs[b]) for i, a in enumerate(head)
                   for j, b in enumerate(head) if i < j]
        p12, p21 = both_orders(scorer, ranker, triples)
        p = symmetrise(p12, p21)
        totals = dict.fromkeys(head, 0.0)
        pairs = [(a, b) for i, a in enumerate(head) for j, b in enumerate(head) if i < j]
        for (a, b), value in zip(pairs, p.tolist(), strict=True):
            totals[a] += value
            totals[b] += 1.0 - value
        scored = [(d, totals[d]) for d in head] + [(d, -1.0 - i) for i, d in enumerate(tail)]
        run[qid] = sorted(scored, key=lambda item: -item[1])
    return run


def add_position_bias(records: Sequence[ResultRow],
                      flags: Mapping[tuple[str, str], np.ndarray],
                      probe_scores: Mapping[tuple[str, str], Any],
                      masks_for: Any) -> None:
    """``position_bias`` (share of verdicts that followed the position, either way) and
    ``position_bias_earlier`` (share that went to the first or earlier-placed document in
    both orders) on each pairwise or listwise record, from the per-sample directions
    (:func:`position_direction`: +1 earlier, −1 later, 0 the documents decided);
    ``masks_for(probe_scores)`` gives the subsets' masks (the engine's own breakdown)."""
    for record in records:
        key = (record["probe"], record["ranker"])
        if key not in flags:
            continue
        masks = dict(masks_for(probe_scores[key]))
        mask = masks.get(record["subset"])
        chosen = flags[key][mask] if mask is not None and flags[key].size else flags[key]
        record["position_bias"] = float((chosen != 0).mean()) if chosen.size else None
        record["position_bias_earlier"] = float((chosen > 0).mean()) if chosen.size else None
