"""run.json is one declared record (:class:`abnirml.run_record.RunInfo`): the run builds it,
one reader checks it, and the statistics settings it names have one set of defaults."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Annotated, NotRequired

import pytest

from abnirml.errors import ConfigError, InputError
from abnirml.report.run_outputs import read_run_info, run_info_text
from abnirml.result_fields import About
from abnirml.run_record import (
    TEST_OF_FILES_WITHOUT_IT,
    RunInfo,
    alpha_of,
    run_fields,
    run_info_problem,
    statistics_of,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    from abnirml.pipeline import RunConfig, SessionSettings, run

    out = tmp_path_factory.mktemp("run-record") / "out"
    output = run(RunConfig(collection="demo", rankers=["bm25", "ql@lexical"],
                           probes=["mmp:tf:length"], out=str(out), effectiveness=False,
                           session=SessionSettings(cache=None, progress=False)))
    return output, out


def test_the_record_a_run_builds_is_the_record_read_back(small_run):
    output, out = small_run
    assert run_info_problem(output.run_info) is None
    back = read_run_info(out / "run.json")
    assert back == json.loads(json.dumps(output.run_info))
    assert list(back) == list(output.run_info)                  # the order it was built in
    assert (out / "run.json").read_text("utf-8") == run_info_text(back)
    ranker = back["rankers"][1]
    assert (ranker["name"], ranker["spec"]) == ("lexical", "ql")
    assert "spec" not in back["rankers"][0]


def test_every_field_the_run_writes_is_declared(small_run):
    output, _ = small_run
    declared = {name for name, *_ in run_fields()}
    written = set()

    def walk(value, prefix):
        if isinstance(value, dict):
            for key, inner in value.items():
                dotted = f"{prefix}.{key}" if prefix else key
                if dotted in declared:
                    written.add(dotted)
                    walk(inner, dotted)
        elif isinstance(value, list):
            for item in value:
                walk(item, prefix + "[]")

    walk(output.run_info, "")
    top = {k for k in output.run_info}
    assert top <= declared
    for section in ("collection", "rankers[]", "statistics", "counts", "options"):
        fields = {n for n in declared if n.startswith(section + ".")}
        assert fields & written, section


def _folder(tmp_path, text: str) -> Path:
    path = tmp_path / "run.json"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = {"collection": {"name": "demo", "source": "x", "queries": 2, "documents": 3},
        "rankers": [{"name": "bm25", "fingerprint": "f", "delta": 0.5,
                     "delta_source": "calibrated"}],
        "statistics": {"test": "clustered", "correction": "bonferroni", "ci": 0.95},
        "options": {"alpha": 0.01, "seed": 0, "dtp.data": "demo"}}


@pytest.mark.parametrize(("change", "problem"), [
    ({"statistics": 3}, "field 'statistics' must be a JSON object, found 3"),
    ({"rankers": {"bm25": 1}}, "field 'rankers' must be a list, found"),
    ({"rankers": [{"name": "bm25", "fingerprint": "f", "delta_source": "given"}]},
     "rankers[0] lacks the field 'delta'"),
    ({"options": {"alpha": "0.01"}}, "field 'options.alpha' must be a number, found \"0.01\""),
    ({"collection": {**GOOD["collection"], "queries": True}},
     "field 'collection.queries' must be an integer, found true"),
    ({"collection": None}, "field 'collection' must be a JSON object, found null"),
    ({"skipped": {"judged_without_text": "many"}},
     "field 'skipped.judged_without_text' must be an integer"),
    ({"probe_labels": {"mmp:tf:length": "TF"}},
     "field 'probe_labels.mmp:tf:length' must be a list"),
])
def test_a_malformed_run_json_is_refused_naming_the_file_and_field(tmp_path, change, problem):
    path = _folder(tmp_path, json.dumps({**GOOD, **change}, indent=2))
    with pytest.raises(InputError) as raised:
        read_run_info(path)
    message = str(raised.value)
    assert str(path) in message and problem in message
    # the line named is the one the field (or the record lacking it) starts on
    line = raised.value.line
    assert line is not None
    text_line = path.read_text().splitlines()[line - 1]
    field = problem.split("'")[1] if problem.startswith("field") else None
    if field is not None:
        assert f'"{field.split(".")[-1].split("[")[0]}"' in text_line


def test_the_writer_refuses_a_record_its_reader_would_refuse():
    with pytest.raises(ConfigError, match=r"run\.json: field 'options\.alpha' must be"):
        run_info_text({**GOOD, "options": {"alpha": "high"}})  # type: ignore[typeddict-item]


def test_a_syntax_error_is_placed_on_its_line(tmp_path):
    text = json.dumps(GOOD, indent=2).replace('"queries": 2', '"queries": 2,,', 1)
    line = next(i for i, row in enumerate(text.split("\n"), 1) if ",," in row)
    path = _folder(tmp_path, text)
    with pytest.raises(InputError, match=rf"run\.json:{line}: invalid JSON"):
        read_run_info(path)


def test_absent_run_json_reads_as_an_empty_record_and_undeclared_keys_pass(tmp_path):
    assert read_run_info(tmp_path / "run.json") == {}
    path = _folder(tmp_path, json.dumps({**GOOD, "plugin_section": {"anything": [1]}}))
    assert read_run_info(path)["options"]["dtp.data"] == "demo"   # type: ignore[typeddict-item]


def test_a_report_through_the_cli_names_the_bad_field(small_run, tmp_path, capsys):
    import shutil

    from abnirml.cli import main

    _, out = small_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    info = json.loads((copy / "run.json").read_text("utf-8"))
    info["rankers"][0]["delta"] = "wide"
    (copy / "run.json").write_text(json.dumps(info), encoding="utf-8")
    assert main(["report", str(copy)]) == 2
    err = capsys.readouterr().err
    assert "run.json" in err and "rankers[0].delta" in err and "Traceback" not in err


# -- one set of defaults ----------------------------------------------------------------------

def test_the_engine_the_cli_and_the_report_share_one_set_of_defaults():
    from abnirml.cli import build_parser
    from abnirml.evaluation.execution.experiment import ExperimentConfig
    from abnirml.evaluation.execution.score_file import ScoreStore
    from abnirml.evaluation.stats.significance import STATISTICS_DEFAULTS, StatsConfig
    from abnirml.pipeline import RunConfig

    engine = StatsConfig()
    assert (engine.test, engine.correction, engine.ci_level) == (
        STATISTICS_DEFAULTS.test, STATISTICS_DEFAULTS.correction, STATISTICS_DEFAULTS.ci)
    assert ExperimentConfig().alpha == RunConfig().statistics.alpha == STATISTICS_DEFAULTS.alpha
    assert ScoreStore([], [], {}, {}).alpha == STATISTICS_DEFAULTS.alpha
    args = build_parser().parse_args(["run", "--ranker", "bm25"])
    assert (args.alpha, args.test, args.correction, args.ci) == (
        STATISTICS_DEFAULTS.alpha, STATISTICS_DEFAULTS.test, STATISTICS_DEFAULTS.correction,
        STATISTICS_DEFAULTS.ci)
    # the report reads a run.json without the settings as the run's defaults
    assert alpha_of({}) == STATISTICS_DEFAULTS.alpha
    read = statistics_of({})
    assert (read["correction"], read["ci"], read["bootstrap"], read["permutations"]) == (
        engine.correction, engine.ci_level, engine.resamples, engine.permutations)
    # a file without its test predates the choice: those runs used the t-test
    assert read["test"] == TEST_OF_FILES_WITHOUT_IT == "ttest"
    assert statistics_of({"statistics": {"test": "wilcoxon"}})["test"] == "wilcoxon"


def test_no_module_reads_a_statistics_setting_with_its_own_default():
    """The settings' defaults are read in one place: no ``.get("alpha", 0.01)``,
    ``.get("test", …)`` or ``.get("ci", 0.95)`` anywhere else in the package."""
    pattern = re.compile(r"""\.get\(\s*["'](alpha|test|correction|ci|bootstrap)["']\s*,""")
    found = [f"{path.relative_to(ROOT)}:{number}"
             for path in sorted((ROOT / "src" / "abnirml").rglob("*.py"))
             if path.name not in ("run_record.py", "score_file.py")
             for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
             if pattern.search(line)]
    assert found == []
    literal = re.compile(r"alpha[^=\n]*[=,]\s*0\.01\b")
    assert [f"{path.relative_to(ROOT)}:{number}"
            for path in sorted((ROOT / "src" / "abnirml").rglob("*.py"))
            for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
            if literal.search(line) and "significance.py" not in path.name] == []


# -- the reference page -----------------------------------------------------------------------

def _gen_reference():
    spec = importlib.util.spec_from_file_location("gen_reference",
                                                  ROOT / "docs" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ReviewedRun(RunInfo, total=False):
    reviewer: Annotated[str, About("reviewed runs", "who looked at the run")]
    notes: NotRequired[Annotated[list[str], About("reviewed runs", "what they noted")]]


def test_the_reference_page_lists_the_fields_of_the_record_it_is_given():
    reference = _gen_reference()
    page = reference.run_page(ReviewedRun)
    assert "| `reviewer` | string, optional | reviewed runs | who looked at the run |\n" in page
    assert page.endswith("| `notes` | list, optional | reviewed runs | what they noted |\n")
    assert "| `statistics.ci` | number, optional | every run | the intervals' coverage " \
           "(`--ci`) |\n" in page
    assert "| `rankers[].delta` | number | every run | its δ |\n" in page
    assert page.startswith(reference.run_page())
    assert (ROOT / "docs" / "reference" / "run.md").read_text(encoding="utf-8") == \
        reference.run_page()
    # and the checker uses the same declaration
    assert run_info_problem({"reviewer": 3}, ReviewedRun) == \
        "field 'reviewer' must be a string, found 3"


# -- the report's sections ------------------------------------------------------------------

def test_the_page_is_built_by_its_list_of_section_builders(small_run, monkeypatch):
    """Each part of the page is one builder in SECTION_BUILDERS: the page holds what the
    builders make, in their order, and a builder added to the list shows up in the HTML
    page and (unless it says not) in report.md, laid out like the others."""
    from abnirml.report import analyses
    from abnirml.report.html import Section
    from abnirml.report.tables import Table, to_markdown

    _, out = small_run
    keys = [b.key for b in analyses.SECTION_BUILDERS]
    assert len(keys) == len(set(keys)) and keys[0] == "summary" and keys[-1] == "examples"
    info = read_run_info(out / "run.json")
    from abnirml.report.run_outputs import read_results

    records = read_results(out / "results.jsonl")
    sections, markdown, _ = analyses.build_sections(out, records, info)
    shown = [s.key for s in sections]
    assert shown[0] == "summary" and "delta-sweep" in shown and shown[-1] == "examples"
    assert not any(line == "## Rankers and δ" for line in markdown)    # in report.md already

    table = Table("Reviewer's notes", ["Ranker", "Note"],
                  [[r["name"], "looked at"] for r in info["rankers"]])

    def notes(inputs):
        return [Section("notes", "Notes", tables=[("notes", table)])]

    monkeypatch.setattr(analyses, "SECTION_BUILDERS", (
        *analyses.SECTION_BUILDERS, analyses.SectionBuilder("notes", notes)))
    sections, markdown, _ = analyses.build_sections(out, records, info)
    assert sections[-1].key == "notes"
    assert markdown[-4:] == ["", "## Reviewer's notes", "", to_markdown(table)]
    assert "| lexical | looked at |" in to_markdown(table)
    files = analyses.render_reports(out, records, info)
    assert "notes" in files["report.html"] and "| bm25 | looked at |" in files["report.md"]


@pytest.mark.parametrize(("text", "path", "line"), [
    ('{"a": 1,\n "b": {"c": [1,\n 2, {"d": "x"}]}}', ("b", "c", 2, "d"), 3),
    ('{"a": 1,\n "b": {"c": [1,\n 2, {"d": "x"}]}}', ("b", "c", 1), 3),
    ('{"a": 1,\n "b": {"c": [1,\n 2, {"d": "x"}]}}', ("b", "c", 0), 2),
    ('{"a": 1,\n "b": {"c": [1,\n 2, {"d": "x"}]}}', ("b",), 2),
    ('{"a": 1,\n "b": {"c": [1,\n 2, {"d": "x"}]}}', (), 1),
    ('{"a": "}\\"{",\n"b": 2}', ("b",), 2),             # braces and escapes inside strings
    ('{"a": 1,\n"a": 2}', ("a",), 2),                    # a duplicate key: the last, as read
    ('{"a": 1}', ("z",), None),
    ('{"a": [1]}', ("a", 3), None),
    ('{"a": 1}', ("a", "b"), None),
])
def test_field_line_finds_where_a_value_starts(text, path, line):
    from abnirml.run_record import field_line

    assert field_line(text, path) == line


def test_a_bad_value_deep_in_run_json_is_named_by_its_line(tmp_path):
    rankers = [{"name": f"r{i}", "fingerprint": "f", "delta": 0.1, "delta_source": "given"}
               for i in range(3)]
    rankers[2]["delta"] = "wide"
    path = _folder(tmp_path, json.dumps({**GOOD, "rankers": rankers}, indent=2))
    with pytest.raises(InputError) as raised:
        read_run_info(path)
    lines = path.read_text().splitlines()
    assert raised.value.line is not None
    assert lines[raised.value.line - 1].strip() == '"delta": "wide",'
    assert f"{path}:{raised.value.line}:" in str(raised.value)
