"""Reorganising the code must not move a single byte of the demo battery's results."""

from __future__ import annotations

import json

from tests.results_battery import GOLDEN, digests, run_battery


def test_demo_battery_results_are_byte_identical(tmp_path):
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    found = digests(run_battery(tmp_path / "out"))
    assert sorted(found) == sorted(expected), "the set of probes changed"
    changed = sorted(p for p in expected if found[p] != expected[p])
    assert not changed, f"results changed for {len(changed)} probes: {changed[:10]}"
