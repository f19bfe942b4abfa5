"""The report's listwise section and usage table, rendered from run.json values alone."""

from __future__ import annotations

import pytest

from abnirml.report.listwise_section import listwise_section, usage_table

RUN_INFO = {
    "listwise": {"rankers": {
        "echo": {"list_size": 4, "window": 20, "step": 10,
                 "null_test": {"list_size": 4, "lists": 8, "queries": 2, "first_rate": 1.0,
                               "ci_low": 0.158, "ci_high": 1.0, "ci": 0.95},
                 "position_response": {"list_size": 4, "queries": 2,
                                       "mean_rank": [1.0, 2.0, 3.0, 4.0]}},
        "blind": {"list_size": 3, "window": 20, "step": 10,
                  "position_response": {"list_size": 3, "queries": 2,
                                        "mean_rank": [1.5, 1.5, 1.5]}},
    }},
    "usage": {"rankgpt": {"requests": 12, "prompt_tokens": 3400, "completion_tokens": 96}},
}
RECORDS = [
    {"probe": "tmp:append-query", "ranker": "echo", "subset": "all", "score": 0.0, "n": 9,
     "position_bias": 1.0, "position_bias_earlier": 0.75},
    {"probe": "tmp:append-query", "ranker": "bm25", "subset": "all", "score": 1.0, "n": 9},
    {"probe": "tmp:append-query", "ranker": "echo", "subset": "window-inside", "score": 0.5,
     "n": 6},
]


def test_section_tables_hold_the_values():
    section, draw = listwise_section(RECORDS, RUN_INFO)
    tables = dict(section.tables)
    null = tables["listwise-null-test"]
    assert null.rows == [["echo", "4", "8", "2", "100.0 %", "15.8 % – 100.0 %"]]
    curve = tables["listwise-position-response"]
    assert curve.header[-1] == "at 4"
    assert curve.rows[1] == ["blind", "2", "1.50", "1.50", "1.50", "–"]
    assert tables["listwise-position-bias"].rows == [
        ["tmp:append-query", "100.0 % (earlier 75.0 %)"]]
    assert tables["listwise-windows"].rows == [["tmp:append-query", "echo", "+0.500 (6)", "–"]]
    assert draw is not None


def test_no_listwise_values_no_section():
    assert listwise_section([RECORDS[1]], {}) == (None, None)
    assert usage_table({}) is None


def test_usage_table():
    table = usage_table(RUN_INFO)
    assert table.header == ["Ranker", "Requests", "Prompt tokens", "Completion tokens"]
    assert table.rows == [["rankgpt", "12", "3,400", "96"]]


def test_position_response_plot_is_a_png(monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("ABNIRML_FIGURE_CACHE", "off")
    from abnirml.report.plots import position_response

    png = position_response({"echo": [1.0, 2.0, 3.0], "blind": [2.0, 2.0, 2.0]})
    assert png.startswith(b"\x89PNG")


def test_the_guide_reads_the_position_response_plot_the_way_it_is_drawn(monkeypatch):
    """The plot puts rank 1 at the top, so a primacy ranker (the echo: mean rank = input
    position) draws a line falling to the right; the guide and the caption must say so."""
    import re
    from pathlib import Path

    from abnirml.report import listwise_section as section_module
    from abnirml.report import plots

    drawn = {}

    def keep(figure):
        ax = figure.axes[0]
        drawn["ylim"] = ax.get_ylim()
        drawn["line"] = ax.lines[0].get_ydata().tolist()
        return b"png"

    monkeypatch.setattr(plots, "_png", keep)
    monkeypatch.setattr(plots, "cached_png", lambda name, draw, key: draw())
    plots.position_response({"echo": [1.0, 2.0, 3.0, 4.0]})
    top, bottom = drawn["ylim"][1], drawn["ylim"][0]
    assert top < bottom                       # rank 1 at the top: the y axis runs downwards
    # primacy (ranks growing with the position) therefore falls towards the bottom
    assert drawn["line"] == sorted(drawn["line"])
    guide = " ".join((Path(__file__).resolve().parents[2] / "docs" / "guide" /
                      "llm-rerankers.md").read_text(encoding="utf-8").split())
    curve = guide[guide.index("**The position-response curve**"):]
    curve = curve[:curve.index("With a sliding window")]
    assert re.search(r"falls to the right[^.;]*\) means the model favours early passages "
                     r"\(primacy\)", curve)
    assert "rising" not in curve and "rank 1 at the top" in curve
    assert "falling to the right favours early passages (primacy)" in \
        section_module.FIGURE_CAPTION
