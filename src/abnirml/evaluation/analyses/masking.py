"""Query-term masking (Rau & Kamps §4.4–4.5): how well does a ranker rank when it sees only
the query terms of each document (Only-Q), or everything but them (Drop-Q)?

Each query's candidates (a first-stage run's top k, as for δ calibration) are re-ranked three
times per ranker — with the original documents, with Only-Q documents (every non-query term
replaced by the mask token) and with Drop-Q documents (every query term replaced) — and each
ranking is evaluated against the qrels with nDCG@10, MAP and MRR (``ir_measures``). Binary
measures count grades ≥ ``rel_level`` (2 by default, the TREC DL convention) as relevant.

The mask token is the ranker's own (``RankerHints.mask_token``, ``[MASK]`` unless a ranker
says otherwise), or one token for every ranker when given. Query terms are matched as the
lexical analysis matches them: lowercased and Porter-stemmed (stopwords of the query count
as query terms too).

Ties in the scores (every Drop-Q document scores 0 for BM25) are *not* broken by docno as
``trec_eval`` would: that order is arbitrary and on TREC DL 2019 it lands ~4 SD above a
random ordering. A ranking with ties is evaluated as the mean over seeded random
tie-breaks (:mod:`.ties`); the output states the share of tied documents and the SD over
tie-breaks, so a ranker that cannot order the candidates at all shows as such.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from abnirml.errors import ConfigError, install_hint
from abnirml.evaluation.analyses.effectiveness import REL_LEVEL
from abnirml.evaluation.execution.routing import score_judged
from abnirml.evaluation.execution.workspace import SessionSettings
from abnirml.evaluation.stats.ties import DEFAULT_TIE_BREAKS, evaluate_without_tie_order
from abnirml.markup import escape_md, escape_md_code
from abnirml.probes.base import ProbeContext
from abnirml.probes.manipulation import edits as m
from abnirml.rankers.base import QueryIdentity, Ranker, hints
from abnirml.rankers.family import BuiltRanker

ORIGINAL = "original"
ONLY_QUERY = "only-query"
DROP_QUERY = "drop-query"
VARIANTS = (ORIGINAL, ONLY_QUERY, DROP_QUERY)
VARIANT_LABELS = {ORIGINAL: "Original", ONLY_QUERY: "Only Q", DROP_QUERY: "Drop Q"}
DEFAULT_REL_LEVEL = REL_LEVEL     # one convention with the run's effectiveness table

Run = dict[str, dict[str, float]]


@dataclass(frozen=True)
class MaskingRow:
    ranker: str
    variant: str
    mask_token: str
    queries: int
    values: Mapping[str, float]     # measure name → value in [0, 1]
    tied: float = 0.0               # share of candidates whose score ties with another's
    tie_breaks: int = 1             # random tie-breaks averaged (1: no ties)
    tie_sd: Mapping[str, float] = field(default_factory=dict)   # SD over the tie-breaks


@dataclass
class MaskingResult:
    measures: list[str]
    rows: list[MaskingRow] = field(default_factory=list)
    runs: dict[tuple[str, str], Run] = field(default_factory=dict)

    def value(self, ranker: str, variant: str, measure: str) -> float:
        for row in self.rows:
            if row.ranker == ranker and row.variant == variant:
                return float(row.values[measure])
        raise KeyError((ranker, variant))


def measure_names(rel_level: int = DEFAULT_REL_LEVEL) -> list[str]:
    """nDCG@10 (graded), MAP and MRR (binary at ``rel_level``), as ir_measures names them."""
    return ["nDCG@10", f"AP(rel={rel_level})", f"RR(rel={rel_level})"]


def masked_document(variant: str, query: str, document: str,
                    context: m.ManipulationContext) -> str:
    if variant == ORIGINAL:
        return document
    function = m.only_query if variant == ONLY_QUERY else m.drop_query
    rng = np.random.default_rng(0)     # masking is deterministic; the generator is unused
    out = function(query, document, context, rng)
    return document if out is None else out


def masking_analysis(context: ProbeContext, rankers: Sequence[Ranker | BuiltRanker],
                     scorer: Any, *,
                     mask_token: str | None = None,
                     rel_level: int = DEFAULT_REL_LEVEL,
                     tie_breaks: int = DEFAULT_TIE_BREAKS) -> MaskingResult:
    """Score every query's candidates in the three variants with every ranker; evaluate.

    ``scorer`` is an :class:`~abnirml.evaluation.execution.scoring.Scorer` (scores go through
    the cache).
    A ranker given with its record (:meth:`Workspace.built
    <abnirml.evaluation.execution.workspace.Workspace.built>`) breaks ties with the seeds of
    what its display name stands for, so a name changes no result.
    """
    collection = context.collection
    candidates = {qid: docnos for qid, docnos in context.candidate_docnos().items()
                  if docnos and qid in collection.queries}
    qrels = {qid: dict(judged) for qid, judged in collection.qrels.items() if qid in candidates}
    if not qrels:
        raise ConfigError("masking needs judged queries among the candidates; none found")
    measures = measure_names(rel_level)
    result = MaskingResult(measures=measures)
    for given in rankers:
        built = given if isinstance(given, BuiltRanker) else BuiltRanker(given)
        ranker = built.ranker
        token = hints(ranker).mask_token if mask_token is None else mask_token
        text_context = m.ManipulationContext(stem=context.analyzer.stem, mask_token=token)
        for variant in VARIANTS:
            keys: list[tuple[str, str]] = []
            pairs: list[tuple[str, str]] = []
            identities: list[QueryIdentity] = []
            for qid, docnos in candidates.items():
                query = collection.queries[qid]
                for docno in docnos:
                    keys.append((qid, docno))
                    identities.append(QueryIdentity(qid, query))
                    pairs.append((query, masked_document(variant, query,
                                                         collection.docs[docno], text_context)))
            scores = score_judged(scorer, ranker, pairs, identities)
            run: Run = {}
            for (qid, docno), score in zip(keys, scores, strict=True):
                run.setdefault(qid, {})[docno] = float(score)
            result.runs[(ranker.name, variant)] = run
            broken = evaluate_without_tie_order(
                run, lambda r: evaluate(r, qrels, measures), measures, context.seed,
                tie_breaks, f"{built.identity}/{variant}")   # a display name: same seeds
            result.rows.append(MaskingRow(ranker.name, variant, token,
                                          len(set(run) & set(qrels)), broken.mean,
                                          broken.tied, broken.tie_breaks, broken.sd))
    return result


def evaluate(run: Run, qrels: Mapping[str, Mapping[str, int]],
             measures: Sequence[str]) -> dict[str, float]:
    """Mean of each measure over the judged queries of ``run`` (ir_measures)."""
    try:
        import ir_measures
    except ImportError:
        raise ConfigError("the masking analysis needs ir_measures: "
                          f"{install_hint('eval')}") from None
    parsed = [ir_measures.parse_measure(name) for name in measures]
    judged = {qid: {d: int(g) for d, g in docs.items()} for qid, docs in qrels.items()
              if qid in run}
    scored = {qid: docs for qid, docs in run.items() if qid in judged}
    aggregate = ir_measures.calc_aggregate(parsed, judged, scored)
    return {name: float(aggregate.get(measure, 0.0))
            for name, measure in zip(measures, parsed, strict=True)}


# --------------------------------------------------------------------------- output


MASKING_FILES = {"masking.csv": b"ranker,input,mask_token,", "masking.md": b"# Query-term masking"}
"""The files ``masking --out`` writes, each with the start of its first line."""


def write_outputs(out: Path, result: MaskingResult) -> None:
    """``masking.csv`` (values in [0, 1]) and ``masking.md`` (×100, the paper's layout)."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "masking.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["ranker", "input", "mask_token", "queries", *result.measures,
                         "tied", "tie_breaks"])
        for row in result.rows:
            writer.writerow([row.ranker, row.variant, row.mask_token, row.queries,
                             *(f"{row.values[name]:.6f}" for name in result.measures),
                             f"{row.tied:.6f}", row.tie_breaks])
    (out / "masking.md").write_text(markdown(result), encoding="utf-8")


def markdown(result: MaskingResult) -> str:
    header = ["Ranker", "Input", *[_title(name) for name in result.measures], "Queries"]
    lines = ["# Query-term masking", "",
             "Each query's candidates re-ranked with the original documents, with only the "
             "query terms kept (Only Q: every other term masked) and with the query terms "
             "masked (Drop Q). Values ×100.", "",
             "| " + " | ".join(escape_md(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    for row in result.rows:
        cells = [row.ranker, VARIANT_LABELS.get(row.variant, row.variant),
                 *(f"{100 * row.values[name]:.2f}" for name in result.measures), str(row.queries)]
        lines.append("| " + " | ".join(escape_md(c) for c in cells) + " |")
    tokens = sorted({(row.ranker, row.mask_token) for row in result.rows})
    lines += ["", "Mask token: " + ", ".join(f"{escape_md(r)} `{escape_md_code(t)}`"
                                             for r, t in tokens) + "."]
    lines += [tie_note(row, result.measures) for row in result.rows if row.tied > 0]
    return "\n".join(lines) + "\n"


def tie_note(row: MaskingRow, measures: Sequence[str]) -> str:
    """Say when a value is an average over random tie-breaks, and when it means nothing."""
    label = f"{row.ranker} {VARIANT_LABELS.get(row.variant, row.variant)}"
    spread = ", ".join(f"{_title(m)} ± {100 * row.tie_sd.get(m, 0.0):.2f}" for m in measures)
    text = (f"\n{label}: {100 * row.tied:.1f} % of the candidates tie with another candidate's "
            f"score; values are the mean over {row.tie_breaks} seeded random tie-breaks "
            f"(SD {spread}), not trec_eval's docno order.")
    if row.tied >= 0.999:
        text += " Every score ties: the ranker cannot order these documents, so the values " \
                "are those of a random ordering."
    return text


def _title(measure: str) -> str:
    if measure.startswith("AP("):
        return f"MAP {measure[2:]}"
    if measure.startswith("RR("):
        return f"MRR {measure[2:]}"
    return measure


# --------------------------------------------------------------------------- one call


@dataclass
class MaskingConfig:
    collection: str = "demo"
    rankers: list[str] = field(default_factory=lambda: ["bm25"])
    out: str | None = None
    mask_token: str | None = None
    rel_level: int = DEFAULT_REL_LEVEL
    seed: int = 0
    #: analysis, candidates, cache, device … (the scoring commands' shared settings)
    session: SessionSettings = field(default_factory=SessionSettings)


def run_masking(config: MaskingConfig) -> MaskingResult:
    """Load, build rankers, resolve candidates, analyse and (with ``out``) write the files."""
    from abnirml.evaluation.execution.workspace import Workspace
    from abnirml.files.output_folders import check_output_folder

    if config.out is not None:   # before any work: a user's masking.md is never replaced
        check_output_folder(Path(config.out), MASKING_FILES)
    workspace = Workspace(config.collection, config.session, config.seed)
    rankers = [workspace.built(r) for r in workspace.build_rankers(config.rankers)]
    workspace.candidates()       # resolved before scoring starts: a bad run file fails early
    context = workspace.probe_context()
    with workspace.scorer() as scorer:
        result = masking_analysis(context, rankers, scorer, mask_token=config.mask_token,
                                  rel_level=config.rel_level)
    if config.out is not None:
        write_outputs(Path(config.out), result)
    return result
