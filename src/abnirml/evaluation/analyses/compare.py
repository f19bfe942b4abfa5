"""What changed in behaviour between two models (or two checkpoints of one)?

For each probe both models scored on the *same* samples, the per-sample effects of model A
(with A's δ) and of model B (with B's δ) are paired; a two-sided test over the changes of
effect, corrected over the compared probes, says whether B behaves differently from A on
that probe. Effects rather than raw score differences are compared because two models'
scores live on different scales; δ puts them on one.

The test and correction are the run's (``--test``, ``--correction``: the query-clustered
bootstrap test and Bonferroni by default) or chosen for the comparison, through the same
machinery as the run's records (:mod:`.significance`); the difference of the two scores
gets a query-clustered bootstrap interval — of zero width when every sample has the same
effect under both (a ranker compared with itself), since nothing is left to resample. The
report's key findings compare every pair of a run's rankers with this function, with the
paired t-test where the run's test resamples (:func:`abnirml.report.findings.screening_stats`).

Samples are matched by the digest stored with each probe's scores: two runs built from the
same collection, probes, options and seed produce identical samples. Probes whose samples
differ are reported as such and not tested.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from abnirml.errors import ConfigError
from abnirml.evaluation.execution.experiment import subset_masks
from abnirml.evaluation.execution.score_file import ScoreStore
from abnirml.evaluation.stats.corrections import significant
from abnirml.evaluation.stats.significance import StatsConfig, p_value, warned_rounds
from abnirml.evaluation.stats.stat_tests import get_test
from abnirml.evaluation.stats.statistics import defined_p, effects


@dataclass(frozen=True)
class ProbeComparison:
    probe: str
    family: str
    subset: str
    n: int
    score_a: float | None
    score_b: float | None
    changed: int                 # samples whose effect differs between A and B
    p_value: float | None
    significant: bool
    note: str = ""
    diff_ci_low: float | None = None     # interval of score B − score A (queries resampled)
    diff_ci_high: float | None = None


def pick_ranker(store: ScoreStore, name: str | None, which: str) -> str:
    names = store.ranker_names
    if name is None:
        if len(names) != 1:
            raise ConfigError(f"--{which}: the results hold several rankers "
                              f"({', '.join(names)}); name one")
        return names[0]
    if name not in names:
        from abnirml.errors import did_you_mean

        raise ConfigError(f"--{which}: no ranker {name!r} in these results"
                          f"{did_you_mean(name, names)}; have {', '.join(names)}")
    return name


def compare(store_a: ScoreStore, ranker_a: str, store_b: ScoreStore, ranker_b: str,
            alpha: float | None = None, subsets: Sequence[str] = ("all",),
            stats: StatsConfig | None = None,
            intervals: Mapping[tuple[str, str], Any] | None = None) -> list[ProbeComparison]:
    """Per probe (and subset): both scores, how many effects changed, and the paired test.

    ``stats`` (test, correction, intervals) defaults to the settings A was run with;
    ``intervals``: (probe, subset) → the interval of the change, already drawn
    (:func:`ranker_pairs`).
    """
    from abnirml.evaluation.stats.bootstrap import cluster_codes, clustered_ci, unanimous_range

    alpha = store_a.alpha if alpha is None else alpha
    stats = store_a.stats if stats is None else stats
    delta_a = store_a.calibrations[ranker_a].delta
    delta_b = store_b.calibrations[ranker_b].delta
    probes_b = {p.name: p for p in store_b.probes}
    rounds = None
    if get_test(stats.test).resamples:             # enough for the correction to reject
        tests = sum(1 for p in store_a.probes if p.name in probes_b) * len(subsets)
        rounds = warned_rounds(stats, tests, alpha, "the comparison")
    out: list[ProbeComparison] = []
    for probe in store_a.probes:
        other = probes_b.get(probe.name)
        if other is None:
            out.append(ProbeComparison(probe.name, probe.family, "all", 0, None, None, 0, None,
                                       False, "only in A"))
            continue
        if probe.digest and other.digest and probe.digest != other.digest:
            out.append(ProbeComparison(probe.name, probe.family, "all", 0, None, None, 0, None,
                                       False, "different samples in A and B; not compared"))
            continue
        a = store_a.scores[(probe.name, ranker_a)]
        b = store_b.scores[(probe.name, ranker_b)]
        if a.score1.shape != b.score1.shape:
            out.append(ProbeComparison(probe.name, probe.family, "all", 0, None, None, 0, None,
                                       False, "different sample counts; not compared"))
            continue
        eff_a = effects(a.score1 - a.score2, delta_a, probe.symmetric).astype(np.float64)
        eff_b = effects(b.score1 - b.score2, delta_b, probe.symmetric).astype(np.float64)
        for subset, mask in subset_masks(a.grade, store_a.grade_bands):
            if subset not in subsets:
                continue
            ea, eb = eff_a[mask], eff_b[mask]
            n = int(ea.shape[0])
            cluster = None if a.cluster is None else a.cluster[mask]
            key = ("compare", probe.name, subset)
            change = eb - ea
            p = defined_p(p_value(eb, ea, 0.0, False, stats, cluster, key, rounds,
                                  statistic=change)) if n else None
            interval = (intervals[(probe.name, subset)]
                        if intervals is not None and (probe.name, subset) in intervals
                        else clustered_ci(change, cluster, stats.resamples, stats.ci_level,
                                          stats.seed, key))
            low, high = (None, None) if interval is None else (float(interval[0]),
                                                               float(interval[1]))
            if interval is not None and not change.any():
                # identical effects on every sample: the two behave alike on exactly these
                # samples, so their difference is 0 with no uncertainty to resample
                low, high = 0.0, 0.0
            elif interval is not None and change.min() == change.max():
                # every sample changed alike: not a point interval (few queries, one value)
                width = 1.0 if probe.symmetric else 2.0   # effects differ by at most this
                low, high = unanimous_range(float(change[0]), cluster_codes(cluster, n)[1],
                                            stats.ci_level, -width, width)
            out.append(ProbeComparison(
                probe.name, probe.family, subset, n,
                float(ea.mean()) if n else None, float(eb.mean()) if n else None,
                int((ea != eb).sum()), p, False, "", low, high))
    for name in sorted({p.name for p in store_b.probes} - {p.name for p in store_a.probes}):
        info = probes_b[name]
        out.append(ProbeComparison(name, info.family, "all", 0, None, None, 0, None, False,
                                   "only in B"))
    tested = [i for i, c in enumerate(out) if c.p_value is not None and c.n >= 2]
    tested_p = [c.p_value for c in out if c.p_value is not None and c.n >= 2]
    flags = significant(tested_p, alpha, stats.correction)
    for i, flag in zip(tested, flags, strict=True):
        c = out[i]
        out[i] = ProbeComparison(c.probe, c.family, c.subset, c.n, c.score_a, c.score_b,
                                 c.changed, c.p_value, bool(flag), c.note, c.diff_ci_low,
                                 c.diff_ci_high)
    return out


def ranker_pairs(store: ScoreStore, stats: StatsConfig | None = None
                 ) -> dict[tuple[str, str], dict[str, ProbeComparison]]:
    """Every pair of the run's rankers compared on the same samples (subset ``all``):
    (A, B) in run order → probe → :func:`compare`'s row, whose ``score_b − score_a`` is
    B's difference from A. The report's contrast findings read it both ways."""
    names = store.ranker_names
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    drawn = _pair_intervals(store, pairs, store.stats if stats is None else stats)
    return {(a, b): {row.probe: row for row in compare(store, a, store, b, stats=stats,
                                                        intervals=drawn[(a, b)])}
            for a, b in pairs}


def _pair_intervals(store: ScoreStore, pairs: Sequence[tuple[str, str]], stats: StatsConfig
                    ) -> dict[tuple[str, str], dict[tuple[str, str], Any]]:
    """(A, B) → (probe, "all") → the interval :func:`compare` draws for the change of
    effect, for every pair at once: the pairs of a probe resample the same queries (its
    key names no ranker), and changes of effect are integers, so one product gives each
    pair exactly the resampled changes its own would (pairs whose rankers were scored on
    other samples are left to :func:`compare`)."""
    from abnirml.evaluation.stats.bootstrap import clustered_ci

    out: dict[tuple[str, str], dict[tuple[str, str], Any]] = {pair: {} for pair in pairs}
    rankers = list(dict.fromkeys(r for pair in pairs for r in pair))
    for probe in store.probes:
        scored = {r: store.scores[(probe.name, r)] for r in rankers
                  if (probe.name, r) in store.scores}
        if not scored:
            continue
        first = next(iter(scored.values()))
        alike = {r: ps for r, ps in scored.items()
                 if ps.score1.shape == first.score1.shape and _same_queries(ps.cluster,
                                                                          first.cluster)}
        usable = [(a, b) for a, b in pairs if a in alike and b in alike]
        if not usable or not first.score1.shape[0]:
            continue
        effect = {r: effects(ps.score1 - ps.score2, store.calibrations[r].delta,
                             probe.symmetric).astype(np.float64) for r, ps in alike.items()}
        change = np.stack([effect[b] - effect[a] for a, b in usable], axis=1)
        interval = clustered_ci(change, first.cluster, stats.resamples, stats.ci_level,
                                stats.seed, ("compare", probe.name, "all"))
        for j, pair in enumerate(usable):
            out[pair][(probe.name, "all")] = (None if interval is None
                                              else (interval[0][j], interval[1][j]))
    return out


def _same_queries(one: np.ndarray | None, other: np.ndarray | None) -> bool:
    """Whether two rankers' samples of a probe belong to the same queries."""
    if one is None or other is None:
        return one is None and other is None
    return bool(np.array_equal(one, other))
