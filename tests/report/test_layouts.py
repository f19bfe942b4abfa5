"""Report layouts are records in one registry: the report and the axiom analyses ask the
layout's record what it renders, never its name; an unknown layout is refused when a family
is registered, and one read back from a run renders as a plain table."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from abnirml.errors import ConfigError
from abnirml.plugin import Family, ReportLayout, register_family, register_layout
from abnirml.probes.family_registry import families, keys_with_layout
from abnirml.probes.layouts import get_layout, layout_names, layout_of
from abnirml.registry import scoped_registrations
from abnirml.report.caveats import family_caveats
from abnirml.report.tables import FamilyView, layout_keys

ROOT = Path(__file__).resolve().parents[2]


def test_the_registry_lists_the_built_in_layouts_with_what_they_render():
    assert layout_names() == ["table", "transfer", "axiom"]
    assert [(n, get_layout(n).transfer_table, get_layout(n).axiom_instances)
            for n in layout_names()] == [("table", False, False), ("transfer", True, False),
                                         ("axiom", False, True)]
    assert all(get_layout(n).description for n in layout_names())
    # every built-in family asks for a registered layout
    assert {f.key: f.layout for f in families() if f.layout != "table"} == {
        "dtp": "transfer", "axiom": "axiom"}
    reference = (ROOT / "docs" / "reference" / "probes.md").read_text(encoding="utf-8")
    for name in layout_names():
        assert f"| `{name}` | {get_layout(name).description} |" in reference


def test_a_family_with_an_unknown_layout_is_refused_in_one_line():
    with scoped_registrations(), pytest.raises(ConfigError) as raised:
        register_family(Family(key="echo", title="Echo", positive="", layout="grid"))
    assert str(raised.value) == "unknown report layout 'grid': use one of table, transfer, axiom"
    assert "echo" not in {f.key for f in families()}


def test_a_layout_read_back_from_a_run_that_is_not_registered_renders_as_a_table():
    view = FamilyView.from_json({"key": "echo", "layout": "a-plugins-layout"})
    assert view.report_layout is layout_of("table")
    assert FamilyView.from_json({"key": "dtp", "layout": "transfer"}).report_layout \
        .transfer_table


def _record(probe, family, n=0, skipped=None):
    return {"probe": probe, "family": family, "ranker": "bm25", "subset": "all", "score": 0.0,
            "n": n, "p_value": None, "significant": False, "skipped": skipped or {}}


@dataclass
class EchoPairs:
    name: str = "echo:pairs"
    family: str = "echo"
    symmetric: bool = False
    characteristic: str = "Echo"
    dataset: str = "Pairs"
    data_folder: str = "echo-pairs"


def test_the_report_asks_the_record_not_the_name():
    """A plugin's layout that renders as the transfer table, under another name, gets the
    transfer table's caveats; one that counts axiom instances is read by the axiom analyses."""
    records = [_record("echo:pairs", "echo", skipped={"no-data": 1}),
               _record("tally:x", "tally")]
    run_info = {"options": {"echo.data": "/d"},
                "families": [{"key": "echo", "layout": "pairs-grid"},
                             {"key": "tally", "layout": "instances"}]}
    with scoped_registrations():
        register_layout(ReportLayout("pairs-grid", "transfer-like", transfer_table=True))
        register_layout(ReportLayout("instances", "axiom-like", axiom_instances=True))
        register_family(Family(key="echo", title="Echo", positive="", layout="pairs-grid",
                               probes=lambda: [EchoPairs()]))
        register_family(Family(key="tally", title="Tally", positive="", layout="instances"))
        caveats = family_caveats(records, run_info, "echo")
        assert [(c.text, c.kind) for c in caveats] == [
            ("data not found: /d/echo-pairs — echo:pairs", "no-data")]
        assert keys_with_layout(lambda layout: layout.axiom_instances) == {"axiom", "tally"}
        assert keys_with_layout(lambda layout: layout.transfer_table) == {"dtp", "echo"}
        assert layout_keys(records, run_info, lambda layout: layout.axiom_instances) == {
            "tally"}
        with pytest.raises(ConfigError, match="built in"):
            register_layout(ReportLayout("table", "mine"))
    assert "pairs-grid" not in layout_names()                 # the scope undid it


def test_no_module_dispatches_on_a_layouts_name():
    found = subprocess.run(["grep", "-rnE", r"layout *(==|!=)|keys_with_layout\([A-Z]",
                            str(ROOT / "src")], capture_output=True, text=True, check=False)
    assert found.returncode == 1, found.stdout          # 1: grep ran and found nothing
