"""Effectiveness next to behaviour, and whether axiom fulfilment tracks it (Rennings et al.).

Each ranker re-ranks the collection's candidate run; nDCG@10, MAP and MRR are computed with
``ir_measures``. One relevance convention everywhere (here and in the masking analysis):
the binary measures count grade ≥ 2 as relevant (``REL_LEVEL``), as ABNIRML and Rau & Kamps
do on TREC DL, and their names say so (``AP(rel=2)``, ``RR(rel=2)``). nDCG uses the grades.
Across
rankers, the fraction of axiom instances a ranker satisfies is then correlated with each
measure (Kendall's τ and Pearson's r) — Rennings et al. report such a correlation between
axiomatic scores and MAP.

``ir_measures`` (the ``eval`` extra) is imported only when a run is evaluated.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from abnirml.data.trec import Qrels, Run

if TYPE_CHECKING:
    from abnirml.data.collection import Collection as TestCollection
    from abnirml.evaluation.execution.candidates import Candidates
    from abnirml.evaluation.execution.experiment import ExperimentResult
    from abnirml.evaluation.execution.scoring import Scorer

REL_LEVEL = 2     # binary measures: grade ≥ 2 is relevant (TREC DL, ABNIRML, Rau & Kamps)
DEFAULT_MEASURES: tuple[str, ...] = ("nDCG@10", f"AP(rel={REL_LEVEL})", f"RR(rel={REL_LEVEL})")


def _parsed(measures: Sequence[str]) -> list[Any]:
    import ir_measures

    from abnirml.errors import ConfigError

    parsed = []
    for text in measures:
        try:
            parsed.append(ir_measures.parse_measure(text))
        except (ValueError, NameError, SyntaxError, TypeError):
            raise ConfigError(f"unknown effectiveness measure {text!r}") from None
    return parsed


def _as_dict(run: Run) -> dict[str, dict[str, float]]:
    return {qid: {docno: float(score) for docno, score in ranking}
            for qid, ranking in run.items()}


def evaluate(run: Run, qrels: Qrels, measures: Sequence[str] = DEFAULT_MEASURES
             ) -> dict[str, float]:
    """Mean of each measure over the judged queries the run answers (trec_eval semantics)."""
    import ir_measures

    parsed = _parsed(measures)
    values = ir_measures.calc_aggregate(parsed, qrels, _as_dict(run))
    return {text: float(values[m]) for text, m in zip(measures, parsed, strict=True)}


def evaluate_per_query(run: Run, qrels: Qrels, measures: Sequence[str] = DEFAULT_MEASURES
                       ) -> dict[str, dict[str, float]]:
    """Each judged query's value of each measure (query → measure → value), as
    ``ir_measures.iter_calc`` gives them: the rows a significance test across runs needs.
    Queries are sorted and measures kept in ``measures``' order: the order iter_calc yields
    them in follows its providers' internals (the command and the Python API get different
    orders for one configuration), and run.json must not depend on it."""
    import ir_measures

    parsed = _parsed(measures)
    names = {str(m): text for text, m in zip(measures, parsed, strict=True)}
    out: dict[str, dict[str, float]] = {}
    for metric in ir_measures.iter_calc(parsed, qrels, _as_dict(run)):
        out.setdefault(str(metric.query_id), {})[names[str(metric.measure)]] = float(
            metric.value)
    return {qid: {text: out[qid][text] for text in measures if text in out[qid]}
            for qid in sorted(out)}


def rerank_candidates(rankers: Iterable[Any], candidates: Mapping[str, list[str]],
                      collection: TestCollection, scorer: Scorer | None = None
                      ) -> dict[str, Run]:
    """Each ranker's re-ranking of the candidate documents (through the score cache)."""
    from abnirml.evaluation.analyses import listwise_probing
    from abnirml.evaluation.analyses.preference_probing import is_pairwise, rerank_run
    from abnirml.evaluation.analyses.rank_origin import rerank

    run = {qid: [(d, 0.0) for d in docnos] for qid, docnos in candidates.items()}
    depth = max((len(v) for v in candidates.values()), default=0)

    def reranked(ranker: Any) -> Run:
        if listwise_probing.is_listwise(ranker):      # one sliding-window pass
            return listwise_probing.rerank_run(ranker, scorer, candidates, collection.queries,
                                               collection.docs)
        if is_pairwise(ranker):
            return rerank_run(ranker, scorer, candidates, collection.queries, collection.docs)
        return rerank(run, collection.queries, collection.docs, ranker, depth=depth,
                      scorer=scorer)

    return {ranker.name: reranked(ranker) for ranker in rankers}


def axiom_fulfilment(records: Iterable[Mapping[str, Any]], subset: str = "all",
                     families: Collection[str] | None = None) -> dict[str, float]:
    """Per ranker: the mean over axiom probes of the fraction of satisfied instances.

    ``families`` are the keys of the axiom-layout families (default: those registered);
    the report passes the ones its run.json names.

    A tie (equal scores) counts as not satisfied for every axiom, the strict reading of
    Rennings et al.'s "fraction of precedence constraints satisfied". For the axioms that
    claim S(d1) ≥ S(d2) (M-TDC, LNC1, LNC2, STMC2) a tie does meet the claim; the report's
    Table 3 shows ties beside each fraction so that reading can be recovered.
    """
    if families is None:
        from abnirml.probes.family_registry import keys_with_layout

        families = keys_with_layout(lambda layout: layout.axiom_instances)
    per_ranker: dict[str, list[float]] = {}
    for r in records:
        if r.get("family") not in families or r.get("subset") != subset or not r.get("n"):
            continue
        if "satisfied" not in r:
            continue
        per_ranker.setdefault(r["ranker"], []).append(r["satisfied"] / r["n"])
    return {ranker: sum(v) / len(v) for ranker, v in per_ranker.items() if v}


@dataclass(frozen=True)
class Correlation:
    measure: str
    rankers: tuple[str, ...]
    kendall_tau: float | None
    kendall_p: float | None
    pearson_r: float | None
    pearson_p: float | None
    note: str = ""


def correlate(fulfilment: Mapping[str, float], effectiveness: Mapping[str, Mapping[str, float]],
              measure: str) -> Correlation:
    """Kendall's τ and Pearson's r between axiom fulfilment and ``measure`` across rankers.

    Needs three or more rankers with both values, and some spread in each; otherwise the
    coefficients are None and ``note`` says why.
    """
    names = tuple(r for r in effectiveness if r in fulfilment and measure in effectiveness[r])
    if len(names) < 3:
        return Correlation(measure, names, None, None, None, None,
                           f"needs at least 3 rankers with axiom results and {measure} "
                           f"(have {len(names)})")
    x = [fulfilment[r] for r in names]
    y = [effectiveness[r][measure] for r in names]
    if len(set(x)) < 2 or len(set(y)) < 2:
        return Correlation(measure, names, None, None, None, None,
                           "undefined: every ranker has the same value")
    from scipy import stats

    tau = stats.kendalltau(x, y)
    pearson = stats.pearsonr(x, y)
    return Correlation(measure, names, _finite(tau.statistic), _finite(tau.pvalue),
                       _finite(pearson.statistic), _finite(pearson.pvalue))


def _finite(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def attach_effectiveness(result: ExperimentResult, rankers: Sequence[Any],
                         collection: TestCollection, candidates: Candidates,
                         scorer: Scorer | None = None,
                         measures: Sequence[str] = DEFAULT_MEASURES) -> dict[str, Any]:
    """Re-rank the candidates with every ranker, evaluate, and keep the runs for the report.

    The runs go to ``result.extras`` (``reranked``, ``candidate_run``) for the output
    writer; the returned dict is the ``effectiveness`` entry of ``run.json`` (only a
    ``skipped`` reason when ``ir_measures`` is not installed).
    """
    from abnirml.files.run_names import run_file_name

    try:
        import ir_measures  # noqa: F401
    except ImportError:
        from abnirml.errors import install_hint

        return {"skipped": f"ir_measures is not installed ({install_hint('eval', located=False)})"}

    ranking = candidates.ranking
    qrels = collection.qrels
    judged = sum(1 for qid, docnos in ranking.items() if docnos and qrels.get(qid))
    if not judged:
        # ir_measures averages over no query as 0.0: undefined, so no table rather than zeros
        return {"skipped": f"none of the {len(ranking):,} candidate queries has judgments: "
                           "nDCG@10, MAP and MRR are undefined"}
    reranked = rerank_candidates(rankers, ranking, collection, scorer)
    candidate_run: Run = {qid: [(d, float(len(docnos) - i)) for i, d in enumerate(docnos)]
                          for qid, docnos in ranking.items()}
    taken: set[str] = set()
    info: dict[str, Any] = {
        "measures": list(measures), "candidates": candidates.source,
        "queries": judged,
        "candidate_run": evaluate(candidate_run, qrels, measures),
        "rankers": {name: evaluate(run, qrels, measures) for name, run in reranked.items()},
        "run_files": {name: run_file_name(name, taken) for name in reranked},
        # query → measure → value per ranker (and the candidates): the report's
        # tables/per-query-effectiveness.csv, rebuilt without the qrels
        "per_query": {name: evaluate_per_query(run, qrels, measures)
                      for name, run in [("candidates", candidate_run), *reranked.items()]},
    }
    result.extras["reranked"] = reranked
    result.extras["candidate_run"] = candidate_run
    return info
