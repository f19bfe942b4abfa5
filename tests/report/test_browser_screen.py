"""The first screen and the report's controls in a real browser: contrast findings, the
ranker filter of grouped tables, and reordered texts in the example samples."""

from __future__ import annotations

import pytest

from abnirml.report.html import Section, page
from abnirml.report.tables import Table
from tests.report.test_contrasts import contrast_run  # noqa: F401 - a fixture
from tests.report.test_html import _external, _open, _visible_rows, browser  # noqa: F401


def test_browser_grouped_table_filter_keeps_whole_groups(browser, tmp_path):  # noqa: F811
    """A grouped table names the ranker on a group's first row only: "Ranker: all" is
    offered once, and choosing a ranker shows all of its group's rows."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    rankers, groups = ["bm25", "ql", "tfidf", "biencoder"], ["low", "middle", "high", "none"]
    rows = [[ranker if k == 0 else "", f"{group} (0.40, 3 queries)", f"0.{k}0 (12)"]
            for ranker in rankers for k, group in enumerate(groups)]
    table = Table("Fraction satisfied by overlap", ["Ranker", "Overlap group", "AND"], rows)
    path = tmp_path / "grouped.html"
    path.write_text(page("grouped", [Section("axioms", "Axioms", tables=[("axiom-overlap",
                                                                         table)])]),
                    encoding="utf-8")
    assert _external(_open(browser, path)) == []
    browser.execute_script("document.querySelectorAll('details').forEach("
                           "function (d) { d.open = true; });")
    element = browser.find_element(By.CSS_SELECTOR, 'table[data-table="axiom-overlap"]')
    box = element.find_element(By.XPATH, "../preceding-sibling::div[@class='controls']")
    select = Select(box.find_element(By.CSS_SELECTOR, "select[data-column='0']"))
    assert [o.text for o in select.options] == ["Ranker: all", "biencoder", "bm25", "ql",
                                                "tfidf"]
    select.select_by_visible_text("ql")
    shown = _visible_rows(element)
    assert [r[1].split(" ")[0] for r in shown] == groups and shown[0][0] == "ql"
    assert box.find_element(By.CLASS_NAME, "count").text == "4 of 16 rows"
    # sorting first, then filtering: a row keeps the group it was printed in
    select.select_by_index(0)
    element.find_elements(By.CSS_SELECTOR, "thead th")[2].click()
    select.select_by_visible_text("tfidf")
    assert len(_visible_rows(element)) == 4


def test_browser_probe_subset_rows_sort_and_filter_with_their_probe(browser, tmp_path):  # noqa: F811
    """A probe × subset table names the probe on its first row only: sorting orders the
    probes and keeps each one's subset rows beneath it, and searching a probe's name
    shows all of its rows (3 per probe), not its first row alone."""
    from selenium.webdriver.common.by import By

    probes = [f"tmp:p{i}" for i in range(8)]
    scores = [0.3, -0.2, 0.9, 0.1, -0.7, 0.5, 0.0, 0.6]
    subsets = ["all", "relevant", "nonrelevant"]
    rows = [[probe if k == 0 else "", subset, f"{score + k / 100:+.2f}", "40"]
            for probe, score in zip(probes, scores, strict=True)
            for k, subset in enumerate(subsets)]
    table = Table("Manipulations", ["Probe", "Subset", "bm25", "Samples"], rows)
    path = tmp_path / "subsets.html"
    path.write_text(page("subsets", [Section("tmp", "Manipulations",
                                             tables=[("tmp", table)])]), encoding="utf-8")
    assert _external(_open(browser, path)) == []
    browser.execute_script("document.querySelectorAll('details').forEach("
                           "function (d) { d.open = true; });")
    element = browser.find_element(By.CSS_SELECTOR, 'table[data-table="tmp"]')
    box = element.find_element(By.XPATH, "../preceding-sibling::div[@class='controls']")
    search = box.find_element(By.CSS_SELECTOR, "input.filter")
    search.send_keys("tmp:p4")
    shown = _visible_rows(element)
    assert [(r[0], r[1]) for r in shown] == [("tmp:p4", "all"), ("", "relevant"),
                                             ("", "nonrelevant")]
    assert box.find_element(By.CLASS_NAME, "count").text == "3 of 24 rows"
    search.clear()
    search.send_keys("nonrelevant")              # a subset's name: every probe, whole
    assert box.find_element(By.CLASS_NAME, "count").text == "24 of 24 rows"
    search.clear()
    search.send_keys(" ")
    search.clear()
    element.find_elements(By.CSS_SELECTOR, "thead th")[2].click()   # bm25, descending
    shown = _visible_rows(element)
    assert len(shown) == 24
    order = sorted(zip(scores, probes, strict=True), reverse=True)
    assert [r[0] for r in shown[::3]] == [probe for _, probe in order]
    for k in range(0, 24, 3):
        head = shown[k]
        assert [r[1] for r in shown[k:k + 3]] == subsets
        score = dict(zip(probes, scores, strict=True))[head[0]]
        assert [r[2] for r in shown[k:k + 3]] == [f"{score + j / 100:+.2f}" for j in range(3)]


def test_browser_sorted_rows_show_the_label_they_inherit(browser, tmp_path):  # noqa: F811
    """Measure-and-match rows name their variable once per run of rows; a sorted row that
    moved away from its run shows the variable it belongs to, and the search finds it."""
    from selenium.webdriver.common.by import By

    rows = [[variable if k == 0 else "", control, f"{(3 * i + k) / 10 - 0.6:+.2f}", "40"]
            for i, variable in enumerate(["TF", "Length", "Overlap", "Relevance", "Sum TF"])
            for k, control in enumerate(["Length", "Relevance", "Overlap"])]
    table = Table("Measure and match", ["Variable", "Control", "bm25", "Samples"], rows)
    path = tmp_path / "mmp.html"
    path.write_text(page("mmp", [Section("mmp", "MMP", tables=[("mmp", table)])]),
                    encoding="utf-8")
    _open(browser, path)
    browser.execute_script("document.querySelectorAll('details').forEach("
                           "function (d) { d.open = true; });")
    element = browser.find_element(By.CSS_SELECTOR, 'table[data-table="mmp"]')
    box = element.find_element(By.XPATH, "../preceding-sibling::div[@class='controls']")
    box.find_element(By.CSS_SELECTOR, "input.filter").send_keys("Sum TF")
    assert box.find_element(By.CLASS_NAME, "count").text == "3 of 15 rows"
    box.find_element(By.CSS_SELECTOR, "input.filter").clear()
    box.find_element(By.CSS_SELECTOR, "input.filter").send_keys(" ")
    box.find_element(By.CSS_SELECTOR, "input.filter").clear()
    element.find_elements(By.CSS_SELECTOR, "thead th")[2].click()
    shown = _visible_rows(element)
    assert [r[0] for r in shown[:3]] == ["Sum TF"] * 3         # the largest scores
    assert all(r[0] for r in shown)                             # no row lost its variable


@pytest.mark.slow
def test_browser_shows_contrast_findings_and_moved_words(browser, contrast_run):  # noqa: F811
    """The bigram ranker's card leads with `tmp:shuffle-words`, linked to its row; the
    shared line names the appended query; a shuffled passage marks moved words, not "two
    different documents"."""
    from selenium.webdriver.common.by import By

    assert _external(_open(browser, contrast_run / "report.html")) == []
    findings = browser.find_element(By.ID, "findings")
    assert findings.is_displayed()
    shared = findings.find_element(By.CLASS_NAME, "shared")
    assert "all 3 rankers prefer" in shared.text
    assert "tmp:append-query" in shared.text
    card = findings.find_element(By.CSS_SELECTOR, ".card[data-ranker='bigrams']")
    first = card.find_element(By.CSS_SELECTOR, "li")
    assert first.text.startswith("Unlike bm25 and ql, bigrams prefers the original")
    code = first.find_element(By.CSS_SELECTOR, "a.probe code")
    assert code.text == "tmp:shuffle-words"
    for ranker in ("bm25", "ql"):
        other = findings.find_element(By.CSS_SELECTOR, f".card[data-ranker='{ranker}']")
        assert other.find_elements(By.CSS_SELECTOR, "li") == []
    # the probe id opens the statistics section at the bigram ranker's row
    link = first.find_element(By.CSS_SELECTOR, "a.probe")
    row_id = link.get_attribute("href").split("#", 1)[1]
    link.click()
    row = browser.find_element(By.ID, row_id)
    assert row.is_displayed() and "tmp:shuffle-words" in row.text and "bigrams" in row.text
    # its samples: reordered words are marked as moved in both texts
    _open(browser, contrast_run / "report.html")
    browser.find_element(
        By.CSS_SELECTOR, ".card[data-ranker='bigrams'] li a[href='#ex-tmp:shuffle-words']"
    ).click()
    block = browser.find_element(By.ID, "ex-tmp:shuffle-words")
    assert block.get_attribute("open") is not None
    sample = block.find_element(By.CLASS_NAME, "sample")
    assert "Two different documents" not in sample.text
    assert "The same words in another order" in sample.text
    d1, d2 = sample.find_elements(By.CSS_SELECTOR, ".doc")[:2]
    assert d1.find_elements(By.CSS_SELECTOR, "mark.mov")
    assert d2.find_elements(By.CSS_SELECTOR, "mark.mov")
    assert sorted(d1.text.split()) == sorted(d2.text.split())     # the same words
