"""Statistical tests are records in one registry: the CLI lists them, the engine asks them
(never a test's name), and the statistics guide's sign test is one record that works."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.evaluation.execution.experiment import ProbeOutline, ProbeScores, build_records
from abnirml.evaluation.stats.calibration import fixed
from abnirml.evaluation.stats.significance import StatsConfig, add_arguments, check_config, p_value
from abnirml.evaluation.stats.stat_tests import get_test, registered_names
from abnirml.probes.base import DEFAULT_GRADE_BANDS
from abnirml.registry import scoped_registrations

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide" / "statistics.md"


def _guide_block() -> str:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)
    (block,) = [b for b in blocks if "register_test" in b]
    return block


def test_the_guides_sign_test_is_one_record_with_a_known_answer():
    with scoped_registrations():
        exec(compile(_guide_block(), str(GUIDE), "exec"), {"__name__": "sign_test"})
        assert "sign" in registered_names() and get_test("sign").label == "sign test"
        config = check_config(StatsConfig(test="sign"))
        # 8 differences above 0, 2 below: 2 · (C(10,0) + C(10,1) + C(10,2)) / 2¹⁰
        diff = np.array([0.5, 0.1, 0.3, 0.2, 0.9, 0.4, 0.6, 0.7, -0.2, -0.3])
        assert p_value(diff, np.zeros(10), 0.0, False, config) == 112 / 1024
        # the engine uses it like a built-in: no rounds, one p per record, corrected
        outline = ProbeOutline("mmp:x", "mmp", False)
        scores = {("mmp:x", "r"): ProbeScores(diff, np.zeros(10), np.full(10, np.nan),
                                               np.arange(10))}
        (record,) = build_records([outline], ["r"], scores, {"r": fixed(0.0)},
                                  DEFAULT_GRADE_BANDS, 0.2, stats=config)
        assert record["p_value"] == 112 / 1024 and record["significant"]
        assert "test_rounds" not in record
    assert "sign" not in registered_names()                   # the scope undid the registration
    with pytest.raises(ConfigError, match="unknown statistical test 'sign'"):
        check_config(StatsConfig(test="sign"))


def test_the_command_line_lists_every_test_from_its_record():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    (action,) = [a for a in parser._actions if a.dest == "test"]
    assert action.metavar == "{clustered,ttest,wilcoxon,permutation,bootstrap}"
    assert action.default == "clustered"
    for name in registered_names():
        assert f"{name}: " in action.help
    with pytest.raises(ConfigError, match=r"unknown statistical test 'tetst'.*ttest"):
        check_config(StatsConfig(test="tetst"))


def test_the_rounds_rule_is_the_records():
    assert [n for n in registered_names() if get_test(n).resamples] == [
        "clustered", "permutation", "bootstrap"]
    assert get_test("permutation").rounds.flag == "--permutations"
    assert get_test("clustered").rounds.floor == get_test("bootstrap").rounds.floor == 2
    assert get_test("clustered").score_interval and not get_test("ttest").score_interval


def test_no_module_dispatches_on_a_tests_name():
    found = subprocess.run(["grep", "-rn", "test ==", str(ROOT / "src")],
                           capture_output=True, text=True, check=False)
    assert found.stdout == "", found.stdout
    assert sys.executable                                 # grep ran (rc 1: nothing found)
    assert found.returncode == 1
