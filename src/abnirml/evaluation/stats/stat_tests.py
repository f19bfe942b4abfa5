"""Statistical tests as records, in one registry: what ``--test`` may name.

A test is data, the way ir_measures declares a measure: its ``name`` (the ``--test`` value,
``run.json``'s ``statistics.test``), a ``label`` for captions, its p-value function, and —
for a test that draws seeded rounds — its :class:`RoundsRule`. Nothing in the engine asks
which test it is by name: it asks the record whether it resamples, how small its p can get
with R rounds, which option names its rounds, and whether its verdict is read off the score
interval the report prints (``score_interval``).

Rounds of a resampling test. With R rounds its smallest p is ``floor`` / (R + 1), and a
correction over m tests multiplies the smallest p by m, so too few rounds can never reject,
however large the effect. Unless the user names the count (the rule's ``flag`` with this
``--test``), a table of m tests gets :func:`rounds_needed` rounds — the floor times m at
most α / :data:`REJECT_MARGIN` — or the configured count when that is larger. A count the
user named that cannot reject is used as given, with one warning line
(:func:`warn_if_blocked`).

Adding a test is one record (the statistics guide shows a sign test)::

    register_test(StatisticalTest("sign", "sign test", sign_p))
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from abnirml.evaluation.stats.corrections import Correction, get_correction
from abnirml.evaluation.stats.stat_test_types import PValue, RoundsRule, StatisticalTest, TestData
from abnirml.registry import Registry

__all__ = ["PValue", "RoundsRule", "StatisticalTest", "TestData", "get_test", "register_test"]

REJECT_MARGIN = 10
"""Automatic rounds leave the smallest attainable corrected p at most α / this."""


def _built_ins() -> list[tuple[str, StatisticalTest]]:
    from abnirml.evaluation.stats.built_in_tests import BUILT_IN_TESTS

    return [(test.name, test) for test in BUILT_IN_TESTS]


_TESTS: Registry[StatisticalTest] = Registry("statistical test", built_ins=_built_ins,
                                             called="name")


def register_test(test: StatisticalTest) -> None:
    """Make ``test`` a value of ``--test`` and of ``StatisticsSettings.test``."""
    _TESTS.add(test.name, test)


def get_test(name: str) -> StatisticalTest:
    """The test called ``name``; an unknown name is a one-line ConfigError with a guess."""
    return _TESTS.get(name)


def find_test(name: str) -> StatisticalTest | None:
    return _TESTS.find(name)


def registered_names() -> list[str]:
    """Every test's name, built-ins first."""
    return _TESTS.keys()


def registered_tests() -> Mapping[str, StatisticalTest]:
    return _TESTS.mapping()


# -- rounds ---------------------------------------------------------------------------------

def _record(test: StatisticalTest | str) -> StatisticalTest:
    return test if isinstance(test, StatisticalTest) else get_test(test)


def p_floor(test: StatisticalTest | str, rounds: int) -> float:
    """The smallest p-value ``rounds`` rounds of the resampling ``test`` can give."""
    test = _record(test)
    assert test.rounds is not None
    return test.rounds.floor / (rounds + 1)


def tests_counted(tests: int, correction: str | Correction) -> int:
    """How many tests a correction multiplies the smallest p by."""
    return get_correction(correction).tests_counted(tests)


def rounds_needed(test: StatisticalTest | str, tests: int, alpha: float,
                  correction: str | Correction) -> int:
    """Rounds whose smallest p, corrected over ``tests`` tests, is at most α/10 (rounded
    up to a thousand). Bonferroni, Holm and BH all multiply the smallest p by the count."""
    from abnirml.evaluation.stats.bootstrap import MAX_RESAMPLES

    test = _record(test)
    assert test.rounds is not None
    m = tests_counted(tests, correction)
    need = math.ceil(test.rounds.floor * m * REJECT_MARGIN / alpha) - 1
    return min(MAX_RESAMPLES, 1000 * math.ceil(need / 1000))


def configured_rounds(test: StatisticalTest, config: Any) -> int:
    """The count the settings hold for ``test``'s rounds (0 for a test without rounds)."""
    return 0 if test.rounds is None else int(getattr(config, test.rounds.config_field))


def rounds_for(config: Any, tests: int, alpha: float) -> int:
    """The rounds the resampling test of ``config`` uses in a table of ``tests`` tests:
    the count the user named, else the larger of the configured and the needed count."""
    test = get_test(config.test)
    configured = configured_rounds(test, config)
    if config.rounds_given and configured >= 1:
        return configured
    return max(configured, rounds_needed(test, tests, alpha, config.correction))


def cannot_reject(config: Any, rounds: int, tests: int, alpha: float) -> bool:
    """True when no data can make a test of this table significant with ``rounds``."""
    test = get_test(config.test)
    return p_floor(test, rounds) * tests_counted(tests, config.correction) >= alpha


def warn_if_blocked(config: Any, rounds: Mapping[str, int], tests: Mapping[str, int],
                    alpha: float, stacklevel: int = 3) -> None:
    """One warning line naming the tables (``rounds``/``tests`` per table) whose named
    count of rounds cannot reject any of their tests, with the count that could."""
    blocked = sorted(t for t, m in tests.items() if cannot_reject(config, rounds[t], m, alpha))
    if not blocked:
        return
    import warnings

    test = get_test(config.test)
    assert test.rounds is not None
    flag = test.rounds.flag
    need = max(rounds_needed(test, tests[t], alpha, config.correction) for t in blocked)
    warnings.warn(f"{flag} {rounds[blocked[0]]:,} cannot reject any test of "
                  f"{', '.join(blocked)} at α = {alpha:g} after the {config.correction} "
                  f"correction; use at least {need:,} (or leave {flag} out)",
                  stacklevel=stacklevel)
