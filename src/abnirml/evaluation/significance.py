"""Choice of significance test and multiple-comparison correction, and the effect size.

The defaults — two-sided paired t-test, Bonferroni over one table — are what the ABNIRML
papers did, so they stay the defaults and reproduce earlier results exactly. The others
answer known objections:

* ``wilcoxon`` — signed-rank test: no normality assumption on the score differences.
* ``permutation`` — Fisher's randomization test: under H0 the two scores of a sample are
  exchangeable, so each difference's sign is flipped at random; p is the share of seeded
  rounds whose |mean| reaches the observed one (with the +1 that keeps p > 0). With few
  samples (2ⁿ ≤ the rounds, n ≤ 16) every sign pattern is enumerated once: the exact p.
* ``bootstrap`` — the query-clustered bootstrap of the mean difference
  (:mod:`.bootstrap`): the only choice that respects that samples of one query are
  correlated. p is twice the share of resampled means on the far side of 0.

Rounds of the resampling tests. Their smallest attainable p is 1/(R+1) (permutation) or
2/(R+1) (two-sided bootstrap); a correction over m tests multiplies it by m, so too few
rounds can never reject, however large the effect. Unless the user names the count
(``--permutations N`` / ``--bootstrap N`` with the matching ``--test``), a table (family)
of m tests gets :func:`rounds_needed` rounds — the floor times m at most α/10 — or the
configured count when that is larger; each record says how many it used (``test_rounds``).
A count the user named that cannot reject is used as given, with one warning line.

For symmetric probes every test asks the one-sided question the score asks: is
|R(q,d1) − R(q,d2)| − δ greater than 0 on average?

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

from abnirml.evaluation.bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    MAX_RESAMPLES,
    cluster_codes,
    clustered_means,
    stable_seed,
    weight_blocks,
)
from abnirml.evaluation.statistics import greater_than_zero_p, paired_ttest_p

TESTS = ("ttest", "wilcoxon", "permutation", "bootstrap")
CORRECTIONS = ("bonferroni", "holm", "bh", "none")
DEFAULT_TEST = "ttest"
DEFAULT_CORRECTION = "bonferroni"
DEFAULT_PERMUTATIONS = 10_000
TEST_LABELS = {"ttest": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test",
               "permutation": "Fisher randomization test", "bootstrap":
               "query-clustered bootstrap test"}
CORRECTION_LABELS = {"bonferroni": "Bonferroni", "holm": "Holm", "bh": "Benjamini–Hochberg",
                     "none": "no"}


@dataclass(frozen=True)
class StatsConfig:
    """Test, correction, rounds of the resampling tests, interval coverage and the seed.

    ``resamples`` is the bootstrap size of the intervals (0 turns them off) and the least
    the bootstrap test uses; ``ci_level`` is the intervals' coverage. ``rounds_given``: the
    user named the count of the chosen resampling test's rounds, which is then used as
    given instead of being raised to what the table's correction needs.
    """

    test: str = DEFAULT_TEST
    correction: str = DEFAULT_CORRECTION
    permutations: int = DEFAULT_PERMUTATIONS
    resamples: int = DEFAULT_RESAMPLES
    ci_level: float = DEFAULT_LEVEL
    seed: int = 0
    rounds_given: bool = False

    def as_dict(self) -> dict[str, object]:
        return {"test": self.test, "correction": self.correction,
                "permutations": self.permutations, "bootstrap": self.resamples,
                "ci": self.ci_level, "seed": self.seed}


@dataclass(frozen=True)
class StatisticsSettings:
    """How a run decides what is an effect and what is significant: the level α, the δ
    given instead of calibrated, the test, its correction, the intervals and the rounds
    of the resampling tests (the ``run`` command's ``--alpha``, ``--delta``, ``--test``,
    ``--correction``, ``--bootstrap``, ``--ci`` and ``--permutations``)."""

    alpha: float = 0.01
    #: one fixed δ for every ranker (skips calibration); None: calibrated
    delta: float | None = None
    #: fixed δ per ranker name (the others are calibrated)
    deltas: dict[str, float] = field(default_factory=dict)
    test: str = DEFAULT_TEST               # one of TESTS
    correction: str = DEFAULT_CORRECTION   # multiple-comparison correction per table
    #: query-clustered bootstrap resamples (0: no CIs); None: 1,000 for the intervals and,
    #: with test="bootstrap", as many as the table's correction needs to reject
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
        given = ((self.test == "bootstrap" and self.bootstrap is not None)
                 or (self.test == "permutation" and self.permutations is not None))
        return check_config(StatsConfig(
            test=self.test, correction=self.correction,
            permutations=DEFAULT_PERMUTATIONS if self.permutations is None else self.permutations,
            resamples=DEFAULT_RESAMPLES if self.bootstrap is None else self.bootstrap,
            ci_level=self.ci, seed=seed, rounds_given=given))


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
    if test == "bootstrap" and config.resamples < 1:
        raise ConfigError("--test bootstrap needs --bootstrap N ≥ 1 resamples")
    if test not in TESTS:
        raise ConfigError(f"--test must be one of {', '.join(TESTS)}, got {test!r}")
    if correction not in CORRECTIONS:
        raise ConfigError(f"--correction must be one of {', '.join(CORRECTIONS)}, "
                          f"got {correction!r}")
    return config


REJECT_MARGIN = 10
"""Automatic rounds leave the smallest attainable corrected p at most α / this."""


def p_floor(test: str, rounds: int) -> float:
    """The smallest p-value ``rounds`` rounds of the resampling ``test`` can give."""
    return (2.0 if test == "bootstrap" else 1.0) / (rounds + 1)


def rounds_needed(test: str, tests: int, alpha: float, correction: str) -> int:
    """Rounds whose smallest p, corrected over ``tests`` tests, is at most α/10 (rounded
    up to a thousand). Bonferroni, Holm and BH all multiply the smallest p by the count."""
    m = 1 if correction == "none" else max(tests, 1)
    need = math.ceil((2.0 if test == "bootstrap" else 1.0) * m * REJECT_MARGIN / alpha) - 1
    return min(MAX_RESAMPLES, 1000 * math.ceil(need / 1000))


def configured_rounds(config: StatsConfig) -> int:
    return config.resamples if config.test == "bootstrap" else config.permutations


def test_rounds(config: StatsConfig, tests: int, alpha: float) -> int:
    """The rounds the resampling test uses in a table of ``tests`` tests."""
    configured = configured_rounds(config)
    if config.rounds_given:
        return configured
    return max(configured, rounds_needed(config.test, tests, alpha, config.correction))


def cannot_reject(config: StatsConfig, rounds: int, tests: int, alpha: float) -> bool:
    """True when no data can make a test of this table significant with ``rounds``."""
    m = 1 if config.correction == "none" else max(tests, 1)
    return p_floor(config.test, rounds) * m >= alpha


def warned_rounds(config: StatsConfig, tests: int, alpha: float, where: str) -> int:
    """:func:`test_rounds` for one table of ``tests`` tests, warning (one line) when a
    count the user named cannot reject any of them."""
    rounds = test_rounds(config, tests, alpha)
    if cannot_reject(config, rounds, tests, alpha):
        import warnings

        flag = "--bootstrap" if config.test == "bootstrap" else "--permutations"
        need = rounds_needed(config.test, tests, alpha, config.correction)
        warnings.warn(f"{flag} {rounds:,} cannot reject any test of {where} at α = {alpha:g} "
                      f"after the {config.correction} correction; use at least {need:,} "
                      f"(or leave {flag} out)", stacklevel=3)
    return rounds


def p_value(score1: np.ndarray, score2: np.ndarray, delta: float, symmetric: bool,
            config: StatsConfig, cluster: np.ndarray | None = None, key: Sequence[object] = (),
            rounds: int | None = None) -> float:
    """The chosen test's p-value; NaN when undefined (fewer than two samples).
    ``rounds``: the resampling test's rounds (None: the configured count).

    Values with no variation get 1 when all are 0 (every test agrees); the t-test's other
    degenerate case is in :mod:`.statistics`.
    """
    diff = np.asarray(score1, dtype=np.float64) - np.asarray(score2, dtype=np.float64)
    if config.test == "ttest":
        return (greater_than_zero_p(np.abs(diff) - delta) if symmetric
                else paired_ttest_p(score1, score2))
    values = np.abs(diff) - delta if symmetric else diff
    if values.shape[0] < 2:
        return math.nan
    if config.test == "wilcoxon":
        return wilcoxon_p(values, one_sided=symmetric)
    rng = np.random.default_rng(stable_seed(config.seed, config.test, *key))
    count = configured_rounds(config) if rounds is None else rounds
    if config.test == "permutation":
        return permutation_p(values, count, rng, one_sided=symmetric)
    return bootstrap_p(values, cluster, count, rng, one_sided=symmetric)


def wilcoxon_p(values: np.ndarray, one_sided: bool = False) -> float:
    """Wilcoxon signed-rank p-value of median(values) ≠ 0 (> 0 when ``one_sided``)."""
    if not np.any(values != 0):
        return 1.0
    from scipy.stats import wilcoxon

    result = wilcoxon(values, alternative="greater" if one_sided else "two-sided")
    return float(result.pvalue)


EXACT_SIGN_FLIPS = 16
"""Up to this many samples (and 2ⁿ ≤ the rounds asked for) the randomization test
enumerates all 2ⁿ sign patterns: the exact p-value, cheaper than the random rounds."""


def permutation_p(values: np.ndarray, rounds: int, rng: np.random.Generator,
                  one_sided: bool = False, chunk: int = 1 << 22) -> float:
    """Fisher randomization: flip each value's sign at random, ``rounds`` times (chunked);
    exact (every sign pattern once) when 2ⁿ ≤ ``rounds`` and n ≤ :data:`EXACT_SIGN_FLIPS`."""
    n = values.shape[0]
    observed = float(values.mean())
    tolerance = 1e-12 * max(float(np.abs(values).max()), 1e-300)
    if n <= EXACT_SIGN_FLIPS and 2 ** n <= rounds:
        codes = np.arange(2 ** n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)
        means = ((codes & 1) * 2 - 1).astype(np.float64) @ values / n
        if one_sided:
            return float(np.mean(means >= observed - tolerance))
        return float(np.mean(np.abs(means) >= abs(observed) - tolerance))
    reached = 0
    per_chunk = max(1, chunk // n)
    done = 0
    while done < rounds:
        m = min(per_chunk, rounds - done)
        signs = rng.integers(0, 2, size=(m, n), dtype=np.int8) * 2 - 1
        means = (signs @ values) / n
        if one_sided:
            reached += int((means >= observed - tolerance).sum())
        else:
            reached += int((np.abs(means) >= abs(observed) - tolerance).sum())
        done += m
    return (1 + reached) / (1 + rounds)


def bootstrap_p(values: np.ndarray, cluster: np.ndarray | None, resamples: int,
                rng: np.random.Generator, one_sided: bool = False) -> float:
    """Share of query-clustered bootstrap means on the far side of 0 (×2 when two-sided);
    NaN with one query, whose every resample is itself (no variation to test against).
    Resamples are drawn and counted in blocks, so memory does not grow with their number."""
    codes, k = cluster_codes(cluster, values.shape[0])
    if k < 2:
        return math.nan
    resamples = max(resamples, 1)
    low = high = 0
    for block in weight_blocks(k, resamples, rng):
        means = clustered_means(values, codes, k, block)
        low += int((means <= 0).sum())
        high += int((means >= 0).sum())
    below = (1 + low) / (1 + resamples)
    if one_sided:
        return min(1.0, below)
    above = (1 + high) / (1 + resamples)
    return min(1.0, 2.0 * min(below, above))


def adjust(p_values: Sequence[float], correction: str) -> list[float]:
    """Adjusted p-values (each compared with α) for one family of tests."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.shape[0]
    if m == 0:
        return []
    if correction == "none":
        return p.tolist()
    if correction == "bonferroni":
        return np.minimum(1.0, p * m).tolist()
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if correction == "holm":
        steps = np.maximum.accumulate((m - np.arange(m)) * ranked)
    elif correction == "bh":
        steps = np.minimum.accumulate((m * ranked / np.arange(1, m + 1))[::-1])[::-1]
    else:
        raise ValueError(correction)
    out = np.empty(m)
    out[order] = np.minimum(1.0, steps)
    return out.tolist()


def significant(p_values: Sequence[float], alpha: float, correction: str) -> list[bool]:
    """Which tests stay significant at ``alpha`` after ``correction`` over the family.

    Bonferroni is computed as ``p · m < α`` without clipping, exactly as before.
    """
    if correction == "bonferroni":
        m = len(p_values)
        return [p * m < alpha for p in p_values]
    return [q < alpha for q in adjust(p_values, correction)]


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
    """
    named = CORRECTION_LABELS.get(correction, correction)
    fixed = ("no multiple-testing correction" if correction == "none" else
             f"{named} correction over every test of one table (probe × ranker × subset "
             "with ≥ 2 samples)")
    return (f"two-sided {TEST_LABELS.get(test, test)} (symmetric probes: one-sided, "
            f"|R(q,d1) − R(q,d2)| − δ > 0), {fixed}, α = {alpha:g}")


def caption(test: str, correction: str, alpha: float, ci_level: float | None,
            resamples: int, test_rounds: Mapping[str, int] | None = None) -> str:
    """One paragraph for report captions: which test, correction, α and interval, and the
    rounds a resampling test used per table."""
    text = (f"Significance: {test_words(test, correction, alpha)}; with fewer than 2 "
            "samples p is undefined (–) and the score is never marked significant.")
    if test_rounds:
        unit = "resamples of queries" if test == "bootstrap" else "sign-flip rounds"
        text += (f" The test drew {unit} per table: "
                 + ", ".join(f"{family} {count:,}" for family, count in test_rounds.items())
                 + ".")
    if ci_level is not None and resamples > 0:
        text += (f" Brackets: {100 * ci_level:g} % query-clustered percentile bootstrap "
                 f"interval ({resamples:,} resamples of queries); a score that every sample "
                 "shares (±1, or 0 with all ties) gets the Clopper–Pearson interval over its "
                 "queries instead, and fewer than 2 queries get none (–).")
    return text


def record_fields(score1: np.ndarray, score2: np.ndarray, delta: float, symmetric: bool,
                  config: StatsConfig, cluster: np.ndarray | None,
                  key: Sequence[object]) -> dict[str, float | None]:
    """The fields this module adds to a result record: effect size and intervals.

    One bootstrap draw serves both intervals (score and mean difference), so they describe
    the same resampled queries. When every sample has the same effect the score's
    percentile interval would be a point; the Clopper–Pearson bound replaces it
    (:func:`.bootstrap.unanimous_interval`).
    """
    from abnirml.evaluation.bootstrap import cluster_codes, clustered_ci, unanimous_interval
    from abnirml.evaluation.statistics import effects

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
        if effect.min() == effect.max():
            _, clusters = cluster_codes(cluster, effect.shape[0])
            score_low, score_high = unanimous_interval(float(effect[0]), clusters,
                                                       config.ci_level, symmetric)
        fields.update(ci_low=score_low, ci_high=score_high,
                      mean_diff_ci_low=float(low[1]), mean_diff_ci_high=float(high[1]))
    return fields


def add_arguments(parser: object, inherit: bool = False) -> None:
    """Register ``--test``, ``--correction``, ``--bootstrap``, ``--ci``, ``--permutations``.

    With ``inherit`` (``abnirml compare``) the defaults are None: use the run's settings.
    """
    add = parser.add_argument  # type: ignore[attr-defined]
    add("--test", choices=TESTS, default=None if inherit else DEFAULT_TEST,
        help="significance test (default: paired t-test, as the papers)")
    add("--correction", choices=CORRECTIONS, default=None if inherit else DEFAULT_CORRECTION,
        help="multiple-comparison correction per table (default: Bonferroni)")
    add("--bootstrap", type=int, metavar="N", default=None,
        help=f"query-clustered bootstrap resamples for intervals ({DEFAULT_RESAMPLES}; 0: off); "
             "with --test bootstrap also the test's resamples (default: enough for the "
             "table's correction to reject at α)")
    add("--ci", type=float, metavar="LEVEL", default=None if inherit else DEFAULT_LEVEL,
        help=f"interval coverage ({DEFAULT_LEVEL})")
    add("--permutations", type=int, metavar="N", default=None,
        help=f"rounds of the permutation test (default: at least {DEFAULT_PERMUTATIONS:,}, "
             "more when the table's correction needs them to reject at α)")


def from_arguments(args: object, base: StatsConfig | None = None, seed: int | None = None
                   ) -> StatsConfig:
    """A checked StatsConfig from parsed arguments; None arguments keep ``base``'s values."""
    base = base if base is not None else StatsConfig()

    def pick(name: str, default: object) -> object:
        value = getattr(args, name, None)
        return default if value is None else value

    test = str(pick("test", base.test))
    named = {"bootstrap": "bootstrap", "permutation": "permutations"}.get(test)
    given = base.rounds_given or (named is not None and getattr(args, named, None) is not None)
    return check_config(StatsConfig(
        test=test, correction=str(pick("correction", base.correction)), rounds_given=given,
        permutations=int(pick("permutations", base.permutations)),  # type: ignore[arg-type]
        resamples=int(pick("bootstrap", base.resamples)),  # type: ignore[arg-type]
        ci_level=float(pick("ci", base.ci_level)),  # type: ignore[arg-type]
        seed=base.seed if seed is None else seed))
