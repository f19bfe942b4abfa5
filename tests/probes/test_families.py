"""Probe families: a user's family runs and reports like a built-in one; options are typed,
validated up front and namespaced; optional dependencies are checked before any work."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from abnirml.errors import ConfigError
from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run
from abnirml.probes.base import ProbeContext
from abnirml.probes.family import Family, Requirement
from abnirml.probes.family_registry import (
    check_requirements,
    family_keys,
    register_family,
    resolve_options,
    unregister_family,
)
from abnirml.probes.probe_registry import register
from abnirml.registry import scoped_registrations
from abnirml.samples import Sample, Skip
from abnirml.settings import setting
from tests._contexts import probe_context


@dataclass(frozen=True)
class EchoOptions:
    queries: int = setting(3, minimum=1, help="how many queries to use")


@dataclass
class EchoProbe:
    """d1 = the query itself, d2 = a text sharing no term with it: BM25 must prefer d1."""

    name: str = "echo:query-vs-noise"
    family: str = "echo"
    symmetric: bool = False

    def samples(self, context: ProbeContext) -> Iterator[Sample | Skip]:
        limit = context.family_options("echo").queries
        for qid in sorted(context.collection.queries)[:limit]:
            yield Sample(context.collection.queries[qid], context.collection.queries[qid],
                         "zzzq xxyq wwvq", {"qid": qid})
        yield Skip("not-applicable")


def _gap(score1, score2, summary):
    return {"largest_gap": float((score1 - score2).max())}


ECHO = Family(key="echo", title="Echo probes", positive="Positive: the ranker prefers d1.",
              options=EchoOptions, probes=lambda: [EchoProbe()], record_fields=_gap)


@pytest.fixture()
def echo_family():
    with scoped_registrations():
        register_family(ECHO)
        yield ECHO


def test_user_family_runs_and_reports_from_run_folder_alone(tmp_path, echo_family):
    out = tmp_path / "out"
    output = run(RunConfig(collection="demo", rankers=["bm25"], probes=["echo"], out=str(out),
                           effectiveness=False, options={"echo.queries": "2"},
                           session=SessionSettings(cache=None, progress=False),
                           statistics=StatisticsSettings(delta=0.0)))
    (record,) = [r for r in output.result.records if r["subset"] == "all"]
    assert (record["family"], record["n"], record["score"]) == ("echo", 2, 1.0)
    assert record["skipped"] == {"not-applicable": 1}
    assert record["largest_gap"] > 0                      # the family's own record field
    info = json.loads((out / "run.json").read_text())
    assert info["families"] == [ECHO.describe()]
    assert info["options"]["echo.queries"] == 2           # typed: the string became an int

    unregister_family("echo")                             # the report needs only the folder
    from abnirml.run_folder import RunFolder

    RunFolder(out).write_reports()
    report = (out / "report.md").read_text()
    assert "## Echo probes" in report and "Positive: the ranker prefers d1." in report
    assert "| echo:query-vs-noise | +1.00 | 2 |" in report   # n = 2: not significant, unmarked


def test_registering_a_probe_of_an_unknown_family_names_the_known_ones():
    with pytest.raises(ConfigError, match=r"family 'tpm' is not registered \(did you mean "
                                          r"tmp.*\); known: mmp, tmp, dtp, axiom"):
        register(EchoProbe(family="tpm"))


def test_a_user_probe_joins_a_registered_family(echo_family):
    from abnirml.probes.probe_registry import select_probes

    with scoped_registrations():
        register(EchoProbe(name="echo:second"))
        assert [p.name for p in select_probes(["echo"])] == ["echo:query-vs-noise",
                                                              "echo:second"]
    assert [p.name for p in select_probes(["echo"])] == ["echo:query-vs-noise"]
    assert "echo" in family_keys()


@pytest.mark.parametrize(("given", "message"), [
    ({"typo_rat": 3}, r"unknown option 'typo_rat'.*did you mean tmp\.typo_rate"),
    ({"axiom_lenght_tolerance": 5}, r"did you mean axiom\.length_tolerance"),
    ({"tmp.typo_rat": 0.1}, r"unknown option 'tmp\.typo_rat'.*tmp\.typo_rate"),
    ({"tpm.typo_rate": 0.1}, r"no probe family 'tpm'"),
    ({"tmp.typo_rate": 3}, r"tmp\.typo_rate must be ≤ 1, got 3"),
    ({"tmp.typo_rate": float("nan")}, r"tmp\.typo_rate: nan is not a number"),
    ({"dtp.sample_rate": "inf"}, r"dtp\.sample_rate must be a finite number"),
    ({"dtp.sample_rate": 0}, r"dtp\.sample_rate must be > 0"),
    ({"tmp.sample": 2.5}, r"tmp\.sample: 2\.5 is not a whole number"),
    ({"mmp.tolerance": {"length": -1}}, r"mmp\.tolerance\[length\] must be a finite number"),
    ({"axiom.pool": "judgd"}, r"axiom\.pool must be one of candidates, judged.*did you mean"),
    ({"axiom.lnc2_k": "1,2"}, r"every duplication factor must be a whole number ≥ 2"),
    # a key without its family names the family's key to write
    ({"typo_rate": 0.1}, r"unknown option 'typo_rate' \(did you mean tmp\.typo_rate\?\)"),
    ({"depth": 3}, r"unknown option 'depth' \(did you mean (axiom\.depth or qvp\.depth|"
                   r"qvp\.depth or axiom\.depth)\?\)"),
    # text is read strictly (abnirml.strict_numbers): no digit separators, full-width digits, nan
    ({"tmp.typo_rate": "1_0"}, r"tmp\.typo_rate: '1_0' is not a number"),
    ({"tmp.typo_rate": "０.５"}, r"tmp\.typo_rate: '０\.５' is not a number"),
    ({"tmp.typo_rate": "nan"}, r"tmp\.typo_rate: 'nan' is not a number"),
    ({"axiom.depth": "1_00"}, r"axiom\.depth: '1_00' is not a number"),
    ({"axiom.stmc2_threshold": "inf"}, r"axiom\.stmc2_threshold must be a finite number"),
    ({"axiom.lnc2_k": "2,3_0"}, r"axiom\.lnc2_k: '3_0' is not an integer"),
    ({"dtp.max_pairs": "１０"}, r"dtp\.max_pairs: '１０' is not a number"),
])
def test_bad_options_are_rejected_with_one_clear_line(given, message):
    with pytest.raises(ConfigError, match=message):
        resolve_options(given)


def test_options_are_typed_per_family_and_run_json_shows_what_was_given():
    resolved = resolve_options({"tmp.typo_rate": "0.25", "axiom.length_tolerance": "any",
                                "axiom.cap": "none"})
    assert resolved.settings["tmp"].typo_rate == 0.25
    assert resolved.settings["tmp"].mask_token == "[MASK]"            # default
    assert math.isinf(resolved.settings["axiom"].length_tolerance)
    assert resolved.settings["axiom"].cap is None
    assert set(resolved.settings) >= {"tmp", "axiom", "mmp", "dtp", "qvp"}   # every family
    # run.json's view: the given keys only, ∞ as the user spelt it
    assert resolved.public == {"axiom.cap": None, "axiom.length_tolerance": "any",
                               "tmp.typo_rate": 0.25}


def test_bad_option_fails_before_any_work(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match=r"did you mean tmp\.typo_rate"):
        run(RunConfig(collection="/does/not/exist", out=str(out), options={"typo_rat": 3}))
    assert not out.exists()


def test_cli_rejects_a_typo_in_an_option_with_exit_2(capsys):
    from abnirml.cli import main

    assert main(["run", "--option", "tmp.typo_rat=0.1", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did you mean tmp.typo_rate" in err[0]


@pytest.mark.parametrize(("option", "expected"), [
    ("tmp.typo_rate=nan", "tmp.typo_rate: 'nan' is not a number"),
    ("typo_rate=0.2", "unknown option 'typo_rate' (did you mean tmp.typo_rate?)"),
    ("tmp.typo_rate=1_0", "tmp.typo_rate: '1_0' is not a number"),
    ("axiom.lenght_tolerance=3", "did you mean axiom.length_tolerance"),
])
def test_cli_refuses_bad_option_values_in_one_line_before_any_work(tmp_path, capsys, option,
                                                                   expected):
    from abnirml.cli import main

    out = tmp_path / "out"
    code = main(["run", "--collection", str(tmp_path / "absent"), "--out", str(out),
                 "--option", option, "--quiet", "--no-cache"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and expected in err[0], err
    assert not out.exists()


def test_probes_read_namespaced_typed_settings():
    from abnirml.probes.axioms.options import axiom_settings
    from abnirml.probes.transfer.pairs import transfer_items

    context = probe_context(collection=None, options={"axiom.cap": "0", "axiom.lnc2_k": "4,2",
                                                      "axiom.depth": "7"})
    opts = axiom_settings(context)
    assert (opts.instance_cap, opts.duplication_factors, opts.depth) == (None, (2, 4), 7)
    assert opts.relevant_grade_in((("relevant", 3, 4),)) == 3
    assert (opts.cap, opts.lnc2_k) == (0, "4,2")        # as given: what run.json shows

    class Recorder:
        def items(self, **where):
            return [where]

    context = probe_context(collection=None, options={"dtp.online": "yes", "dtp.data": "/d"})
    assert transfer_items(context, Recorder()) == [{"data": "/d", "online": True}]


def test_missing_optional_dependency_is_named_with_its_extra(echo_family):
    needy = Family(key="needy", title="Needy", positive="",
                   requires=(Requirement("abnirml_no_such_module", "magic", "spells"),))
    register_family(needy)          # undone with echo_family's scope
    with pytest.raises(ConfigError, match=r"needs abnirml_no_such_module \(spells\): "
                                          r"pip install -e '\.\[magic\]' in "):
        check_requirements([EchoProbe(name="needy:x", family="needy")])
    check_requirements([EchoProbe()])                     # echo needs nothing


def test_manipulation_probes_declare_what_they_need():
    from abnirml.probes.probe_registry import select_probes

    needs = {p.name: {r.module for r in p.requires} for p in select_probes(["tmp"])}
    assert needs["tmp:shuffle-words"] == set()
    assert needs["tmp:typos"] == {"codespell_lib"}
    assert any(modules == {"spacy"} for modules in needs.values())


def test_probes_command_lists_every_option_with_its_default(capsys):
    from abnirml.cli import main

    assert main(["probes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "tmp.typo_rate\t0.1\tprobability that a word with a known misspelling is " \
           "misspelt" in lines
    assert any(line.startswith("axiom.length_tolerance\t10.0\t") for line in lines)


def test_every_axiom_is_one_object_with_a_claim_and_a_precondition():
    from abnirml.probes.axioms.probe import AXIOM_LIST, AxiomProbe

    assert [a.label for a in AXIOM_LIST] == [
        "TFC1 (Rennings et al.)", "TFC2", "M-TDC (Rennings et al.)", "LNC1 (Câmara & Hauff)",
        "LNC2", "TP", "TP (relaxed)", "STMC1 (Câmara & Hauff)", "STMC2 (Câmara & Hauff)",
        "STMC3"]
    assert all(a.claim.startswith("S(") and a.precondition for a in AXIOM_LIST)
    assert {a.shape for a in AXIOM_LIST} == {"pair", "triple", "duplicate"}
    assert AxiomProbe("lnc2").definition.shape == "duplicate"
