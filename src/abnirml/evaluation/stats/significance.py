"""Choice of significance test and multiple-comparison correction, and the effect size.

Each test is a record (:class:`~abnirml.evaluation.stats.stat_tests.StatisticalTest`) in one
registry; the built-in ones (:data:`~.built_in_tests.BUILT_IN_TESTS`) are:

* ``clustered`` (the default) — the query-clustered bootstrap test of the *score*, drawn
  with the same resampled queries as the score interval the report prints beside it. Its
  verdict is that interval: the interval is taken at the level the table's correction gives
  the row (1 − α/m for Bonferroni over m tests), so a row is significant exactly when its
  interval excludes 0 (:mod:`.verdict`). Samples of one query share it and often its
  documents; this test counts queries, not samples, as the independent draws, and with k
  queries gives no p below 2/2ᵏ (:func:`.verdict.query_floor`).
* ``ttest`` — the two-sided paired t-test over (R(q,d1), R(q,d2)) of the ABNIRML papers,
  kept to reproduce their tables: it treats every sample as independent.
* ``wilcoxon`` — signed-rank test: no normality assumption on the score differences.
* ``permutation`` — Fisher's randomization test: under H0 the two scores of a sample are
  exchangeable, so each difference's sign is flipped at random; p is the share of seeded
  rounds whose |mean| reaches the observed one (with the +1 that keeps p > 0). With few
  samples (2ⁿ ≤ the rounds, n ≤ 16) every sign pattern is enumerated once: the exact p.
* ``bootstrap`` — the query-clustered bootstrap of the mean difference
  (:mod:`.bootstrap`). p is twice the share of resampled means on the far side of 0, and
  never below 2/2ᵏ with k queries (one-sided 1/2ᵏ).

Rounds of the resampling tests follow one rule (:mod:`.stat_tests`): unless the user names
the count, a table of m tests gets enough rounds for its correction to reject; each record
says how many it used (``test_rounds``).

For symmetric probes the sample-level tests ask the one-sided question: is
|R(q,d1) − R(q,d2)| − δ greater than 0 on average? The clustered test asks the score's own
one-sided question: is the share of pairs told apart (|diff| > δ) above 0?

Corrections, over every test of one table (probe family): ``bonferroni`` (family-wise,
the papers'), ``holm`` (family-wise, uniformly more powerful), ``bh`` (Benjamini–Hochberg,
false-discovery rate) and ``none``. A test is significant when its adjusted p-value is
strictly below α.

The effect size is Cohen's d_z for paired data: mean difference / SD of the differences
(None for symmetric probes, whose score is already a rate).
With thousands of samples almost everything is significant; d_z says how large the shift is
relative to its noise (|d_z| ≈ 0.2 small, 0.5 medium, 0.8 large by Cohen's rule of thumb).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from abnirml.evaluation.stats.bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    MAX_RESAMPLES,
    cluster_codes,
    stable_seed,
)
from abnirml.evaluation.stats.built_in_tests import (  # noqa: F401  (re-exported)
    EXACT_SIGN_FLIPS,
    bootstrap_p,
    permutation_p,
    wilcoxon_p,
)
from abnirml.evaluation.stats.corrections import (
    DEFAULT_CORRECTION,
    correction_help,
    correction_names,
    find_correction,
    get_correction,
)
from abnirml.evaluation.stats.stat_tests import (
    TestData,
    configured_rounds,
    get_test,
    rounds_for,
    warn_if_blocked,
)
from abnirml.evaluation.stats.statistics import effects

DEFAULT_TEST = "clustered"
DEFAULT_PERMUTATIONS = 10_000


@dataclass(frozen=True)
class StatisticsSettings:
    """How a run decides what is an effect and what is significant: the level α, the δ
    given instead of calibrated, the test, its correction, the intervals and the rounds
    of the resampling tests (the ``run`` command's ``--alpha``, ``--delta``, ``--test``,
    ``--correction``, ``--bootstrap``, ``--ci`` and ``--permutations``)."""

    #: the significance level α; every other default of α (the CLI's ``--alpha``, the
    #: engine's, the report's for a run.json without it) is read from this one
    alpha: float = 0.01
    #: one fixed δ for every ranker (skips calibration); None: calibrated
    delta: float | None = None
    #: fixed δ per ranker name (the others are calibrated)
    deltas: dict[str, float] = field(default_factory=dict)
    test: str = DEFAULT_TEST               # a registered test's name (stat_tests)
    correction: str = DEFAULT_CORRECTION   # multiple-comparison correction per table
    #: query-clustered bootstrap resamples (0: no CIs); None: 1,000 for the intervals and,
    #: with a test that resamples queries, as many as the table's correction needs to reject
    bootstrap: int | None = None
    ci: float = DEFAULT_LEVEL              # interval coverage
    #: rounds of the permutation test; None: at least 10,000, more when the correction needs
    permutations: int | None = None

    @classmethod
    def from_args(cls, args: Any, delta: float | None = None,
                  deltas: Mapping[str, float] | None = None) -> StatisticsSettings:
        """The settings ``run``'s flags give (:func:`add_arguments` and ``--alpha``);
        ``delta``/``deltas`` are its parsed ``--delta`` values."""
        return cls(alpha=args.alpha, delta=delta, deltas=dict(deltas or {}), test=args.test,
                   correction=args.correction, bootstrap=args.bootstrap, ci=args.ci,
                   permutations=args.permutations)

    def stats(self, seed: int) -> StatsConfig:
        """The checked test settings the engine uses (the automatic counts filled in)."""
        rule = get_test(self.test).rounds
        given = rule is not None and getattr(self, rule.option) is not None
        return check_config(StatsConfig(
            test=self.test, correction=self.correction,
            permutations=DEFAULT_PERMUTATIONS if self.permutations is None else self.permutations,
            resamples=DEFAULT_RESAMPLES if self.bootstrap is None else self.bootstrap,
            ci_level=self.ci, seed=seed, rounds_given=given))


#: The one set of statistics defaults: the CLI's flags, the pipeline, the engine
#: (:class:`StatsConfig`) and the report (:func:`abnirml.run_record.statistics_of`) read them
#: here.
STATISTICS_DEFAULTS = StatisticsSettings()


@dataclass(frozen=True)
class StatsConfig:
    """Test, correction, rounds of the resampling tests, interval coverage and the seed.

    ``resamples`` is the bootstrap size of the intervals (0 turns them off) and the least
    the bootstrap test uses; ``ci_level`` is the intervals' coverage. ``rounds_given``: the
    user named the count of the chosen resampling test's rounds, which is then used as
    given instead of being raised to what the table's correction needs.

    It is the engine's view of :class:`StatisticsSettings`, not a second set of settings:
    the counts the user left to the tool (None there) are resolved here, and the names
    are the engine's (``resamples``, ``ci_level``). Its defaults are drawn from
    :data:`STATISTICS_DEFAULTS`, so a default is written once.
    """

    test: str = STATISTICS_DEFAULTS.test
    correction: str = STATISTICS_DEFAULTS.correction
    permutations: int = DEFAULT_PERMUTATIONS
    resamples: int = DEFAULT_RESAMPLES
    ci_level: float = STATISTICS_DEFAULTS.ci
    seed: int = 0
    rounds_given: bool = False

    def as_dict(self) -> dict[str, object]:
        return {"test": self.test, "correction": self.correction,
                "permutations": self.permutations, "bootstrap": self.resamples,
                "ci": self.ci_level, "seed": self.seed}


def check_config(config: StatsConfig) -> StatsConfig:
    """Refuse impossible settings with one clear line (ConfigError → exit 2)."""
    from abnirml.errors import ConfigError

    test, correction = config.test, config.correction
    if config.resamples < 0:
        raise ConfigError(f"--bootstrap must be ≥ 0 resamples (0 = no intervals), "
                          f"got {config.resamples}")
    if not (0.0 < config.ci_level < 1.0):
        raise ConfigError(f"--ci must be a coverage in (0, 1), e.g. 0.95, got {config.ci_level}")
    if config.permutations < 1:
        raise ConfigError(f"--permutations must be ≥ 1, got {config.permutations}")
    for flag, count in (("--bootstrap", config.resamples), ("--permutations",
                                                            config.permutations)):
        if count > MAX_RESAMPLES:
            raise ConfigError(f"{flag} {count:,} is above the {MAX_RESAMPLES:,} this tool "
                              "accepts (the intervals keep one value per resample)")
    record = get_test(test)
    rule = record.rounds
    if rule is not None and configured_rounds(record, config) < rule.least:
        raise ConfigError(f"--test {test} needs {rule.flag} N ≥ {rule.least} {rule.unit}")
    get_correction(correction)          # an unknown name: one line naming the known ones
    return config


def test_rounds(config: StatsConfig, tests: int, alpha: float) -> int:
    """The rounds the resampling test uses in a table of ``tests`` tests (:mod:`.stat_tests`)."""
    return rounds_for(config, tests, alpha)


def warned_rounds(config: StatsConfig, tests: int, alpha: float, where: str) -> int:
    """:func:`test_rounds` for one table of ``tests`` tests, warning (one line) when a
    count the user named cannot reject any of them."""
    rounds = rounds_for(config, tests, alpha)
    warn_if_blocked(config, {where: rounds}, {where: tests}, alpha, stacklevel=4)
    return rounds


def p_value(score1: np.ndarray, score2: np.ndarray, delta: float, symmetric: bool,
            config: StatsConfig, cluster: np.ndarray | None = None, key: Sequence[object] = (),
            rounds: int | None = None, statistic: np.ndarray | None = None) -> float:
    """The chosen test's p-value; NaN when undefined (fewer than two samples).
    ``rounds``: the resampling test's rounds (None: the configured count); ``statistic``:
    the per-sample values whose mean the row shows (None: the effects at ``delta``).

    Values with no variation get 1 when all are 0 (every test agrees); the t-test's other
    degenerate case is in :mod:`.statistics`.
    """
    test = get_test(config.test)
    if np.asarray(score1).shape[0] < 2:
        return math.nan
    if statistic is None and test.score_interval:
        diff = np.asarray(score1, dtype=np.float64) - np.asarray(score2, dtype=np.float64)
        statistic = effects(diff, delta, symmetric).astype(np.float64)
    elif statistic is None:
        statistic = np.zeros(0)
    count = configured_rounds(test, config) if rounds is None else rounds
    return test.p_value(TestData(
        score1, score2, delta, symmetric, np.asarray(statistic, dtype=np.float64), cluster,
        count, np.random.default_rng(stable_seed(config.seed, config.test, *key))))


def effect_size(score1: np.ndarray, score2: np.ndarray, delta: float,
                symmetric: bool = False) -> float | None:
    """Cohen's d_z: mean paired difference / SD of the differences (None when undefined).

    Symmetric probes get None: their d1/d2 order is arbitrary, so the signed difference has
    no direction to standardise, and their score — the share of pairs the ranker tells
    apart — is already a rate, the natural effect size.
    """
    if symmetric:
        return None
    values = np.asarray(score1, dtype=np.float64) - np.asarray(score2, dtype=np.float64)
    if values.shape[0] < 2:
        return None
    sd = float(values.std(ddof=1))
    mean = float(values.mean())
    scale = max(float(np.abs(values).max()), 1e-300)
    if sd <= 1e-12 * scale:
        return None
    value = mean / sd
    return value if math.isfinite(value) else None


def test_words(test: str, correction: str, alpha: float) -> str:
    """The test, its sidedness, the correction's family and α, in words a reviewer can check.

    Every test is two-sided except for symmetric probes, whose test is one-sided; the
    correction covers every test of one table (probe × ranker × subset with ≥ 2 samples).
    A test this process does not know (a plugin's, read back from a run) is named as is.
    """
    from abnirml.evaluation.stats.stat_tests import find_test

    record = find_test(test)
    label = record.label if record is not None else test
    question = (record.symmetric_question if record is not None
                else "|R(q,d1) − R(q,d2)| − δ > 0")
    known = find_correction(correction)
    fixed = ("no multiple-testing correction" if known is not None and not known.adjusts
             else f"{known.label if known is not None else correction} correction over "
             "every test of one table (probe × ranker × subset with ≥ 2 samples)")
    return (f"two-sided {label} (symmetric probes: one-sided, {question}), {fixed}, "
            f"α = {alpha:g}")


def caption(test: str, correction: str, alpha: float, ci_level: float | None,
            resamples: int, test_rounds: Mapping[str, int] | None = None) -> str:
    """One paragraph for report captions: which test, correction, α and interval, and the
    rounds a resampling test used per table."""
    from abnirml.evaluation.stats.stat_tests import find_test

    record = find_test(test)
    text = (f"Significance: {test_words(test, correction, alpha)}; with fewer than 2 "
            "samples p is undefined (–) and the score is never marked significant.")
    if test_rounds:
        unit = (record.rounds.unit if record is not None and record.rounds is not None
                else "rounds")
        text += (f" The test drew {unit} per table: "
                 + ", ".join(f"{family} {count:,}" for family, count in test_rounds.items())
                 + ".")
    floor = (" With k queries no p is below 2/2ᵏ (one-sided 1/2ᵏ), the least an exact test "
             "over the queries can give when every query leans one way (the row's "
             "`p_floor`): a row needs more than 1 + log₂(1/level) queries to be "
             "significant at its level." if record is not None and record.queries_as_unit
             else "")
    if record is not None and record.score_interval:
        floor = floor.replace(" (one-sided 1/2ᵏ)", "").replace(
            "at its level.", "at its level (symmetric probes, whose one-sided question one "
                             "told-apart pair settles, have no floor).")
    if ci_level is None or resamples <= 0:
        return text + floor
    perfect = (" No score's bracket claims more than a perfect score over as many queries "
               "could: a score that every sample shares (±1, or 0 with all ties) gets the "
               "Clopper–Pearson interval over its queries, no other bracket's lower end is "
               "above that bound for +1 nor its upper end below the one for −1 (symmetric "
               "probes: shares of 1 and 0), and fewer than 2 queries get none (–).")
    if record is not None and record.score_interval:
        two, one = _coverage_words(correction)
        return text + floor + (
            " Score brackets: the test's own query-clustered percentile bootstrap interval, "
            "drawn from the same resampled queries, each end a quantile at the level the "
            f"correction tests the row at: coverage {two} ({one} for symmetric probes, "
            "tested one-sided, each end a one-sided bound at that level); a score is "
            "significant exactly when its bracket excludes 0." + perfect.replace(
                "Clopper–Pearson interval over its queries,",
                "Clopper–Pearson interval over its queries at that coverage,")
            + f" Mean-difference brackets: {100 * ci_level:g} % ({resamples:,} resamples "
            "of queries).")
    return text + floor + (
        f" Brackets: {100 * ci_level:g} % query-clustered percentile bootstrap "
        f"interval ({resamples:,} resamples of queries)." + perfect)


def _coverage_words(correction: str) -> tuple[str, str]:
    """A score interval's coverage under ``correction``, two-sided and one-sided, in words:
    a formula where every row of a table shares the level, else the procedure named."""
    known = find_correction(correction)
    formula = None if known is None else known.level_formula
    if known is None or formula is None:
        label = correction if known is None else known.label
        return (f"1 − the level the {label} procedure tests the row at",
                "1 − twice that level")
    table = " for a table of m tests" if known.adjusts else ""
    return f"1 − {formula}{table}", f"1 − 2{formula}"


def record_fields(score1: np.ndarray, score2: np.ndarray, delta: float, symmetric: bool,
                  config: StatsConfig, cluster: np.ndarray | None,
                  key: Sequence[object]) -> dict[str, float | None]:
    """The fields this module adds to a result record: effect size and intervals.

    One bootstrap draw serves both intervals (score and mean difference), so they describe
    the same resampled queries. When every sample has the same effect the score's
    percentile interval would be a point; the Clopper–Pearson bound replaces it
    (:func:`.bootstrap.unanimous_interval`), and no other score's interval claims more than
    that bound for a perfect score over as many queries (:func:`.verdict.perfect_bounds`):
    a stronger effect never reads weaker.
    """
    from abnirml.evaluation.stats.bootstrap import clustered_ci, unanimous_interval
    from abnirml.evaluation.stats.statistics import effects
    from abnirml.evaluation.stats.verdict import perfect_bounds

    diff = np.asarray(score1, dtype=np.float64) - np.asarray(score2, dtype=np.float64)
    fields: dict[str, float | None] = {
        "effect_size": effect_size(score1, score2, delta, symmetric),
        "ci_low": None, "ci_high": None, "mean_diff_ci_low": None, "mean_diff_ci_high": None}
    effect = effects(diff, delta, symmetric).astype(np.float64)
    values = np.stack([effect, diff], axis=1)
    interval = clustered_ci(values, cluster, config.resamples, config.ci_level, config.seed,
                            ("ci", *key))
    if interval is not None:
        low, high = interval
        score_low, score_high = float(low[0]), float(high[0])
        _, clusters = cluster_codes(cluster, effect.shape[0])
        if effect.min() == effect.max():
            score_low, score_high = unanimous_interval(float(effect[0]), clusters,
                                                       config.ci_level, symmetric)
        else:
            top, bottom = perfect_bounds(clusters, config.ci_level, symmetric)
            score_low, score_high = min(score_low, top), max(score_high, bottom)
        fields.update(ci_low=score_low, ci_high=score_high,
                      mean_diff_ci_low=float(low[1]), mean_diff_ci_high=float(high[1]))
    return fields


def add_arguments(parser: object, inherit: bool = False) -> None:
    """Register ``--test``, ``--correction``, ``--bootstrap``, ``--ci``, ``--permutations``;
    ``--test``'s names and help come from the registered tests' records.

    With ``inherit`` (``abnirml compare``) the defaults are None: use the run's settings.
    """
    from abnirml.evaluation.stats.stat_tests import registered_tests

    add = parser.add_argument  # type: ignore[attr-defined]
    records = registered_tests()
    # no argparse choices: a plugin's test is registered after the arguments are parsed,
    # and check_config refuses an unknown name in one line with the closest ones
    add("--test", metavar="{" + ",".join(records) + "}",
        default=None if inherit else STATISTICS_DEFAULTS.test,
        help="significance test: " + "; ".join(
            f"{name}: {record.help or record.label}" for name, record in records.items())
        + f" (default: {STATISTICS_DEFAULTS.test})")
    # no argparse choices either, for the same reason: check_config refuses an unknown
    # correction in one line naming the registered ones
    add("--correction", metavar="{" + ",".join(correction_names()) + "}",
        default=None if inherit else STATISTICS_DEFAULTS.correction,
        help="multiple-comparison correction per table: " + correction_help()
        + f" (default: {STATISTICS_DEFAULTS.correction})")
    add("--bootstrap", type=int, metavar="N", default=None,
        help=f"query-clustered bootstrap resamples for intervals ({DEFAULT_RESAMPLES}; 0: off); "
             "with a test that resamples queries also the test's resamples (default: "
             "enough for the table's correction to reject at α)")
    add("--ci", type=float, metavar="LEVEL",
        default=None if inherit else STATISTICS_DEFAULTS.ci,
        help=f"interval coverage ({DEFAULT_LEVEL}; with --test {DEFAULT_TEST} the score "
             "interval takes the test's own level)")
    add("--permutations", type=int, metavar="N", default=None,
        help=f"rounds of the permutation test (default: at least {DEFAULT_PERMUTATIONS:,}, "
             "more when the table's correction needs them to reject at α)")


def from_arguments(args: object, base: StatsConfig | None = None, seed: int | None = None
                   ) -> StatsConfig:
    """A checked StatsConfig from parsed arguments; None arguments keep ``base``'s values."""
    base = base if base is not None else StatsConfig()

    def pick(name: str, default: Any) -> Any:
        value = getattr(args, name, None)
        return default if value is None else value

    test = str(pick("test", base.test))
    rule = get_test(test).rounds
    given = base.rounds_given or (rule is not None
                                  and getattr(args, rule.option, None) is not None)
    return check_config(StatsConfig(
        test=test, correction=str(pick("correction", base.correction)), rounds_given=given,
        permutations=int(pick("permutations", base.permutations)),
        resamples=int(pick("bootstrap", base.resamples)),
        ci_level=float(pick("ci", base.ci_level)),
        seed=base.seed if seed is None else seed))
