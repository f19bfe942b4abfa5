"""Everything a plugin author needs, from one module.

A plugin file registers probe families, probes, axioms, ranker families, statistical
tests, multiple-comparison corrections and report layouts when it is imported (see
docs/guide/plugins.md)::

    from abnirml.plugin import Family, RankerFamily, Sample, Skip, register_family, setting

``Ranker`` and ``Probe`` are the two contracts everything registered here fulfils (typing
protocols: a class with the right members is one, no base class needed). ``ResultRow`` is
what a run writes per probe × ranker × subset; a family whose ``record_fields`` adds fields
may declare them in a copy of it (``About`` says what each means) for ``load_results``.

The names here are the same objects the package uses internally, re-exported so a plugin
does not depend on where they live. ``scoped_registrations`` is for a plugin's own tests:
what is registered inside the block is forgotten when it ends.
"""

from __future__ import annotations

from abnirml.evaluation.stats.corrections import Correction, RowRule, register_correction
from abnirml.evaluation.stats.stat_tests import RoundsRule, StatisticalTest, TestData, register_test
from abnirml.probes.axioms.custom import axiom_probe
from abnirml.probes.axioms.features import QueryFeatures
from abnirml.probes.base import Probe, ProbeContext
from abnirml.probes.family import Family, Requirement
from abnirml.probes.family_registry import register_family
from abnirml.probes.layouts import ReportLayout, register_layout
from abnirml.probes.probe_registry import register as register_probe
from abnirml.probes.probe_registry import register_pairs_probe
from abnirml.rankers.base import Ranker, RankerSpec
from abnirml.rankers.family import NoParams, RankerFamily, params_fingerprint
from abnirml.rankers.registry import RankerEnv
from abnirml.rankers.registry import parameters as ranker_parameters
from abnirml.rankers.registry import register as register_ranker_factory
from abnirml.rankers.registry import register_family as register_ranker
from abnirml.rankers.support.device_batching import (
    DeviceSettings,
    TokenBudgetModel,
    TokenBudgetRanker,
)
from abnirml.registry import scoped_registrations
from abnirml.result_fields import About, ResultRow
from abnirml.samples import Sample, Skip
from abnirml.settings import setting

__all__ = [
    "About",
    "Correction",
    "DeviceSettings",
    "Family",
    "NoParams",
    "Probe",
    "ProbeContext",
    "QueryFeatures",
    "Ranker",
    "RankerEnv",
    "RankerFamily",
    "RankerSpec",
    "ReportLayout",
    "Requirement",
    "ResultRow",
    "RoundsRule",
    "RowRule",
    "Sample",
    "Skip",
    "StatisticalTest",
    "TestData",
    "TokenBudgetModel",
    "TokenBudgetRanker",
    "axiom_probe",
    "params_fingerprint",
    "ranker_parameters",
    "register_correction",
    "register_family",
    "register_layout",
    "register_pairs_probe",
    "register_probe",
    "register_ranker",
    "register_ranker_factory",
    "register_test",
    "scoped_registrations",
    "setting",
]
