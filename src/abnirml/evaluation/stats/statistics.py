"""Effects, probe scores and significance, as the ABNIRML papers define them.

eff = +1 if R(q,d1) − R(q,d2) > δ, −1 if < −δ, else 0; the probe score is the mean effect.
Symmetric probes (paraphrase) count eff = 1 when |diff| > δ and 0 otherwise, so their score
lies in [0, 1]. Significance is a two-sided paired t-test over the (R(q,d1), R(q,d2))
pairs with a Bonferroni correction over every test of one table.

For symmetric probes the paired t-test is meaningless (d1 and d2 are exchangeable, so the
sign of the difference is arbitrary). There the test asks what the score measures — are the
score differences larger than δ? — as a one-sided one-sample t-test of |diff| − δ > 0.

Where a t statistic does not exist the p-value says so instead of inventing one: fewer than
two samples give NaN (undefined, never tested or corrected), and differences that are all
equal (standard deviation 0, so t would be 0/0 or ±∞) get the exact p-value of the
sign-flip randomization test, which needs no variance: 1 when every difference is 0, and
2 · 2⁻ⁿ (one-sided: 2⁻ⁿ) when all n differences are the same non-zero value — the chance
that n fair coin flips all land the same way. A t-test would call even two such samples
infinitely significant (p = 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


def effects(diff: np.ndarray, delta: float, symmetric: bool = False) -> np.ndarray:
    """Per-sample effect (int8) of score differences ``diff`` = R(q,d1) − R(q,d2)."""
    signs: np.ndarray = ((np.abs(diff) > delta).astype(np.int8) if symmetric
                         else (diff > delta).astype(np.int8) - (diff < -delta).astype(np.int8))
    return signs


@dataclass(frozen=True)
class EffectSummary:
    n: int
    pos: int
    neg: int
    neutral: int
    score: float | None
    mean_diff: float | None
    score1: np.ndarray = field(repr=False, compare=False)
    score2: np.ndarray = field(repr=False, compare=False)
    delta: float = 0.0
    symmetric: bool = False

    @cached_property
    def p_value(self) -> float:
        """The papers' t-test (module docstring), computed when first read: a run whose
        test is another never pays for it."""
        if self.symmetric:
            return greater_than_zero_p(np.abs(self.score1 - self.score2) - self.delta)
        return paired_ttest_p(self.score1, self.score2)


def summarize(score1: np.ndarray, score2: np.ndarray, delta: float,
              symmetric: bool = False) -> EffectSummary:
    diff = score1 - score2
    eff = effects(diff, delta, symmetric)
    n = int(diff.shape[0])
    pos = int((eff > 0).sum())
    neg = int((eff < 0).sum())
    return EffectSummary(
        n=n, pos=pos, neg=neg, neutral=n - pos - neg,
        score=float(eff.mean()) if n else None,
        mean_diff=float(diff.mean()) if n else None,
        score1=score1, score2=score2, delta=delta, symmetric=symmetric)


def paired_ttest_p(score1: np.ndarray, score2: np.ndarray) -> float:
    """Two-sided paired t-test p-value; NaN when undefined (n < 2).

    Constant differences (no variance) get the exact sign-flip p-value (module docstring).
    """
    diff = np.asarray(score1, dtype=np.float64) - np.asarray(score2, dtype=np.float64)
    n = diff.shape[0]
    if n < 2:
        return math.nan
    mean = float(diff.mean())
    sd = float(diff.std(ddof=1))
    scale = max(abs(mean), float(np.abs(diff).max()), 1e-300)
    if sd <= 1e-12 * scale:
        return 1.0 if abs(mean) <= 1e-12 * scale else min(1.0, 2.0 * 0.5 ** n)
    from scipy.special import stdtr  # far lighter to import than scipy.stats

    t = mean / (sd / math.sqrt(n))
    return float(2.0 * stdtr(n - 1, -abs(t)))


def greater_than_zero_p(values: np.ndarray) -> float:
    """One-sided one-sample t-test p-value for mean(values) > 0; NaN when n < 2.

    Constant values: 2⁻ⁿ when they are all the same positive number, else 1 (module
    docstring).
    """
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[0]
    if n < 2:
        return math.nan
    mean = float(values.mean())
    sd = float(values.std(ddof=1))
    scale = max(float(np.abs(values).max()), 1e-300)
    if sd <= 1e-12 * scale:
        return 0.5 ** n if mean > 1e-12 * scale else 1.0
    from scipy.special import stdtr

    return float(stdtr(n - 1, -mean / (sd / math.sqrt(n))))


def defined_p(p: float) -> float | None:
    """A p-value as records store it: None where the test is undefined (NaN)."""
    return None if p != p else p


def bonferroni_significant(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Which tests stay significant at ``alpha`` after a Bonferroni correction over all."""
    m = len(p_values)
    return [p * m < alpha for p in p_values]


def check_alpha(alpha: float) -> float:
    from abnirml.errors import ConfigError

    if not (0.0 < alpha < 1.0) or alpha != alpha:
        raise ConfigError(f"alpha must be in (0, 1), got {alpha}")
    return alpha


def check_delta(delta: float, where: str = "delta") -> float:
    from abnirml.errors import ConfigError

    if not math.isfinite(delta) or delta < 0:
        raise ConfigError(f"{where} must be a finite number ≥ 0, got {delta}")
    return delta
