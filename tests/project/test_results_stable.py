"""Reorganising the code must not move a single byte of the demo battery's results, and
every row of it has one verdict: significant exactly when its score interval excludes 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.results_battery import GOLDEN, digests


@pytest.fixture(scope="module")
def battery(demo_battery) -> Path:
    """The battery's results.jsonl (``tests.results_battery.run_battery``), built once in
    the session."""
    return demo_battery / "results.jsonl"


def test_demo_battery_results_are_byte_identical(battery):
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    found = digests(battery)
    assert sorted(found) == sorted(expected), "the set of probes changed"
    changed = sorted(p for p in expected if found[p] != expected[p])
    assert not changed, f"results changed for {len(changed)} probes: {changed[:10]}"


def test_no_row_is_significant_beside_an_interval_that_contains_zero_nor_the_reverse(battery):
    records = [json.loads(line) for line in battery.read_text(encoding="utf-8").splitlines()]
    with_interval = [r for r in records if r["ci_low"] is not None]
    split = [(r["probe"], r["ranker"], r["subset"], r["ci_low"], r["ci_high"])
             for r in with_interval
             if r["significant"] == (r["ci_low"] <= 0.0 <= r["ci_high"])]
    assert not split, f"{len(split)} rows with two answers, e.g. {split[:3]}"
    # both verdicts occur, in every family (with the demo's transfer data, dtp has intervals
    # too), and a row without an interval has no p either
    assert {r["significant"] for r in with_interval} == {True, False}
    families = {r["family"] for r in with_interval}
    assert families == {"mmp", "tmp", "axiom", "qvp", "dtp", "bias"}
    for family in families:
        assert any(r["significant"] for r in with_interval if r["family"] == family), family
    assert all(r["p_value"] is None for r in records if r["ci_low"] is None)
