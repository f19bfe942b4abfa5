"""Multiple-comparison corrections are records in one registry: known answers per record,
the engine and the report ask the record (never the name), the command line lists them
and refuses an unknown one in one line."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from abnirml.cli import main
from abnirml.errors import ConfigError
from abnirml.evaluation.stats.corrections import (
    BUILT_IN_CORRECTIONS,
    Correction,
    correction_names,
    get_correction,
    register_correction,
)
from abnirml.evaluation.stats.significance import StatsConfig, add_arguments, caption, check_config
from abnirml.evaluation.stats.significance import test_words as correction_words
from abnirml.registry import scoped_registrations

ROOT = Path(__file__).resolve().parents[2]
P = [0.01, 0.04, 0.03, 0.005]


def test_the_registry_lists_the_built_ins_in_order():
    assert correction_names() == ["bonferroni", "holm", "bh", "none"]
    assert [c.name for c in BUILT_IN_CORRECTIONS] == correction_names()
    assert get_correction("bh").label == "Benjamini–Hochberg"
    assert get_correction("holm").controls == "family-wise error rate"
    assert get_correction("bh").controls == "false-discovery rate"
    assert get_correction("none").controls is None


@pytest.mark.parametrize(("name", "method"), [("bonferroni", "bonferroni"),
                                              ("holm", "holm"), ("bh", "fdr_bh")])
def test_adjusted_p_and_verdicts_match_statsmodels(name, method):
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    rng = np.random.default_rng(7)
    record = get_correction(name)
    for m in (1, 2, 5, 17, 60):
        p = rng.uniform(0.0, 0.2, m) ** 2
        p[: m // 3] = p[0]                                      # ties keep their order
        reject, adjusted, _, _ = multipletests(p, alpha=0.01, method=method)
        assert record.adjust(p) == pytest.approx(adjusted.tolist(), rel=1e-12, abs=0)
        assert record.significant(p.tolist(), 0.01) == reject.tolist()


def test_known_answers_by_hand():
    # sorted: 0.005, 0.01, 0.03, 0.04; Holm multiplies by 4, 3, 2, 1 and keeps the maximum
    assert get_correction("holm").adjust(P) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: 4·p/rank from the largest down, keeping the minimum
    assert get_correction("bh").adjust(P) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert get_correction("none").adjust(P) == P
    assert get_correction("none").significant(P, 0.02) == [True, False, False, True]
    # Bonferroni's verdict is p · m < α unclipped, its adjusted p clipped to 1
    assert get_correction("bonferroni").adjust([0.5, 0.9]) == [1.0, 1.0]
    assert get_correction("bonferroni").significant(P, 0.05) == [True, False, False, True]
    assert all(get_correction(n).adjust([]) == [] for n in correction_names())


def test_each_records_row_rules_by_hand():
    levels = {name: [r.level for r in get_correction(name).row_rules(P, 0.05)]
              for name in correction_names()}
    assert levels["bonferroni"] == [0.0125] * 4
    assert levels["none"] == [0.05] * 4
    # Holm keeps ranks 0 and 1 (0.005 → 4, 0.01 → 3) and stops at rank 2: m − 2 from there
    assert levels["holm"] == pytest.approx([0.05 / 3, 0.025, 0.025, 0.0125])
    assert levels["bh"] == pytest.approx([0.05] * 4)          # all four rejected: 4 / 4
    # at α = 0.03 BH rejects two: m / R = 4 / 2 for them, 4 / 3 for the others
    assert [r.level for r in get_correction("bh").row_rules(P, 0.03)] == pytest.approx(
        [0.015, 0.0225, 0.0225, 0.015])


def test_the_properties_the_engine_asks():
    bonferroni, holm, bh, none = (get_correction(n) for n in correction_names())
    assert [c.tests_counted(651) for c in (bonferroni, holm, bh, none)] == [651, 651, 651, 1]
    assert bonferroni.tests_counted(0) == 1
    assert bonferroni.loosest_level(0.01, 651) == 0.01 / 651
    assert holm.loosest_level(0.01, 651) == bh.loosest_level(0.01, 651) == 0.01
    assert none.loosest_level(0.01, 651) == 0.01
    assert (bonferroni.level_formula, none.level_formula, holm.level_formula) == (
        "α/m", "α", None)


def test_captions_are_read_off_the_record():
    assert "no multiple-testing correction" in correction_words("ttest", "none", 0.01)
    assert "Holm correction over every test of one table" in correction_words("ttest", "holm", 0.01)
    words = {name: caption("clustered", name, 0.01, 0.95, 1000)
             for name in correction_names()}
    assert "coverage 1 − α/m for a table of m tests (1 − 2α/m" in words["bonferroni"]
    assert "coverage 1 − α (1 − 2α" in words["none"]
    assert ("coverage 1 − the level the Benjamini–Hochberg procedure tests the row at"
            in words["bh"])
    # a correction this process does not know (a plugin's, read back) is named as is
    assert "sidak correction over every test" in correction_words("ttest", "sidak", 0.01)


def test_an_unknown_correction_is_refused_in_one_line_naming_the_known_ones():
    with pytest.raises(ConfigError) as raised:
        check_config(StatsConfig(correction="sidak"))
    assert str(raised.value) == ("--correction must be one of bonferroni, holm, bh, none, "
                                 "got 'sidak'")


def test_the_command_line_refuses_an_unknown_correction(tmp_path, capsys):
    out = tmp_path / "x"
    assert main(["run", "--collection", "demo", "--ranker", "bm25", "--probe", "mmp:tf:*",
                 "--out", str(out), "--no-cache", "--quiet", "--correction", "hochberg"]) == 2
    err = capsys.readouterr().err
    assert err == ("abnirml: error: --correction must be one of bonferroni, holm, bh, none, "
                   "got 'hochberg'\n")
    assert not out.exists()


def test_the_command_line_lists_every_correction_from_its_record():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    (action,) = [a for a in parser._actions if a.dest == "correction"]
    assert action.metavar == "{bonferroni,holm,bh,none}" and action.default == "bonferroni"
    for name in correction_names():
        assert f"{name}: {get_correction(name).description}" in action.help


def _sidak(p: np.ndarray) -> np.ndarray:
    return 1.0 - (1.0 - p) ** p.shape[0]


def test_a_registered_correction_is_accepted_listed_and_undone():
    sidak = Correction("sidak", "Šidák", "1 − (1 − p)ᵐ", _sidak,
                       lambda p, alpha, flags: [], controls="family-wise error rate")
    with scoped_registrations():
        register_correction(sidak)
        assert check_config(StatsConfig(correction="sidak")).correction == "sidak"
        assert get_correction("sidak").adjust([0.01, 0.5]) == pytest.approx(
            [1 - 0.99 ** 2, 0.75])
        assert "Šidák correction over every test" in correction_words("ttest", "sidak", 0.01)
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        (action,) = [a for a in parser._actions if a.dest == "correction"]
        assert "sidak: 1 − (1 − p)ᵐ (bounds the family-wise error rate)" in action.help
        with pytest.raises(ConfigError, match="built in"):
            register_correction(Correction("holm", "mine", "", _sidak, lambda p, a, f: []))
    with pytest.raises(ConfigError, match="got 'sidak'"):
        get_correction("sidak")


def test_no_module_dispatches_on_a_corrections_name():
    pattern = r"""correction(\.name)? *(==|!=|in) *[("']"""
    found = subprocess.run(["grep", "-rnE", pattern, str(ROOT / "src")],
                           capture_output=True, text=True, check=False)
    assert found.returncode == 1, found.stdout          # 1: grep ran and found nothing
    for name in ("bonferroni", "holm", "bh"):          # no table keyed by a name either
        keyed = subprocess.run(["grep", "-rn", f'"{name}": ', str(ROOT / "src")],
                               capture_output=True, text=True, check=False)
        assert keyed.returncode == 1, keyed.stdout
    assert re.search(pattern, 'if correction == "holm":')      # the pattern does match
