"""results.jsonl, the generated reference and load_results come from one type: ResultRow.

A copy of the type with two more fields changes all three — the writer checks and writes
them, ``load_results`` checks and types them, the reference page lists them — while the
project's own type leaves the same rows' extra fields unchecked and unlisted.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Annotated, NotRequired

import pytest

from abnirml.errors import ConfigError, InputError
from abnirml.report.run_outputs import read_results, results_text
from abnirml.result_fields import About, ResultRow, row_fields, row_problem

ROOT = Path(__file__).resolve().parents[2]


class ReviewedRow(ResultRow):
    """The project's row plus a required text field and an optional count."""

    reviewer: Annotated[str, About("every reviewed record", "who looked at the row")]
    objections: NotRequired[Annotated[int, About("disputed rows", "objections raised")]]


def _row(**extra):
    """A row as the engine writes one (its key order, not the declaration order)."""
    return {"probe": "mmp:tf:length", "family": "mmp", "ranker": "bm25", "subset": "all",
            "score": 0.5, "n": 4, "pos": 3, "neg": 1, "neutral": 0, "mean_diff": 1.25,
            "p_value": 0.25, "significant": False, "delta": 0.1, "symmetric": False,
            "skipped": {}, **extra, "tests_in_table": 1, "p_adjusted": 0.25}


def _gen_reference():
    spec = importlib.util.spec_from_file_location("gen_reference",
                                                  ROOT / "docs" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_users_and_plugin_authors_see_the_one_type():
    import abnirml
    import abnirml.plugin

    assert abnirml.ResultRow is abnirml.plugin.ResultRow is ResultRow
    assert abnirml.About is abnirml.plugin.About is About


def test_the_copy_declares_the_projects_fields_then_its_own():
    names = [f.name for f in row_fields(ReviewedRow)]
    assert names == [f.name for f in row_fields()] + ["reviewer", "objections"]
    reviewer, objections = row_fields(ReviewedRow)[-2:]
    assert (reviewer.required, reviewer.json_type) == (True, "string")
    assert (objections.required, objections.json_type) == (False, "integer")


def test_the_writer_checks_and_writes_the_fields_of_the_type_it_is_given():
    row = _row(reviewer="ann", objections=2)
    line = json.loads(results_text([row], ReviewedRow))
    assert (line["reviewer"], line["objections"]) == ("ann", 2)
    # the row's own key order is kept: the bytes a run writes do not depend on the type
    assert results_text([row], ReviewedRow) == results_text([row]) == \
        json.dumps(row, ensure_ascii=False) + "\n"
    with pytest.raises(ConfigError, match=r"^result row mmp:tf:length × bm25 × all: result "
                                          r"record lacks reviewer$"):
        results_text([_row()], ReviewedRow)
    with pytest.raises(ConfigError, match=r"field 'objections' must be an integer, found "
                                          r"\"two\"$"):
        results_text([_row(reviewer="ann", objections="two")], ReviewedRow)
    # the project's type does not declare them: a plugin family's own fields pass unchecked
    assert json.loads(results_text([_row(objections="two")]))["objections"] == "two"


def test_load_results_checks_and_types_the_fields_of_the_type_it_is_given(tmp_path):
    pytest.importorskip("pandas")
    import abnirml

    path = tmp_path / "results.jsonl"
    path.write_text(results_text([_row(reviewer="ann", objections=2),
                                  _row(reviewer="bo", subset="relevant")], ReviewedRow),
                    encoding="utf-8")
    frame = abnirml.load_results(path, row_type=ReviewedRow)
    assert list(frame["reviewer"]) == ["ann", "bo"]
    assert str(frame["objections"].dtype) == "Int64"          # a count, absent on row 2
    assert frame["objections"].iloc[0] == 2 and frame["objections"].isna().iloc[1]
    assert [r["reviewer"] for r in read_results(path, ReviewedRow)] == ["ann", "bo"]
    # the project's type reads the same file; the undeclared count keeps pandas' own type
    assert str(abnirml.load_results(path)["objections"].dtype) == "float64"

    path.write_text(results_text([_row(reviewer="ann"), _row()]), encoding="utf-8")
    with pytest.raises(InputError, match=r"results\.jsonl:2: result record lacks reviewer$"):
        abnirml.load_results(tmp_path, row_type=ReviewedRow)
    assert len(abnirml.load_results(tmp_path)) == 2


def test_the_reference_page_lists_the_fields_of_the_type_it_is_given():
    reference = _gen_reference()
    page = reference.results_page(ReviewedRow)
    assert "| `reviewer` | string | every reviewed record | who looked at the row |\n" in page
    assert page.endswith("| `objections` | integer | disputed rows | objections raised |\n")
    assert page.startswith(reference.results_page())
    assert "reviewer" not in reference.results_page()
    assert (ROOT / "docs" / "reference" / "results.md").read_text(encoding="utf-8") == \
        reference.results_page()


@pytest.mark.parametrize(("change", "problem"), [
    ({"n": 4.0}, "field 'n' must be an integer, found 4.0"),
    ({"score": "high"}, "field 'score' must be a number or null, found \"high\""),
    ({"significant": 1}, "field 'significant' must be true or false, found 1"),
    ({"probe": 3}, "field 'probe' must be a string, found 3"),
    ({"skipped": []}, "field 'skipped' must be an object, found []"),
    ({"n": True}, "field 'n' must be an integer, found true"),
    ({"score": None, "p_value": 1}, None),
])
def test_row_problems_are_one_sentence_each(change, problem):
    assert row_problem({**_row(), **change}) == problem


def test_a_bad_row_in_results_jsonl_names_its_line(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(results_text([_row()]) + json.dumps({**_row(), "pos": "3"}) + "\n",
                    encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_results(path)
    assert str(caught.value).endswith("results.jsonl:2: field 'pos' must be an integer, "
                                      "found \"3\"")


@pytest.mark.parametrize(("field", "literal"), [
    ("score", "NaN"), ("mean_diff", "Infinity"), ("p_value", "-Infinity"), ("delta", "1e999"),
])
def test_a_number_json_does_not_have_is_refused_on_its_line(tmp_path, field, literal):
    """The writer never writes NaN or Infinity (a missing value is null); Python's reader
    accepts the bare words, and a NaN score would be read as a real one."""
    path = tmp_path / "results.jsonl"
    good = results_text([_row()])
    bad = good.replace(f'"{field}": {json.dumps(_row()[field])}', f'"{field}": {literal}')
    assert bad != good
    path.write_text(good + bad, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_results(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:2: field '{field}' holds ") and "\n" not in message
    assert "null" in message


@pytest.mark.parametrize(("skipped", "problem"), [
    ({"no_relevant": "many"}, "field 'skipped' must map each reason to a count (a whole "
                              "number ≥ 0), found \"many\" for 'no_relevant'"),
    ({"no_relevant": 2.7}, "found 2.7 for 'no_relevant'"),
    ({"no_relevant": -1}, "found -1 for 'no_relevant'"),
    ({"no_relevant": True}, "found true for 'no_relevant'"),
    ({"no_relevant": 2}, None),
])
def test_skipped_counts_are_checked(skipped, problem):
    found = row_problem({**_row(), "skipped": skipped})
    assert found == problem if problem is None else problem in str(found)


def test_load_results_refuses_what_report_refuses(tmp_path):
    """A bad count, a NaN or an empty file: one located line from load_results, never a
    traceback or a frame without columns."""
    pytest.importorskip("pandas")
    import abnirml

    path = tmp_path / "results.jsonl"
    for text, said in [
        (json.dumps({**_row(), "skipped": {"no_relevant": "many"}}) + "\n",
         "results.jsonl:1: field 'skipped' must map each reason to a count"),
        (results_text([_row()]).replace('"score": 0.5', '"score": NaN'),
         "results.jsonl:1: field 'score' holds NaN"),
        ("", "results.jsonl: holds no result records"),
        ("\n\n", "results.jsonl: holds no result records"),
    ]:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=said):
            abnirml.load_results(path)
