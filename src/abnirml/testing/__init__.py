"""Conformance checks for a plugin author's own ranker family or probe family.

As scikit-learn's ``check_estimator`` does for estimators, these run the contract the engine
relies on against what a plugin registers, and name every way it falls short::

    from abnirml.testing import check_ranker, check_probe_family

    check_ranker("mine+alpha=2", plugins=["mine.py"])   # raises ConformanceError naming each
    check_probe_family("echo", plugins=["echo.py"])     # failed check; returns the results

For one pytest test per check, parametrise over the checks themselves::

    @pytest.mark.parametrize("check", ranker_checks("mine", plugins=["mine.py"]), ids=str)
    def test_mine_conforms(check):
        check()

The built-in families pass every check (the project's own tests run them).
"""

from __future__ import annotations

from abnirml.testing.checks import Check, CheckResult, ConformanceError, run_checks
from abnirml.testing.probe_checks import check_probe_family, probe_family_checks
from abnirml.testing.ranker_checks import check_ranker, ranker_checks

__all__ = [
    "Check",
    "CheckResult",
    "ConformanceError",
    "check_probe_family",
    "check_ranker",
    "probe_family_checks",
    "ranker_checks",
    "run_checks",
]
