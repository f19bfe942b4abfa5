"""The report's visual language and figures, checked on small inputs with known answers:
score cells, alignment, δ curves merged when identical, rank-origin ranges and panels."""

from __future__ import annotations

import csv
from dataclasses import replace

import pytest

from abnirml.evaluation.analyses.rank_origin import RankRange, ranges_for_depth, run_depth
from abnirml.evaluation.stats.sweep import SweepPoint
from abnirml.report.export import label_columns, text_columns, tidy_table, to_latex
from abnirml.report.html import table_html
from abnirml.report.plots import curve_groups
from abnirml.report.rank_origin_report import (
    Comparison,
    is_self_comparison,
    origin_table,
    shown_columns,
)
from abnirml.report.tables import MARK_NOT_SIGNIFICANT, Table, format_score, to_markdown


def _record(score, significant, symmetric=False):
    return {"score": score, "significant": significant, "symmetric": symmetric}


def test_a_significant_score_never_reads_as_0_00():
    assert format_score(_record(0.0042, True)) == "+0.004"
    assert format_score(_record(-0.00046, True)) == "-0.0005"
    assert format_score(_record(0.003, True, symmetric=True)) == "0.003"
    assert format_score(_record(0.0, True)) == "0.00†"
    assert format_score(_record(0.0042, False)) == "* 0.00"        # not significant: as before
    assert format_score(_record(0.4, True)) == "+0.40"
    assert format_score(_record(-0.004, False)) == "* 0.00"


def test_text_after_numbers_is_aligned_left_in_html_and_latex():
    # the rankers table: a numeric δ between the name and the text columns after it
    table = Table("Rankers", ["Ranker", "δ", "δ source", "Queries", "Fingerprint"],
                  [["bm25", "0.681059", "calibrated", "16", "BM25[b=0.75]"],
                   ["ql", "0.0386", "given", "–", "QL[mu=2500]"]])
    assert text_columns(table) == {0, 2, 4}
    html = table_html(table)
    assert '<td class="label">calibrated</td>' in html
    assert '<td class="label">BM25[b=0.75]</td>' in html and "<td>0.681059</td>" in html
    assert "<td>16</td>" in html
    assert r"\begin{tabular}{lrlrl}" in to_latex(table)


def test_score_columns_with_missing_cells_stay_numbers():
    # the TMP table: a probe no ranker could score shows "–" in every ranker column
    table = Table("t", ["Probe", "Subset", "bm25", "ql", "Samples"],
                  [["tmp:a", "all", "+0.40", "* -0.05", "12"],
                   ["tmp:b", "all", "–", "–", "0"],
                   ["", "relevant", "0.00†", "+0.004", "3"]], scored=(2, 3))
    assert label_columns(table) == 2
    html = table_html(table, "tmp")
    assert '<td class="label">relevant</td>' in html and "<td>12</td>" in html
    # by default the star marks what is significant, and the legend says so
    assert 'class="sig pos" style="background:rgba(0,114,178,0.31)">+0.40*<' in html
    assert '<td class="ns">-0.05</td>' in html
    assert '<td class="sig">0.00†*</td>' in html
    assert "a * after a score marks it significant" in html
    assert "0.00† is a significant score of exactly 0" in html       # the legend, once needed
    assert r"\begin{tabular}{llrrr}" in to_latex(table)
    assert r"$0.00^{\dagger}^{*}$" in to_latex(table) and r"$-0.05$" in to_latex(table)
    assert "| tmp:a | all | +0.40* | -0.05 | 12 |" in to_markdown(table)
    # ABNIRML's convention, on request: the star marks what is not significant
    papers = replace(table, mark=MARK_NOT_SIGNIFICANT)
    assert '<td class="ns">* -0.05</td>' in table_html(papers, "tmp")
    assert ">+0.40<" in table_html(papers, "tmp") and "(ABNIRML&#x27;s convention)" in \
        table_html(papers, "tmp")
    assert r"$^{*}-0.05$" in to_latex(papers) and r"$0.00^{\dagger}$" in to_latex(papers)
    assert "| tmp:a | all | +0.40 | * -0.05 | 12 |" in to_markdown(papers)
    header, rows = tidy_table(table)
    assert header == ["Probe", "Subset", "bm25", "bm25 significant", "ql", "ql significant",
                      "Samples"]
    assert rows[2] == ["tmp:b", "relevant", "0.00", "true", "0.004", "true", "3"]


def test_no_zero_legend_when_no_cell_needs_it():
    table = Table("t", ["Probe", "bm25"], [["tmp:a", "+0.40"]], scored=(1,))
    assert "exactly 0" not in table_html(table)
    assert "blue when positive" in table_html(table)


def _points(probe, ranker, scores):
    return [SweepPoint(probe, "tmp", ranker, "all", p, 0.1 * p, s, 10)
            for p, s in zip((25.0, 50.0, 75.0), scores, strict=True)]


def test_identical_delta_curves_are_merged_and_empty_panels_dropped():
    points = (_points("tmp:shuffle", "bm25", [0.0, 0.0, 0.0])
              + _points("tmp:shuffle", "ql", [0.0, 0.0, 0.0])
              + _points("tmp:shuffle", "nn", [0.5, 0.4, 0.2])
              + _points("tmp:typos", "bm25", [-0.5, -0.4, -0.3])
              + _points("tmp:typos", "ql", [-0.6, -0.4, -0.3])
              + _points("tmp:empty", "bm25", [None, None, None]))
    groups = curve_groups(points)
    assert list(groups) == ["tmp:shuffle", "tmp:typos"]               # no empty panel
    assert [label for label, _, _ in groups["tmp:shuffle"]] == ["bm25 = ql", "nn"]
    assert [label for label, _, _ in groups["tmp:typos"]] == ["bm25", "ql"]
    assert groups["tmp:shuffle"][1][1:] == ([25.0, 50.0, 75.0], [0.5, 0.4, 0.2])


def test_delta_curves_draw(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    from abnirml.report.plots import delta_curves

    monkeypatch.setenv("ABNIRML_FIGURE_CACHE", "off")
    png = delta_curves(_points("tmp:a", "bm25", [0.1, 0.0, 0.0])
                       + _points("tmp:a", "ql", [0.1, 0.0, 0.0]), "TMP")
    assert png[:4] == b"\x89PNG"


def test_rank_origin_ranges_follow_the_depth():
    assert ranges_for_depth(100) == (RankRange(1, 10), RankRange(11, 100))
    assert ranges_for_depth(1000)[-1] == RankRange(501, 1000)
    assert ranges_for_depth(7) == (RankRange(1, 10),)
    assert run_depth({"q": [("a", 1.0)] * 3}, {"r": [("b", 1.0)] * 5}) == 5


def test_self_comparisons_and_empty_columns_are_left_out():
    identity = {"1-10": {"1-10": 1.0, "11-100": 0.0, ">100": 0.0},
                "11-100": {"1-10": 0.0, "11-100": 1.0, ">100": 0.0}}
    moved = {"1-10": {"1-10": 0.9, "11-100": 0.1, ">100": 0.0, "absent": 0.0},
             "11-100": {"1-10": 0.01, "11-100": 0.99, ">100": 0.0, "absent": 0.0}}
    assert is_self_comparison(identity) and not is_self_comparison(moved)
    comparison = Comparison("rank-origin-ql", "ql vs the candidate run", moved)
    columns = shown_columns([comparison])
    assert columns == ["1-10", "11-100"]
    table = origin_table(comparison, columns)
    assert table.header == ["Run rank", "1-10", "11-100"]
    assert table.rows[0] == ["1-10", "90.0%", "10.0%"]


def test_rank_origin_cli_defaults_to_the_runs_depth(dl19, tmp_path):
    from abnirml.cli import main

    out = tmp_path / "ro"
    runs = dl19 / "runs"
    assert main(["rank-origin", str(runs / "bm25.run"), str(runs / "tas-b.run"),
                 "--out", str(out)]) == 0
    with (out / "rank_origin.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    # DL19's runs hold 100 documents per query: 101-500 and 501-1000 would always be 0 %
    assert {r["run_range"] for r in rows} == {"1-10", "11-100"}
    assert {r["reference_range"] for r in rows} == {"1-10", "11-100", ">100", "absent"}


def test_tidy_csv_writes_yes_no_as_booleans_and_dashes_as_blanks():
    """The intervals table shows Significant as yes/no and a missing effect size as a dash;
    its CSV must hold the same true/false as the score tables' significance columns and an
    empty cell for the missing value, not the display strings."""
    table = Table("Intervals", ["Probe", "Effect size", "Size", "Note", "Significant"],
                  [["p1", "0.50", "medium", "–", "yes"], ["p2", "–", "–", "–", "no"],
                   ["p3", "0.10", "small", "–", "–"]])
    header, rows = tidy_table(table)
    assert header == ["Probe", "Effect size", "Size", "Note", "Significant"]
    assert rows == [["p1", "0.50", "medium", "", "true"], ["p2", "", "", "", "false"],
                    ["p3", "0.10", "small", "", ""]]


def test_tidy_csv_keeps_a_text_column_that_merely_contains_yes():
    table = Table("T", ["Probe", "Answer"], [["p1", "yes"], ["p2", "maybe"]])
    assert tidy_table(table)[1] == [["p1", "yes"], ["p2", "maybe"]]


def test_tidy_csv_splits_reason_count_lists_into_one_count_column_per_reason():
    """The transfer table's Discarded cells (``duplicate 1, identical 2,996``, ``0``) are
    display text; the CSV holds a count per reason, 0 where a dataset lost none."""
    table = Table("DTP", ["Dataset", "bm25", "Samples", "Discarded"],
                  [["MRPC", "+0.11", "36", "0"],
                   ["JFLEG", "+0.05", "39", "duplicate 1, identical 2,996"],
                   ["ASSET", "–", "12", "–"]],
                  scored=(1,), tallied=(3,))
    header, rows = tidy_table(table)
    assert header == ["Dataset", "bm25", "bm25 significant", "Samples",
                      "Discarded duplicate", "Discarded identical"]
    assert rows == [["MRPC", "0.11", "true", "36", "0", "0"],
                    ["JFLEG", "0.05", "true", "39", "1", "2996"],
                    ["ASSET", "", "", "12", "", ""]]


def test_transfer_table_marks_its_discarded_column_as_tallies():
    from abnirml.report.transfer_table import transfer_table

    record = {"family": "dtp", "subset": "all", "probe": "dtp:fluency-jfleg", "ranker": "bm25",
              "n": 39, "score": 0.05, "significant": True, "skipped": {"duplicate": 1}}
    table = transfer_table([record])
    header, rows = tidy_table(table)
    assert header[-1] == "Discarded duplicate" and rows[0][-1] == "1"


def test_tidy_csv_keeps_one_discarded_column_of_zeros_when_nothing_was_discarded():
    table = Table("DTP", ["Dataset", "Samples", "Discarded"],
                  [["MRPC", "36", "0"], ["JFLEG", "39", "0"]], tallied=(2,))
    assert tidy_table(table) == (["Dataset", "Samples", "Discarded"],
                                 [["MRPC", "36", "0"], ["JFLEG", "39", "0"]])


def test_tidy_csv_splits_differing_sample_counts_into_min_and_max():
    """Rankers that scored different numbers of samples show ``36/39``; the CSV holds two
    numbers, equal where the rankers agree, and a table without such a cell keeps one."""
    from abnirml.report.transfer_table import transfer_table

    records = [{"family": "dtp", "subset": "all", "probe": probe, "ranker": ranker, "n": n,
                "score": 0.1, "significant": True, "skipped": {}}
               for probe, ranker, n in [("dtp:a", "bm25", 39), ("dtp:a", "ql", 36),
                                        ("dtp:b", "bm25", 1210), ("dtp:b", "ql", 1210)]]
    header, rows = tidy_table(transfer_table(records))
    samples = header.index("Samples min")
    assert header[samples + 1] == "Samples max"
    assert [r[samples:samples + 2] for r in rows] == [["36", "39"], ["1210", "1210"]]
    same = transfer_table([r for r in records if r["probe"] == "dtp:b"])
    assert "Samples" in tidy_table(same)[0] and "Samples min" not in tidy_table(same)[0]


@pytest.mark.parametrize(("value", "text"), [(0.0, "0.00"), (-0.0, "0.00"), (-0.004, "0.00"),
                                             (0.004, "0.00"), (0.4, "+0.40"), (-0.4, "-0.40"),
                                             (-0.0149, "-0.01")])
def test_zero_has_no_sign_in_the_report_and_in_compare(value, text):
    from types import SimpleNamespace

    from abnirml.analysis_cli import comparison_table
    from abnirml.report.tables import signed_text

    assert signed_text(value) == text
    row = SimpleNamespace(probe="p", subset="all", n=3, score_a=value, score_b=0.4,
                          diff_ci_low=value, diff_ci_high=0.4, changed=1, p_value=0.5,
                          significant=False, note="")
    cells = comparison_table([row], "a", "b").rows[0]
    assert cells[3] == text and cells[5] == f"[{text}, +0.40]"
    assert format_score(_record(value, False)) == f"* {text}"


def test_delta_curves_legend_names_each_ranker_once(monkeypatch):
    """Curves that coincide in one panel but not in another: the legend still lists the
    rankers only (never "bm25 = ql" beside "bm25" and "ql"); the panel notes the overlap."""
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from abnirml.report import plots

    legends: list[list[str]] = []
    notes: list[str] = []
    figure_legend, axes_text = Figure.legend, Axes.text

    def spy_legend(self, handles, labels, **kwargs):
        legends.append(list(labels))
        return figure_legend(self, handles, labels, **kwargs)

    def spy_text(self, x, y, text, *args, **kwargs):
        notes.append(text)
        return axes_text(self, x, y, text, *args, **kwargs)

    monkeypatch.setattr(Figure, "legend", spy_legend)
    monkeypatch.setattr(Axes, "text", spy_text)
    monkeypatch.setenv("ABNIRML_FIGURE_CACHE", "off")
    points = (_points("tmp:shuffle", "bm25", [0.0, 0.0, 0.0])
              + _points("tmp:shuffle", "ql", [0.0, 0.0, 0.0])
              + _points("tmp:typos", "bm25", [-0.5, -0.4, -0.3])
              + _points("tmp:typos", "ql", [-0.6, -0.4, -0.3]))
    assert plots.delta_curves(points, "TMP")[:4] == b"\x89PNG"
    assert legends == [["bm25", "ql"]]
    assert notes == ["bm25 = ql"]


def test_compare_table_names_the_rankers_and_never_says_no_to_an_interval_beyond_zero():
    from types import SimpleNamespace

    from abnirml.analysis_cli import comparison_table

    def row(low, high, significant):
        return SimpleNamespace(probe="p", subset="all", n=40, score_a=0.0, score_b=-0.3,
                               diff_ci_low=low, diff_ci_high=high, changed=12, p_value=0.02,
                               significant=significant, note="")

    table = comparison_table([row(-0.45, -0.2, False), row(-0.45, 0.1, False),
                              row(-0.45, -0.2, True)], "a", "b", names=("bm25", "biencoder"))
    assert table.header[3:6] == ["bm25", "biencoder", "biencoder − bm25 interval"]
    assert [r[8] for r in table.rows] == ["interval only", "no", "yes"]
    same = comparison_table([row(0.0, 0.0, False)], "a", "b", names=("ql", "ql"),
                            runs=("v1", "v2"))
    assert same.header[3:6] == ["ql (v1)", "ql (v2)", "ql (v2) − ql (v1) interval"]


def test_compare_names_the_same_ranker_of_two_runs_by_its_run_folder(tmp_path):
    """Two runs' folders by name, with as many parents as tell them apart."""
    from abnirml.analysis_cli import run_labels

    assert run_labels(tmp_path / "baseline", tmp_path / "tuned") == ("baseline", "tuned")
    assert run_labels(tmp_path / "v1" / "out", tmp_path / "v2" / "out") == ("v1/out",
                                                                            "v2/out")
    assert run_labels(tmp_path / "out", tmp_path / "out") == ("A: out", "B: out")


def test_the_packaged_demo_is_named_not_located():
    """The demo's recorded source is the package's install folder, which names only the
    machine it was installed on: the report says "the demo shipped with abnirml" instead,
    and shows any other collection's source as recorded."""
    from abnirml.report.run_outputs import markdown_report, source_text

    installed = {"name": "demo", "source": "/home/dev/wt/src/abnirml/data/demo"}
    assert source_text(installed) == "the demo shipped with abnirml"
    mine = {"name": "trec-dl-2019", "source": "../shared/data/trec-dl-2019"}
    assert source_text(mine) == "../shared/data/trec-dl-2019"
    assert source_text({"name": "demo", "source": "/data/demo"}) == "/data/demo"
    text = markdown_report([], {"collection": {**installed, "queries": 16, "documents": 112}})
    assert "/home/dev" not in text and "the demo shipped with abnirml" in text
