"""The built-in families' probes share one header (:class:`KeyedProbe`): family key, one
side preferred or none, and the name ``family:suffix`` every selection pattern and record
uses."""

from __future__ import annotations

import dataclasses

from abnirml.probes.axioms.probe import AxiomProbe
from abnirml.probes.base import KeyedProbe, Probe
from abnirml.probes.manipulation import probes as manipulation
from abnirml.probes.measure_match import MeasureMatchProbe
from abnirml.probes.query_variation import probes as variation


def test_each_keyed_probe_is_named_family_colon_suffix():
    shuffle = next(p for p in manipulation.available() if p.spec.key == "shuffle-words")
    misspell = next(p for p in variation.available() if p.key == "misspell")
    probes = [shuffle, misspell, AxiomProbe("tfc1"), MeasureMatchProbe("tf", "length")]
    assert [p.name for p in probes] == ["tmp:shuffle-words", "qvp:misspell", "axiom:tfc1",
                                        "mmp:tf:length"]
    assert [p.family for p in probes] == ["tmp", "qvp", "axiom", "mmp"]
    assert all(isinstance(p, KeyedProbe) and isinstance(p, Probe) and not p.symmetric
               for p in probes)


def test_the_family_is_a_class_constant_not_a_field():
    """Only what picks a probe out of its family is a field: two probes are equal, hash
    alike and print alike exactly when those are."""
    assert [f.name for f in dataclasses.fields(MeasureMatchProbe)] == ["variable", "control"]
    assert MeasureMatchProbe("tf", "length") == MeasureMatchProbe("tf", "length")
    assert len({AxiomProbe("tfc1"), AxiomProbe("tfc1"), AxiomProbe("lnc1")}) == 2
    assert repr(AxiomProbe("tfc1")) == "AxiomProbe(axiom='tfc1')"
