"""The report's ranking-bias section: foil win rates per ranker and each probe's direction
beside its paper's, rendered from records alone (and on the page and in report.md of a run)."""

from __future__ import annotations

from abnirml.report.export import tidy_table
from abnirml.report.foil_section import foil_section

RECORDS = [
    {"probe": "bias:biased-foil", "ranker": "bm25", "subset": "all", "score": 1.0, "n": 45,
     "significant": True, "paper_direction": 1, "foil_wins": 45, "foil_win_rate": 1.0,
     "foil_win_rate_ci_low": 0.794, "foil_win_rate_ci_high": 1.0},
    {"probe": "bias:biased-foil", "ranker": "minilm", "subset": "all", "score": -0.2,
     "n": 45, "significant": True, "paper_direction": 1, "foil_wins": 14,
     "foil_win_rate": 0.3111, "foil_win_rate_ci_low": None, "foil_win_rate_ci_high": None},
    {"probe": "bias:brevity", "ranker": "bm25", "subset": "all", "score": -0.6, "n": 45,
     "significant": True, "paper_direction": -1},
    {"probe": "bias:brevity", "ranker": "minilm", "subset": "all", "score": 0.04, "n": 45,
     "significant": False, "paper_direction": -1},
    {"probe": "bias:brevity", "ranker": "bm25", "subset": "relevant", "score": -0.6, "n": 45,
     "significant": True, "paper_direction": -1},
    {"probe": "tmp:typos", "ranker": "bm25", "subset": "all", "score": -0.3, "n": 9,
     "significant": True},
]


def test_the_section_shows_win_rates_and_directions():
    section = foil_section(RECORDS, {"statistics": {"ci": 0.9}})
    tables = dict(section.tables)
    wins = tables["foil-win-rates"]
    assert wins.header[-1] == "90 % interval (%)"
    assert wins.rows == [["bias:biased-foil", "bm25", "45", "45", "100.0", "[79.4, 100.0]"],
                         ["", "minilm", "14", "45", "31.1", "–"]]
    directions = tables["bias-directions"]
    assert directions.header == ["Probe", "Bias shows as", "bm25", "minilm"]
    assert directions.rows == [
        ["bias:biased-foil", "positive", "shows the bias (+1.000)", "the opposite (-0.200)"],
        ["bias:brevity", "negative", "shows the bias (-0.600)", "no effect (+0.040)"]]
    header, rows = tidy_table(wins)       # the CSV: numbers and interval ends in columns
    assert header[-2:] == ["90 % interval (%) low", "90 % interval (%) high"]
    assert rows == [["bias:biased-foil", "bm25", "45", "45", "100.0", "79.4", "100.0"],
                    ["bias:biased-foil", "minilm", "14", "45", "31.1", "", ""]]


def test_no_section_without_such_records():
    assert foil_section(RECORDS[-1:], {}) is None


def test_a_run_shows_the_section_on_its_page_and_in_report_md(tmp_path):
    from abnirml.pipeline import RunConfig, SessionSettings, run

    out = tmp_path / "out"
    run(RunConfig(collection="demo", rankers=["bm25"], probes=["bias:biased-foil"],
                  effectiveness=False, out=str(out),
                  session=SessionSettings(cache=None, progress=False)))
    page = (out / "report.html").read_text(encoding="utf-8")
    assert '<section id="biases">' in page and "Foil win rates" in page
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "## Foil win rates" in markdown and "| bias:biased-foil | bm25 |" in markdown
    assert (out / "tables" / "foil-win-rates.csv").is_file()
