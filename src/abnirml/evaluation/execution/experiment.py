"""The engine: materialise probe samples, score each unique (q, d) once per ranker, report.

:func:`run_experiment` runs these steps, one function each:

1. :func:`build_tables` — every requested probe builds its
   :class:`~abnirml.probes.base.SampleTable`.
2. :func:`unique_pairs` — the texts of all tables (and of the δ-calibration candidates)
   are interned and the *unique* (query, document) pairs collected: a document shared by
   many samples and probes is scored once.
3. :func:`score_pairs` — each ranker scores the unique pairs through the persistent cache
   (see :mod:`.scoring`); a ranker with per-query state scores them per judged query
   instead (:mod:`.routing`).
4. :func:`calibrate_rankers` (δ per ranker, unless given), :func:`sample_scores` (each
   sample's two scores) and :func:`build_records`: effects, scores and p-values per
   probe × ranker × subset, with a correction per table (family). Pairwise and listwise
   rankers reach the same records through :func:`preference_scores`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast, overload

import numpy as np

from abnirml.evaluation.analyses.foil_wins import attach_foil_wins
from abnirml.evaluation.execution.candidates import Candidates
from abnirml.evaluation.execution.routing import Identities, score_routed
from abnirml.evaluation.execution.scoring import Scorer, progress_bar
from abnirml.evaluation.stats.bootstrap import cluster_codes
from abnirml.evaluation.stats.calibration import Calibration, calibrate, fixed
from abnirml.evaluation.stats.corrections import DEFAULT_CORRECTION, Correction, get_correction
from abnirml.evaluation.stats.significance import (
    STATISTICS_DEFAULTS,
    StatsConfig,
    p_value,
    record_fields,
    test_rounds,
)
from abnirml.evaluation.stats.stat_tests import get_test, warn_if_blocked
from abnirml.evaluation.stats.statistics import defined_p, summarize
from abnirml.evaluation.stats.verdict import query_floor
from abnirml.probes.base import Probe, ProbeContext, SampleTable, build_table
from abnirml.probes.family_registry import family_keys, get_family
from abnirml.rankers.base import QueryIdentity, Ranker, is_query_routed
from abnirml.result_fields import ResultRow

if TYPE_CHECKING:
    from abnirml.evaluation.execution.table_workers import TableWorkers

ALL = "all"


@dataclass(frozen=True)
class ExperimentConfig:
    """What the engine needs of a run's settings: α and the given δ of
    :class:`~abnirml.evaluation.stats.significance.StatisticsSettings` (defaults drawn from it),
    the examples kept per probe, and the resolved test settings."""

    alpha: float = STATISTICS_DEFAULTS.alpha
    deltas: Mapping[str, float] = field(default_factory=dict)   # ranker name → given δ
    delta_all: float | None = None                               # one δ for every ranker
    examples_per_probe: int = 3
    stats: StatsConfig = field(default_factory=StatsConfig)   # test, correction, intervals


@dataclass(frozen=True)
class ProbeOutline:
    """What records need to know about a probe: plain data, from a live run or scores.npz."""

    name: str
    family: str
    symmetric: bool
    skipped: Mapping[str, int] = field(default_factory=dict)
    record_fields: Mapping[str, Any] = field(default_factory=dict)   # copied into each record

    @classmethod
    def of(cls, probe: Probe, table: SampleTable) -> ProbeOutline:
        return cls(probe.name, probe.family, probe.symmetric, dict(table.skipped),
                   dict(table.extra.get("record", {})))


@dataclass
class ProbeScores:
    """Per-sample scores of one probe for one ranker (kept for sweeps and comparisons)."""

    score1: np.ndarray
    score2: np.ndarray
    grade: np.ndarray
    cluster: np.ndarray | None = None   # per-sample query code (bootstrap clusters); None: own
    queries: tuple[str, ...] = ()       # query text of each cluster code (per-query tables)
    #: further subsets beyond the grade bands (name → mask): a sliding-window listwise
    #: ranker's window-inside / window-straddle samples
    subsets: Mapping[str, np.ndarray] | None = None
    #: score1 is a pairwise or listwise ranker's preference p, compared with ½ (score2)
    preferences: bool = False


@dataclass
class ExperimentResult:
    records: list[ResultRow]
    calibrations: dict[str, Calibration]
    probe_scores: dict[tuple[str, str], ProbeScores]
    tables: dict[str, SampleTable]
    examples: list[dict[str, Any]]
    summary: dict[str, Any]
    extras: dict[str, Any] = field(default_factory=dict)   # analyses' by-products (reranked runs)


class _Interner:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def remap(self, texts: Sequence[str]) -> np.ndarray:
        ids = self.ids
        return np.fromiter((ids.setdefault(t, len(ids)) for t in texts), dtype=np.int64,
                           count=len(texts))

    def texts(self) -> list[str]:
        return list(self.ids)


def build_tables(probes: Sequence[Probe], context: ProbeContext,
                 progress: bool | None = None,
                 workers: TableWorkers | None = None) -> dict[str, SampleTable]:
    """Every probe's samples, with a progress line naming the probe being built: on a large
    collection this step (spaCy parses, manipulations, axiom mining) runs for a minute
    before any scoring starts, and would otherwise be silent. ``progress`` follows the one
    rule of :mod:`abnirml.progress` (``None``: on unless ``ABNIRML_PROGRESS=0``).
    ``workers`` (forked before anything else ran: :mod:`.table_workers`) build the tables
    on every core; the tables are the same."""
    from abnirml.progress import progress_enabled

    tables: dict[str, SampleTable] = {}
    bar = progress_bar(len(probes), "building samples", progress_enabled(progress),
                       unit="probe")
    try:
        if workers is not None:
            def done(probe: Probe) -> None:
                bar.set_postfix_str(probe.name)
                bar.update(1)

            return workers.build(probes, context, done)
        for probe in probes:
            bar.set_postfix_str(probe.name)
            tables[probe.name] = build_table(probe, context)
            bar.update(1)
    finally:
        bar.close()
    return tables


def run_experiment(probes: Sequence[Probe], rankers: Sequence[Ranker], context: ProbeContext,
                   scorer: Scorer, config: ExperimentConfig,
                   candidates: Candidates | None = None, *,
                   table_workers: TableWorkers | None = None) -> ExperimentResult:
    """The four steps of the module docstring, one function each: samples, unique pairs,
    scores, then δ, per-sample scores and records. Pairwise and listwise rankers take
    their own path from the samples on (:func:`preference_scores`). ``table_workers``
    build the samples on every core (:mod:`.table_workers`)."""
    from abnirml.rankers.listwise import is_listwise
    from abnirml.rankers.pairwise import is_pairwise

    tables = build_tables(probes, context, scorer.progress, table_workers)
    pointwise = [r for r in rankers if not is_pairwise(r) and not is_listwise(r)]
    needs_calibration = [r for r in pointwise
                         if config.delta_all is None and r.name not in config.deltas]
    slots = unique_pairs(tables, context.collection,
                         candidates if needs_calibration else None)
    slot_scores = score_pairs(pointwise, slots, tables, scorer, context.collection)
    calibrations = calibrate_rankers(pointwise, config, slots, slot_scores)
    probe_scores = sample_scores(probes, pointwise, tables, slots, slot_scores)
    position_flags = preference_scores(rankers, tables, scorer, config, candidates, context,
                                       calibrations, probe_scores)
    outlines = [ProbeOutline.of(probe, tables[probe.name]) for probe in probes]
    records = build_records(outlines, [r.name for r in rankers], probe_scores, calibrations,
                            context.grade_bands, config.alpha, stats=config.stats,
                            progress=scorer.progress)
    if position_flags:
        from abnirml.evaluation.analyses.preference_probing import add_position_bias

        add_position_bias(records, position_flags, probe_scores,
                          lambda ps: subset_masks(ps.grade, context.grade_bands, ps.subsets))
    attach_foil_wins(records, probes, probe_scores,
                     lambda ps: subset_masks(ps.grade, context.grade_bands, ps.subsets),
                     config.stats.resamples, config.stats.ci_level, config.stats.seed)
    examples = pick_examples(probes, rankers, tables, probe_scores, context,
                             config.examples_per_probe)
    listwise = any(is_listwise(r) for r in rankers)
    summary = {
        "probes": len(probes), "rankers": [r.name for r in rankers],
        "samples": int(sum(len(t) for t in tables.values())),
        "pair_slots": int(slots.count), "unique_pairs": len(slots.pairs),
        "scored": scorer.scored, "from_cache": scorer.reused,
        **({"windows_ranked": scorer.windows_ranked, "windows_from_cache": scorer.windows_reused}
           if listwise else {}),
        "candidates": None if candidates is None else candidates.source,
        "skipped": dict(candidates.skipped) if candidates is not None else {},
        "alpha": config.alpha, "stats": config.stats.as_dict(),
        **_rounds_summary(records),
        "grade_bands": [list(b) for b in context.grade_bands],
    }
    return ExperimentResult(records, calibrations, probe_scores, tables, examples, summary)


@dataclass
class PairSlots:
    """Every (query, document) slot the run scores, and the unique pairs behind them.

    Slots are laid out flat: each table's score rows (one per document column), then each
    query's calibration candidates; ``inverse[i]`` is slot i's index into ``pairs``."""

    codes: dict[str, tuple[np.ndarray, np.ndarray]]        # table → (query, doc) text codes
    calib_codes: dict[str, tuple[np.ndarray, np.ndarray]]  # qid → its candidates' codes
    pairs: list[tuple[str, str]]
    inverse: np.ndarray
    count: int                                              # slots, duplicates included
    rows: dict[str, list[slice]] = field(default_factory=dict)   # table → its rows' slots
    calibration: dict[str, slice] = field(default_factory=dict)  # qid → its candidates' slots

    def scores(self, scored: tuple[np.ndarray, np.ndarray], where: slice) -> np.ndarray:
        """The scores of the slots ``where`` from one ranker's (values, index)."""
        values, index = scored
        chosen: np.ndarray = values[index[where]]
        return chosen


def unique_pairs(tables: Mapping[str, SampleTable], collection: Any,
                 candidates: Candidates | None) -> PairSlots:
    """Step 2: intern every text and collect the unique (query, document) pairs of all
    tables and of the δ-calibration candidates (when a ranker needs calibrating), so a
    passage in many samples, probes and candidate lists is scored once."""
    interner = _Interner()
    codes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    count = 0
    for name, table in tables.items():
        local = interner.remap(table.texts)
        columns = [table.doc1, table.doc2, *table.more_docs]
        q = local[table.query] if len(table) else np.zeros(0, dtype=np.int64)
        doc_columns = [local[c] if len(table) else np.zeros(0, dtype=np.int64)
                       for c in columns]
        query_columns = [q] * len(columns)
        if table.query1 is not None and len(table):
            query_columns[0] = local[table.query1]          # doc1 scored with its own query (qvp)
        codes[name] = (np.stack(query_columns), np.stack(doc_columns))
        count += len(columns) * len(table)
    calib_codes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if candidates is not None:
        for qid, docnos in candidates.ranking.items():
            if not docnos:
                continue
            q_id = interner.remap([collection.queries[qid]])
            d_ids = interner.remap([collection.docs[d] for d in docnos])
            calib_codes[qid] = (np.repeat(q_id, len(d_ids)), d_ids)
            count += len(d_ids)

    base = max(len(interner.ids), 1)
    all_codes = [q * base + d for qs, docs in codes.values()
                 for q, d in zip(qs, docs, strict=True)]
    all_codes += [q * base + d for q, d in calib_codes.values()]
    flat = np.concatenate(all_codes) if all_codes else np.zeros(0, dtype=np.int64)
    unique, inverse = np.unique(flat, return_inverse=True)
    texts = interner.texts()
    slots = PairSlots(codes, calib_codes, [(texts[c // base], texts[c % base])
                                           for c in unique.tolist()],
                      inverse.reshape(-1), count)
    pos = 0
    for name, (_, docs) in codes.items():
        n = docs.shape[1]
        slots.rows[name] = [slice(pos + r * n, pos + (r + 1) * n) for r in range(docs.shape[0])]
        pos += docs.shape[0] * n
    for qid, (_, d) in calib_codes.items():
        slots.calibration[qid] = slice(pos, pos + d.shape[0])
        pos += d.shape[0]
    return slots


def score_pairs(rankers: Sequence[Ranker], slots: PairSlots,
                tables: Mapping[str, SampleTable], scorer: Scorer,
                collection: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Step 3: each ranker's scores of the unique pairs, through the cache, as (values,
    index) — slot i's score is ``values[index[i]]``. A ranker with per-query state scores
    each unique (route, pair) instead (:mod:`.routing`)."""
    scored: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    routed = [r for r in rankers if is_query_routed(r)]
    if routed:
        slot_identity, identities = _slot_identities(tables, slots.codes, slots.calib_codes,
                                                     collection)
    for ranker in rankers:
        if is_query_routed(ranker):
            scored[ranker.name] = score_routed(scorer, ranker, slots.pairs, slots.inverse,
                                               slot_identity, identities)
        else:
            scored[ranker.name] = (scorer.score(ranker, slots.pairs), slots.inverse)
    return scored


def calibrate_rankers(rankers: Sequence[Ranker], config: ExperimentConfig, slots: PairSlots,
                      slot_scores: Mapping[str, tuple[np.ndarray, np.ndarray]]
                      ) -> dict[str, Calibration]:
    """Step 4a: each ranker's δ — the one given for every ranker, the one given for it, or
    calibrated from its scores of each query's candidates (:mod:`.calibration`)."""
    calibrations: dict[str, Calibration] = {}
    for ranker in rankers:
        if config.delta_all is not None:
            calibrations[ranker.name] = fixed(config.delta_all)
        elif ranker.name in config.deltas:
            calibrations[ranker.name] = fixed(config.deltas[ranker.name])
        else:
            per_query = {qid: slots.scores(slot_scores[ranker.name], where)
                         for qid, where in slots.calibration.items()}
            calibrations[ranker.name] = calibrate(per_query)
    return calibrations


def sample_scores(probes: Sequence[Probe], rankers: Sequence[Ranker],
                  tables: Mapping[str, SampleTable], slots: PairSlots,
                  slot_scores: Mapping[str, tuple[np.ndarray, np.ndarray]]
                  ) -> dict[tuple[str, str], ProbeScores]:
    """Step 4b: every sample's two scores per probe and ranker (a triple probe's combined
    by its table's ``combine``), with the query clusters the bootstrap resamples."""
    probe_scores: dict[tuple[str, str], ProbeScores] = {}
    for probe in probes:
        table = tables[probe.name]
        rows = slots.rows[probe.name]
        # samples of one query text form one cluster (the unit the bootstrap resamples)
        used, cluster = np.unique(table.query, return_inverse=True)
        cluster = cluster.reshape(-1)
        query_texts = tuple(table.texts[i] for i in used.tolist())
        for ranker in rankers:
            scored = slot_scores[ranker.name]
            if table.combine is None:
                score1, score2 = slots.scores(scored, rows[0]), slots.scores(scored, rows[1])
            else:
                score1, score2 = table.combine([slots.scores(scored, r) for r in rows])
            probe_scores[(probe.name, ranker.name)] = ProbeScores(score1, score2, table.grade,
                                                                  cluster, query_texts)
    return probe_scores


def preference_scores(rankers: Sequence[Ranker], tables: Mapping[str, SampleTable],
                      scorer: Scorer, config: ExperimentConfig,
                      candidates: Candidates | None, context: ProbeContext,
                      calibrations: dict[str, Calibration],
                      probe_scores: dict[tuple[str, str], ProbeScores]
                      ) -> dict[tuple[str, str], np.ndarray]:
    """Steps 3–4b for pairwise and listwise rankers, which score documents in pairs or
    lists rather than (query, document) pairs: their δ and their per-sample preferences p
    (compared with ½) join ``calibrations`` and ``probe_scores``; returns the per-sample
    position flags ``position_bias`` is counted from."""
    from abnirml.rankers.listwise import is_listwise
    from abnirml.rankers.pairwise import is_pairwise

    listwise = [r for r in rankers if is_listwise(r)]   # probed in lists: .listwise_probing
    pairwise = [r for r in rankers if is_pairwise(r) and not is_listwise(r)]   # .pairwise

    def delta_for(name: str) -> float | None:
        return config.delta_all if config.delta_all is not None else config.deltas.get(name)

    position_flags: dict[tuple[str, str], np.ndarray] = {}
    if pairwise:
        from abnirml.evaluation.analyses.preference_probing import score_probes

        pair_calibrations, preferences = score_probes(pairwise, tables, scorer, delta_for,
                                                      candidates, context)
        calibrations.update(pair_calibrations)
        for (probe_name, ranker_name), (p, flags) in preferences.items():
            probe_scores[(probe_name, ranker_name)] = _preference(tables[probe_name], p)
            position_flags[(probe_name, ranker_name)] = flags
    if listwise:
        from abnirml.evaluation.analyses import listwise_probing
        list_calibrations, verdicts = listwise_probing.score_probes(
            listwise, tables, scorer, delta_for, context)
        calibrations.update(list_calibrations)
        for (probe_name, ranker_name), scored in verdicts.items():
            probe_scores[(probe_name, ranker_name)] = _preference(
                tables[probe_name], scored.p, scored.subsets)
            if scored.flags is not None or not scored.p.size:
                position_flags[(probe_name, ranker_name)] = (
                    scored.flags if scored.flags is not None else np.zeros(0, dtype=np.int8))
    return position_flags


def _preference(table: SampleTable, p: np.ndarray,
                subsets: Mapping[str, np.ndarray] | None = None) -> ProbeScores:
    """A preference ranker's scores of one probe: p against ½, clustered by query."""
    if not p.size:
        return ProbeScores(p, p.copy(), np.zeros(0), preferences=True)
    used, cluster = np.unique(table.query, return_inverse=True)
    query_texts = tuple(table.texts[i] for i in used.tolist())
    return ProbeScores(p, np.full(p.shape, 0.5), table.grade, cluster.reshape(-1),
                       query_texts, subsets, preferences=True)


def _slot_identities(tables: Mapping[str, SampleTable],
                     codes: Mapping[str, tuple[np.ndarray, np.ndarray]],
                     calib_codes: Mapping[str, tuple[np.ndarray, np.ndarray]],
                     collection: Any) -> tuple[np.ndarray, list[QueryIdentity]]:
    """The query identity code of every pair slot, laid out as the engine's flat slots
    (each table's score rows, then each query's calibration candidates): every column of a
    sample — a varied query's included — belongs to the sample's judged query."""
    identities = Identities(getattr(collection, "queries", None) or {})
    parts: list[np.ndarray] = []
    for name, (_, docs) in codes.items():
        per_sample = identities.table_codes(tables[name])
        parts.extend([per_sample] * docs.shape[0])
    for qid, (_, d) in calib_codes.items():
        parts.append(np.full(d.shape[0], identities.of_qid(qid, collection.queries[qid]),
                             dtype=np.int64))
    flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return flat, identities.listing()


def _rounds_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"test_rounds": {family: rounds}}`` when a resampling test ran, else nothing."""
    used = {r["family"]: r["test_rounds"] for r in records if "test_rounds" in r}
    return {"test_rounds": {"test_rounds": dict(sorted(used.items()))}} if used else {}


def subset_masks(grade: np.ndarray, bands: Sequence[tuple[str, int, int]],
                 extra: Mapping[str, np.ndarray] | None = None) -> list[tuple[str, np.ndarray]]:
    """``all`` plus one mask per grade band, when the probe's samples carry grades, plus
    the ``extra`` subsets of one ranker's samples (a listwise ranker's window subsets)."""
    masks = [(ALL, np.ones(grade.shape[0], dtype=bool))]
    if grade.size and not np.isnan(grade).all():
        for name, lo, hi in bands:
            masks.append((name, (grade >= lo) & (grade <= hi)))
    masks += list((extra or {}).items())
    return masks


def build_records(probes: Sequence[ProbeOutline], rankers: Sequence[str],
                  probe_scores: Mapping[tuple[str, str], ProbeScores],
                  calibrations: Mapping[str, Calibration],
                  grade_bands: Sequence[tuple[str, int, int]], alpha: float,
                  delta_for: Mapping[str, float] | None = None,
                  stats: StatsConfig | None = None, progress: bool = False) -> list[ResultRow]:
    """One record per probe × ranker × subset, corrected per family (Bonferroni by default).

    Families are ordered as registered; a family's ``record_fields`` adds its own fields.
    ``delta_for`` overrides the calibrated δ (used by the δ sweep); ``stats`` chooses test,
    correction, intervals and their seed (:mod:`.significance`; None: the defaults). A test
    whose verdict is the score interval (``clustered``) draws every ranker's resampled
    scores of a probe and subset at once and sets that interval after the correction
    (:mod:`.verdict`); ``progress`` shows a bar of its resamples.
    """
    stats = stats if stats is not None else StatsConfig()
    test = get_test(stats.test)
    keys = family_keys()
    order = {family: i for i, family in enumerate(keys)}
    records: list[ResultRow] = []
    rounds = family_rounds(probes, rankers, probe_scores, grade_bands, alpha, stats)
    draws: dict[int, Any] = {}                  # id(record) → its ScoreDraws
    shared = (_table_draws(probes, rankers, probe_scores, calibrations, grade_bands, alpha,
                           stats, rounds, delta_for, progress) if test.score_interval else {})
    for probe in sorted(probes, key=lambda p: order.get(p.family, len(order))):
        extra_fields = get_family(probe.family).record_fields if probe.family in order else None
        for ranker in rankers:
            delta = (delta_for or {}).get(ranker, calibrations[ranker].delta)
            ps = probe_scores[(probe.name, ranker)]
            for subset, mask in subset_masks(ps.grade, grade_bands, ps.subsets):
                s1, s2 = ps.score1[mask], ps.score2[mask]
                summary = summarize(s1, s2, delta, probe.symmetric)
                cluster = None if ps.cluster is None else ps.cluster[mask]
                key = (probe.name, subset)
                drawn = shared.get((probe.name, ranker, subset))
                if test.score_interval:
                    p = math.nan if drawn is None or summary.n < 2 else drawn.p_value()
                else:
                    p = p_value(s1, s2, delta, probe.symmetric, stats, cluster,
                                (*key, ranker), rounds.get(probe.family))
                queries = cluster_codes(cluster, summary.n)[1] if summary.n else 0
                record: ResultRow = {
                    "probe": probe.name, "family": probe.family, "ranker": ranker,
                    "subset": subset, "score": _round(summary.score), "n": summary.n,
                    "queries": queries, "pos": summary.pos, "neg": summary.neg,
                    "neutral": summary.neutral,
                    "mean_diff": _round(summary.mean_diff), "p_value": _round(defined_p(p)),
                    "significant": False, "delta": _round(delta),
                    "symmetric": probe.symmetric,
                    "skipped": dict(sorted(probe.skipped.items())) if subset == ALL else {},
                }
                if extra_fields is not None:
                    _add_fields(record, extra_fields(s1, s2, summary))
                _add_fields(record, probe.record_fields)
                if probe.family in rounds:
                    record["test_rounds"] = rounds[probe.family]
                if test.queries_as_unit and summary.n >= 2 and p == query_floor(
                        queries, probe.symmetric) and (drawn is None or drawn.floored):
                    record["p_floor"] = _round(p)
                _add_fields(record, {name: _round(value) for name, value in record_fields(
                    s1, s2, delta, probe.symmetric, stats, cluster, key).items()})
                if drawn is not None:
                    draws[id(record)] = drawn
                records.append(record)
    apply_bonferroni(records, alpha, stats.correction)
    if test.score_interval and stats.resamples > 0:
        apply_verdict_intervals(records, draws, alpha, stats.correction)
    return records


def _table_draws(probes: Sequence[ProbeOutline], rankers: Sequence[str],
                 probe_scores: Mapping[tuple[str, str], ProbeScores],
                 calibrations: Mapping[str, Calibration],
                 grade_bands: Sequence[tuple[str, int, int]], alpha: float,
                 stats: StatsConfig, rounds: Mapping[str, int],
                 delta_for: Mapping[str, float] | None, progress: bool = False
                 ) -> dict[tuple[str, str, str], Any]:
    """(probe, ranker, subset) → the ScoreDraws of the clustered test: every ranker's
    effects of every probe and subset, resampled by table (:func:`.verdict.table_draws`)."""
    from abnirml.evaluation.stats.statistics import effects
    from abnirml.evaluation.stats.verdict import DrawItem, table_draws

    if not rankers:
        return {}
    keys: list[tuple[str, str, list[str]]] = []
    items: list[DrawItem] = []
    for probe in probes:
        scores = {r: probe_scores[(probe.name, r)] for r in rankers}
        # rankers scored on the same samples, without subsets of their own, share one item
        # per subset; a preference ranker with other samples or its own subsets (a listwise
        # ranker's window subsets) gets items of its own; one without samples gets none
        plain = [r for r in rankers if not scores[r].subsets]
        size = scores[plain[0]].score1.shape[0] if plain else -1
        shared = [r for r in plain if scores[r].score1.shape[0] == size]
        groups = ([shared] if shared else []) + [[r] for r in rankers if r not in shared]
        for group in groups:
            first = scores[group[0]]
            if not first.score1.shape[0]:
                continue
            for subset, mask in subset_masks(first.grade, grade_bands, first.subsets):
                columns = []
                for ranker in group:
                    ps = scores[ranker]
                    delta = (delta_for or {}).get(ranker, calibrations[ranker].delta)
                    columns.append(effects(ps.score1[mask] - ps.score2[mask], delta,
                                           probe.symmetric))
                keys.append((probe.name, subset, group))
                items.append(DrawItem(probe.family, subset, np.stack(columns, axis=1),
                                      None if first.cluster is None else first.cluster[mask],
                                      probe.symmetric))
    out: dict[tuple[str, str, str], Any] = {}
    found_all = table_draws(items, rounds, stats.seed, alpha, stats.correction, progress)
    for (name, subset, group), found in zip(keys, found_all, strict=True):
        no_draws: list[Any] = [None] * len(group)
        for ranker, drawn in zip(group, found or no_draws, strict=True):
            out[(name, ranker, subset)] = drawn
    return out


def apply_verdict_intervals(records: list[ResultRow], draws: Mapping[int, Any],
                            alpha: float, correction: str) -> None:
    """Set each tested row's score interval at the level its correction tested it at, so
    that it excludes 0 exactly when the row is significant (:mod:`.verdict`)."""
    from abnirml.evaluation.stats.verdict import row_rules

    for group, p_values in _tested_by_table(records):
        rules = row_rules(p_values, alpha, correction)
        for record, rule in zip(group, rules, strict=True):
            drawn = draws.get(id(record))
            if drawn is None:
                continue
            low, high = drawn.interval(rule, _round)
            record["ci_low"], record["ci_high"] = _round(low), _round(high)


def family_rounds(probes: Sequence[ProbeOutline], rankers: Sequence[str],
                  probe_scores: Mapping[tuple[str, str], ProbeScores],
                  grade_bands: Sequence[tuple[str, int, int]], alpha: float,
                  stats: StatsConfig) -> dict[str, int]:
    """Rounds of the resampling test per table (family), from the number of tests the
    table's correction will count (at most: every probe × ranker × subset); empty for a
    test that draws no rounds. A count the user named that cannot reject is warned about
    once."""
    if not get_test(stats.test).resamples:
        return {}
    tests: dict[str, int] = {}
    for probe in probes:
        for ranker in rankers:
            ps = probe_scores[(probe.name, ranker)]
            tests[probe.family] = tests.get(probe.family, 0) + len(subset_masks(
                ps.grade, grade_bands, ps.subsets))
    rounds = {family: test_rounds(stats, m, alpha) for family, m in tests.items()}
    warn_if_blocked(stats, rounds, tests, alpha, stacklevel=4)
    return rounds


def _tested_by_table(records: Sequence[ResultRow]
                     ) -> list[tuple[list[ResultRow], list[float]]]:
    """Per table (family, in order of first appearance) the rows its correction counts —
    n ≥ 2 and a p-value — with their p-values."""
    tables: dict[str, tuple[list[ResultRow], list[float]]] = {}
    for record in records:
        p = record["p_value"]
        if record["n"] >= 2 and p is not None:
            rows, p_values = tables.setdefault(record["family"], ([], []))
            rows.append(record)
            p_values.append(p)
    return list(tables.values())


def apply_bonferroni(records: list[ResultRow], alpha: float,
                     correction: str | Correction = DEFAULT_CORRECTION) -> None:
    """Mark significance per table (= probe family) over every test with n ≥ 2 (fewer
    samples have no p-value: they are neither tested nor counted in the correction).

    The name is historical: ``correction`` picks Bonferroni (default), Holm, BH or none.
    """
    procedure = get_correction(correction)
    for group, p_values in _tested_by_table(records):
        flags = procedure.significant(p_values, alpha)
        for record, flag, p_adj in zip(group, flags, procedure.adjust(p_values), strict=True):
            record["significant"] = bool(flag)
            record["tests_in_table"] = len(group)
            record["p_adjusted"] = _round(p_adj)


def pick_examples(probes: Sequence[Probe], rankers: Sequence[Ranker],
                  tables: Mapping[str, SampleTable],
                  probe_scores: Mapping[tuple[str, str], ProbeScores], context: ProbeContext,
                  per_probe: int) -> list[dict[str, Any]]:
    """A few samples per probe (seeded choice) with every ranker's two scores."""
    out: list[dict[str, Any]] = []
    for probe in probes:
        table = tables[probe.name]
        if not len(table) or per_probe <= 0:
            continue
        rng = context.rng("examples:" + probe.name)
        chosen = sorted(rng.choice(len(table), size=min(per_probe, len(table)), replace=False))
        for i in chosen:
            sample = table.sample(int(i))
            out.append({
                "probe": probe.name, "query": sample.query, "doc1": sample.doc1,
                "doc2": sample.doc2, "meta": _jsonable(sample.meta),
                # a ranker without samples of this probe (a pairwise or listwise ranker on a
                # probe of three documents) has no scores to show
                "scores": {r.name: [_round(float(probe_scores[(probe.name, r.name)].score1[i])),
                                    _round(float(probe_scores[(probe.name, r.name)].score2[i]))]
                           for r in rankers
                           if probe_scores[(probe.name, r.name)].score1.shape[0] == len(table)},
            })
    return out


def _add_fields(record: ResultRow, fields: Mapping[str, Any]) -> None:
    """Add a family's or the statistics' own fields to a row. Their names and values are
    checked against :class:`~abnirml.result_fields.ResultRow` when results.jsonl is
    written (a plugin family's fields may be ones the type does not declare)."""
    cast(dict[str, Any], record).update(fields)


@overload
def _round(value: float) -> float: ...
@overload
def _round(value: float | None) -> float | None: ...
def _round(value: float | None) -> float | None:
    """Round to 12 significant digits: stable across platforms' last-bit noise."""
    if value is None or not math.isfinite(value):
        return value
    return float(f"{value:.12g}")


def _jsonable(meta: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in meta.items():
        if isinstance(value, (str, int, float, bool)) or value is None:
            out[key] = value
        elif isinstance(value, np.generic):
            out[key] = value.item()
        elif isinstance(value, (list, tuple)):
            out[key] = [v.item() if isinstance(v, np.generic) else v for v in value]
        else:
            out[key] = str(value)
    return out
