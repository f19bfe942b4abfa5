"""Multiple-comparison corrections as records, in one registry: what ``--correction`` may name.

A correction is data, the way a statistical test is (:mod:`.stat_tests`): its ``name`` (the
``--correction`` value, ``run.json``'s ``statistics.correction``), a ``label`` for captions
("the Holm correction"), a one-line ``description`` for ``--help`` and the reference
pages, the function that adjusts one table's p-values, the per-row rule its verdict turns
into (:class:`RowRule`, which the score interval of the ``clustered`` test is read at), and
the properties the engine and the report ask instead of the name: whether it adjusts at
all, and the level every row of a table shares where one exists.

Built in: ``bonferroni`` (family-wise, the papers'), ``holm`` (family-wise, uniformly more
powerful), ``bh`` (Benjamini–Hochberg, false-discovery rate) and ``none``. A test is
significant when its adjusted p-value is strictly below α. A module of its own, below the
tests and the verdict rule, since both read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from abnirml.errors import ConfigError
from abnirml.registry import Registry

DEFAULT_CORRECTION = "bonferroni"


@dataclass(frozen=True)
class RowRule:
    """The correction's verdict on one row as a threshold on its own p:
    significant when ``p · scale / divisor < alpha`` (the same float operations the
    correction performs, so the two never disagree)."""

    scale: float
    divisor: float
    alpha: float

    def passes(self, p: float) -> bool:
        return p * self.scale / self.divisor < self.alpha

    @property
    def level(self) -> float:
        """The per-row test level: the interval's coverage is 1 − this."""
        return self.alpha * self.divisor / self.scale


#: ``(p, α, flags) -> one RowRule per test``: ``p`` the table's p-values (float64), ``flags``
#: which of them the correction keeps significant
RowRules = Callable[[np.ndarray, float, Sequence[bool]], list[RowRule]]


@dataclass(frozen=True)
class Correction:
    """One multiple-comparison correction over the tests of one table (probe family).

    ``adjusted(p)`` maps a table's m ≥ 1 p-values (float64) to the adjusted ones, each
    compared with α; ``rules(p, α, flags)`` gives each row the threshold on its own p that
    reproduces the verdict (:class:`RowRule`). ``controls``: the error rate it bounds, in
    words (None: it bounds none). ``adjusts``: False when every test is taken at α and
    the table's size plays no part. ``shared_level(α, m)``: the level every row of a table
    of m tests is tested at, written ``level_formula`` in captions ("α/m"); None for a
    step-wise procedure, whose level depends on the row's rank. ``flags(p, α)``: the
    verdicts when they are computed otherwise than "adjusted p < α" (Bonferroni's
    unclipped ``p · m < α``).
    """

    name: str
    label: str
    description: str
    adjusted: Callable[[np.ndarray], np.ndarray]
    rules: RowRules
    controls: str | None = None
    adjusts: bool = True
    shared_level: Callable[[float, int], float] | None = None
    level_formula: str | None = None
    flags: Callable[[Sequence[float], float], list[bool]] | None = None

    def adjust(self, p_values: Sequence[float]) -> list[float]:
        """Adjusted p-values (each compared with α) for one table of tests."""
        p = np.asarray(p_values, dtype=np.float64)
        if p.shape[0] == 0:
            return []
        adjusted: list[float] = np.asarray(self.adjusted(p), dtype=np.float64).tolist()
        return adjusted

    def significant(self, p_values: Sequence[float], alpha: float) -> list[bool]:
        """Which tests stay significant at ``alpha`` after this correction over the table."""
        if self.flags is not None:
            return self.flags(p_values, alpha)
        return [q < alpha for q in self.adjust(p_values)]

    def row_rules(self, p_values: Sequence[float], alpha: float) -> list[RowRule]:
        """One :class:`RowRule` per test of a table, matching :meth:`significant`."""
        p = np.asarray(p_values, dtype=np.float64)
        if p.shape[0] == 0:
            return []
        return self.rules(p, alpha, self.significant(p_values, alpha))

    def tests_counted(self, tests: int) -> int:
        """How many tests this correction multiplies a table's smallest p by."""
        return max(tests, 1) if self.adjusts else 1

    def loosest_level(self, alpha: float, tests: int) -> float:
        """The largest level any row of a table of ``tests`` tests can be tested at:
        the shared level where there is one, else α (a step-wise procedure's last step)."""
        return alpha if self.shared_level is None else self.shared_level(alpha, tests)


# -- the built-in corrections -------------------------------------------------------------

def _unadjusted(p: np.ndarray) -> np.ndarray:
    return p


def _bonferroni(p: np.ndarray) -> np.ndarray:
    adjusted: np.ndarray = np.minimum(1.0, p * p.shape[0])
    return adjusted


def _bonferroni_flags(p_values: Sequence[float], alpha: float) -> list[bool]:
    """``p · m < α`` without clipping, the papers' computation."""
    m = len(p_values)
    return [p * m < alpha for p in p_values]


def _step_wise(steps: Callable[[np.ndarray, int], np.ndarray]) -> Callable[[np.ndarray],
                                                                            np.ndarray]:
    """Adjusted p-values of a procedure that works on the sorted p-values."""
    def adjusted(p: np.ndarray) -> np.ndarray:
        m = p.shape[0]
        order = np.argsort(p, kind="stable")
        out = np.empty(m)
        out[order] = np.minimum(1.0, steps(p[order], m))
        return out
    return adjusted


def _holm_steps(ranked: np.ndarray, m: int) -> np.ndarray:
    return np.maximum.accumulate((m - np.arange(m)) * ranked)


def _bh_steps(ranked: np.ndarray, m: int) -> np.ndarray:
    return np.minimum.accumulate((m * ranked / np.arange(1, m + 1))[::-1])[::-1]


def _shared_rules(scale: Callable[[int], float]) -> RowRules:
    def rules(p: np.ndarray, alpha: float, flags: Sequence[bool]) -> list[RowRule]:
        return [RowRule(scale(p.shape[0]), 1.0, alpha)] * p.shape[0]
    return rules


def _holm_rules(p: np.ndarray, alpha: float, flags: Sequence[bool]) -> list[RowRule]:
    """m − rank up to the first row Holm keeps, that row's m − rank from there on."""
    m = p.shape[0]
    order = np.argsort(p, kind="stable")
    kept = next((rank for rank, i in enumerate(order) if not flags[i]), m)
    rules: list[RowRule] = [RowRule(1.0, 1.0, alpha)] * m
    for rank, i in enumerate(order):
        rules[i] = RowRule(float(m - min(rank, kept)), 1.0, alpha)
    return rules


def _bh_rules(p: np.ndarray, alpha: float, flags: Sequence[bool]) -> list[RowRule]:
    """m / R for the R rejected rows, m / (R + 1) for the others."""
    m = p.shape[0]
    rejected = sum(flags)
    return [RowRule(float(m), float(rejected if flags[i] else rejected + 1), alpha)
            for i in range(m)]


BUILT_IN_CORRECTIONS = (
    Correction("bonferroni", "Bonferroni", "p · m for a table of m tests, as in the papers",
               _bonferroni, _shared_rules(float), controls="family-wise error rate",
               shared_level=lambda alpha, m: alpha / m, level_formula="α/m",
               flags=_bonferroni_flags),
    Correction("holm", "Holm", "Holm's step-down procedure, uniformly more powerful than "
               "Bonferroni", _step_wise(_holm_steps), _holm_rules,
               controls="family-wise error rate"),
    Correction("bh", "Benjamini–Hochberg", "Benjamini–Hochberg's step-up procedure",
               _step_wise(_bh_steps), _bh_rules, controls="false-discovery rate"),
    Correction("none", "no", "every test at α, uncorrected", _unadjusted,
               _shared_rules(lambda m: 1.0), adjusts=False,
               shared_level=lambda alpha, m: alpha, level_formula="α"),
)


# -- the registry -------------------------------------------------------------------------

_CORRECTIONS: Registry[Correction] = Registry(
    "multiple-comparison correction",
    built_ins=lambda: [(c.name, c) for c in BUILT_IN_CORRECTIONS],
    called="name", describe=lambda c: c.label)


def register_correction(correction: Correction) -> None:
    """Make ``correction`` a value of ``--correction`` and of
    ``StatisticsSettings.correction``."""
    _CORRECTIONS.add(correction.name, correction)


def correction_names() -> list[str]:
    """Every correction's name, built-ins first."""
    return _CORRECTIONS.keys()


def registered_corrections() -> Mapping[str, Correction]:
    return _CORRECTIONS.mapping()


def find_correction(name: str) -> Correction | None:
    return _CORRECTIONS.find(name)


def get_correction(name: str | Correction) -> Correction:
    """The correction called ``name``; an unknown name is one ConfigError line listing
    the known ones."""
    if isinstance(name, Correction):
        return name
    found = _CORRECTIONS.find(name)
    if found is None:
        raise ConfigError(f"--correction must be one of {', '.join(correction_names())}, "
                          f"got {name!r}")
    return found


def correction_label(name: str) -> str:
    """The caption label of ``name``; a correction this process does not know (a
    plugin's, read back from a run) is named as is."""
    found = _CORRECTIONS.find(name)
    return name if found is None else found.label


def correction_help() -> str:
    """``--correction``'s help: every registered correction with what it does."""
    return "; ".join(
        f"{c.name}: {c.description}" + (f" (bounds the {c.controls})" if c.controls else "")
        for c in _CORRECTIONS.values())


def adjust(p_values: Sequence[float], correction: str | Correction) -> list[float]:
    """Adjusted p-values (each compared with α) for one table of tests."""
    return get_correction(correction).adjust(p_values)


def significant(p_values: Sequence[float], alpha: float,
                correction: str | Correction) -> list[bool]:
    """Which tests stay significant at ``alpha`` after ``correction`` over the table."""
    return get_correction(correction).significant(p_values, alpha)
