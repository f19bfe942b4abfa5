"""The record types of a statistical test: what a p-value function reads (:class:`TestData`),
how a resampling test counts its rounds (:class:`RoundsRule`) and the test itself
(:class:`StatisticalTest`). Data only: the registry (:mod:`.stat_tests`) and the built-in
tests (:mod:`.built_in_tests`) both build on these.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TestData:
    """What a p-value function reads about one probe × ranker × subset.

    ``diff`` = R(q,d1) − R(q,d2) per sample; ``values`` is what the sample-level tests test
    (``diff``, or ``|diff| − δ`` for symmetric probes, whose question is one-sided);
    ``statistic`` the per-sample values whose pooled mean the row shows (the effects, or
    the change of effect in ``compare``; filled only for a ``score_interval`` test);
    ``cluster`` each sample's query (None: every sample its own); ``rounds`` the
    resampling rounds; ``rng`` the record's seeded generator.
    """

    score1: np.ndarray
    score2: np.ndarray
    delta: float
    symmetric: bool
    statistic: np.ndarray
    cluster: np.ndarray | None
    rounds: int
    rng: np.random.Generator

    @property
    def diff(self) -> np.ndarray:
        return np.asarray(self.score1, dtype=np.float64) - np.asarray(self.score2,
                                                                       dtype=np.float64)

    @property
    def values(self) -> np.ndarray:
        diff = self.diff
        return np.abs(diff) - self.delta if self.symmetric else diff


PValue = Callable[[TestData], float]


@dataclass(frozen=True)
class RoundsRule:
    """How a resampling test's rounds are counted and named.

    ``floor``: its smallest p with R rounds is floor / (R + 1) (1 for a one-sided count, 2
    for a two-sided one); ``option`` the settings and argument field naming the count
    (``bootstrap``, ``permutations``), shown as ``--option``; ``config_field`` the field of
    :class:`~abnirml.evaluation.stats.significance.StatsConfig` holding it; ``least`` the smallest
    count the test accepts; ``unit`` what one round is, in words.
    """

    floor: float
    option: str
    config_field: str
    unit: str
    least: int = 1

    @property
    def flag(self) -> str:
        return "--" + self.option


@dataclass(frozen=True)
class StatisticalTest:
    """One significance test: ``name`` (``--test``), ``label`` (captions), ``p_value``
    (:class:`TestData` → p, NaN where undefined), ``rounds`` (None: it draws no rounds),
    ``score_interval`` (its verdict is the score interval the report prints: a row is
    significant exactly when that interval excludes 0), ``queries_as_unit`` (it resamples
    queries, so no caveat about sample-level independence applies), ``help`` (the ``--test``
    help) and ``symmetric_question``."""

    name: str
    label: str
    p_value: PValue
    rounds: RoundsRule | None = None
    score_interval: bool = False
    queries_as_unit: bool = False
    help: str = ""
    #: the one-sided question the test asks of a symmetric probe, in words
    symmetric_question: str = "|R(q,d1) − R(q,d2)| − δ > 0"

    @property
    def resamples(self) -> bool:
        return self.rounds is not None
