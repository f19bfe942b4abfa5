"""Axiom names two sources define differently are never resolved silently: the probes carry
their source, a bare name is refused naming both, and listings and reports show the source."""

from __future__ import annotations

import pytest

from abnirml.cli import main
from abnirml.errors import ConfigError
from abnirml.probes.axioms.names import SHARED_NAMES, source_of
from abnirml.probes.probe_registry import all_probes, select_probes


@pytest.mark.parametrize("bare", sorted(SHARED_NAMES))
def test_a_bare_shared_name_is_refused_naming_both_definitions(bare):
    dataset, source, ir = SHARED_NAMES[bare]
    with pytest.raises(ConfigError) as caught:
        select_probes([f"axiom:{bare}"])
    message = str(caught.value)
    assert "\n" not in message and "ambiguous" in message
    assert f"axiom:{dataset} ({source}'s {bare.upper()})" in message
    assert f"axiom:{ir} (ir_axioms' {bare.upper()})" in message
    # both prefixed names exist and select exactly one probe each
    assert [p.name for p in select_probes([f"axiom:{dataset}"])] == [f"axiom:{dataset}"]
    assert [p.name for p in select_probes([f"axiom:{ir}"])] == [f"axiom:{ir}"]


def test_no_axiom_probe_has_a_bare_shared_name_and_every_one_has_a_source():
    names = {p.name for p in all_probes() if p.family == "axiom"}
    assert not names & {f"axiom:{bare}" for bare in SHARED_NAMES}
    assert {source_of(n) for n in names} == {"Rennings et al.", "Câmara & Hauff", "ir_axioms"}
    assert source_of("axiom:rennings-tfc1") == "Rennings et al."
    assert source_of("axiom:ir-tfc1") == "ir_axioms"
    assert source_of("axiom:tp") == "Câmara & Hauff"
    assert source_of("axiom:a-users-own") is None and source_of("tmp:typos") is None


def test_probes_listing_shows_sources_and_the_shared_names_side_by_side(capsys):
    assert main(["probes"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "axiom:rennings-tfc1\taxiom\tRennings et al." in out
    assert "axiom:ir-tfc1\taxiom\tir_axioms" in out
    assert "axiom:camara-stmc2\taxiom\tCâmara & Hauff" in out
    assert ("TFC1\taxiom:rennings-tfc1 (Rennings et al.)\taxiom:ir-tfc1 (ir_axioms)"
            in out)
    assert ("LNC1\taxiom:camara-lnc1 (Câmara & Hauff)\taxiom:ir-lnc1 (ir_axioms)" in out)


def test_the_cli_refuses_a_bare_name_in_one_line(tmp_path, capsys):
    assert main(["run", "--probe", "axiom:m-tdc", "--ranker", "bm25",
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("abnirml: error: probe 'axiom:m-tdc' is ambiguous: did you mean "
                   "axiom:rennings-m-tdc (Rennings et al.'s M-TDC) or axiom:ir-m-tdc "
                   "(ir_axioms' M-TDC)?")
    assert not (tmp_path / "out").exists()


def test_report_labels_name_the_source():
    from abnirml.report.axiom_tables import _label

    assert _label("axiom:rennings-tfc1") == "TFC1 (Rennings et al.)"
    assert _label("axiom:ir-tfc1") == "TFC1 (ir_axioms)"
    assert _label("axiom:camara-stmc1") == "STMC1 (Câmara & Hauff)"
