"""report.html, exports and the rebuild from files; the browser test opens the page."""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from abnirml.report.export import latex_cell, to_csv, to_latex
from abnirml.report.html import esc, word_diff
from abnirml.report.tables import Table

REPO = Path(__file__).resolve().parents[2]
ATTACKS = (
    '<script>window.__pwned = 1</script>',
    '<img src="http://127.0.0.1:9/pixel.png" onerror="window.__pwned = 2">',
    '</div></td><b>bold</b> &amp; <iframe src="https://example.org/"></iframe>',
)


def write_crafted_collection(root: Path) -> Path:
    """A tiny collection whose query and documents are full of markup and script."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "queries.tsv").write_text(
        'q1\tvitamin <script>window.__pwned = 9</script> symptoms\n'
        'q2\tbread dough "rise" & <b>proof</b>\n', encoding="utf-8")
    docs, qrels = [], []
    for q, term in (("q1", "vitamin"), ("q2", "dough")):
        for i in range(8):
            words = " ".join([term] * (1 + i % 4))
            filler = " ".join(["filler"] * (i % 3))
            text = f"{words} {ATTACKS[i % 3]} {filler} text number {i}"
            docs.append(f"{q}_d{i}\t{text}")
            qrels.append(f"{q} 0 {q}_d{i} {i % 4}")
    qrels.append("q1 0 q1_no_text 2")            # judged, but the collection has no text
    (root / "passages.tsv").write_text("\n".join(docs) + "\n", encoding="utf-8")
    (root / "qrels.txt").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module", autouse=True)
def _module_figure_cache(tmp_path_factory):
    """The module's runs draw into a folder of their own: module fixtures are built before
    conftest's per-test cache folder is set, and would otherwise read and fill the user's
    figure cache (where a figure drawn by other code under the same version may wait)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ABNIRML_FIGURE_CACHE", str(tmp_path_factory.mktemp("module-figures")))
        yield


@pytest.fixture(scope="module")
def demo_dir(demo_battery):
    """``make demo``'s run with the default rankers (shared with the results-digest test)."""
    return demo_battery


@pytest.fixture(scope="module")
def crafted_dir(tmp_path_factory):
    from abnirml.pipeline import RunConfig, SessionSettings, run

    base = tmp_path_factory.mktemp("crafted")
    collection = write_crafted_collection(base / "collection")
    out = base / "out"
    run(RunConfig(collection=str(collection), rankers=["bm25", "ql"], out=str(out),
                  examples_per_probe=8, session=SessionSettings(cache=None, progress=False)))
    return out


def test_report_has_every_section_table_and_figure(demo_dir):
    html = (demo_dir / "report.html").read_text("utf-8")
    for key in ("summary", "effectiveness", "family-mmp", "rank-origin", "delta-sweep",
                "examples"):
        assert f'<section id="{key}">' in html
    records = [json.loads(line) for line in (demo_dir / "results.jsonl").open()]
    labels = json.loads((demo_dir / "run.json").read_text())["probe_labels"]
    for record in records:   # rows are labelled as run.json says (MMP: variable, control)
        if "no-data" in (record.get("skipped") or {}):
            continue         # transfer probes without data: a caveat line, not a row
        assert all(esc(cell) in html for cell in labels[record["probe"]] if cell)
    # MMP rows are labelled by variable and control; the sample counts are shown
    assert '<td class="label">Sum-TF</td>' in html and "<th>Samples</th>" in html
    assert html.count('<img src="data:image/png;base64,') >= 2   # sweep + one rank origin
    origin = html[html.index('<section id="rank-origin">'):]
    origin = origin[:origin.index("</section>")]
    assert origin.count("<img") == 1                  # one compact figure for every ranker
    # the demo's candidates are BM25's own top 100: bm25's re-ranking is a self-comparison
    note = re.search(r'<p class="caveat">Left out as self-comparisons[^<]*: ([^<]*)\.</p>',
                     origin)
    assert note is not None and "bm25" in note[1].split(", ")
    assert "bm25 vs the candidate run" not in origin and "ql vs the candidate run" in origin
    # nothing is fetched (XSum's demo metadata names its source URL, as text only)
    assert re.search(r'(src|href)\s*=\s*"?https?:', html) is None
    assert "default-src 'none'" in html
    exported = sorted(p.name for p in (demo_dir / "tables").iterdir())
    for slug in ("rankers", "effectiveness", "mmp", "rank-origin-ql"):
        assert f"{slug}.csv" in exported and f"{slug}.tex" in exported
    assert "delta-sweep.csv" in exported


def _page_text(html: str) -> str:
    """The page's text as a reader sees it: tags dropped, entities decoded."""
    import html as html_module

    return html_module.unescape(re.sub(r"<[^>]+>", "", html))


def test_every_caveat_of_report_md_is_on_the_page(demo_dir, crafted_dir):
    from abnirml.report.caveats import all_caveats

    for folder in (demo_dir, crafted_dir):
        records = [json.loads(line) for line in (folder / "results.jsonl").open()]
        run_info = json.loads((folder / "run.json").read_text())
        md = (folder / "report.md").read_text("utf-8")
        page = _page_text((folder / "report.html").read_text("utf-8"))
        caveats = all_caveats(records, run_info)
        assert caveats
        for caveat in caveats:
            assert caveat.in_markdown in md and caveat.text in page, caveat
        # every bullet and skip line report.md prints is one of them
        md_lines = [line.removeprefix("- ") for line in md.splitlines()
                    if line.startswith(("- ", "Skipped samples:", "Also skipped"))]
        assert md_lines and set(md_lines) <= {c.text for c in caveats}
    demo_page = _page_text((demo_dir / "report.html").read_text("utf-8"))
    for title in ("Câmara & Hauff, Table 2", "Fraction of instances satisfied, strict order "
                  "(Câmara & Hauff, Table 3)", "ties within the ranker's δ"):
        assert title in demo_page and title in (demo_dir / "report.md").read_text("utf-8")
    transfer = demo_page[demo_page.index("Dataset-transfer probes"):]
    assert "Discarded" in transfer and "duplicate 1" in transfer      # JFLEG's repeated pair
    assert "Skipped samples:" in demo_page and "not-applicable" in demo_page
    crafted_page = _page_text((crafted_dir / "report.html").read_text("utf-8"))
    assert "Judged documents without text: 1 of 17 judgments" in crafted_page
    lexical = next(c.text for c in all_caveats([], json.loads(
        (crafted_dir / "run.json").read_text())) if c.text.startswith("Lexical"))
    assert lexical in crafted_page and "bm25, ql take N" in lexical


def test_no_heading_is_repeated(demo_dir):
    html = (demo_dir / "report.html").read_text("utf-8")
    headings = re.findall(r"<h[23]>([^<]*)</h[23]>", html)
    md = [line.lstrip("#").strip() for line in
          (demo_dir / "report.md").read_text("utf-8").splitlines() if line.startswith("#")]
    for found in (headings, md):
        assert len(found) == len(set(found)), found
        for name in ("Rankers and δ", "Effectiveness"):
            assert sum(h.startswith(name) for h in found) <= 1, (name, found)
    assert sum(h.startswith("Effectiveness") for h in headings) == 1


def test_lexical_caveat_quotes_the_runs_own_effectiveness():
    from abnirml.report.caveats import run_caveats

    info = {"collection": {"documents": 4337, "judgments": 9260},
            "skipped": {"judged_without_text": 4923},
            "rankers": [{"name": "bm25", "fingerprint": "BM25[b=0.75][collection=x]"},
                        {"name": "biencoder", "fingerprint": "BiEncoder[minilm]"}],
            "effectiveness": {"candidates": "bm25", "candidate_run": {"nDCG@10": 0.5058},
                              "rankers": {"bm25": {"nDCG@10": 0.44249},
                                          "biencoder": {"nDCG@10": 0.61}}}}
    texts = [c.text for c in run_caveats(info)]
    assert texts[0].startswith("Judged documents without text: 4,923 of 9,260 judgments")
    assert texts[1] == (
        "Lexical statistics: bm25 takes N, document frequencies and lengths from the "
        "collection's own 4,337 documents with text, not from the full corpus a first-stage "
        "run was retrieved from: re-ranking the candidates (bm25) gives nDCG@10 0.442 (bm25) "
        "against 0.506 for the candidate run's own order.")
    info["rankers"] = info["rankers"][1:]                       # no lexical ranker: no note
    assert [c.text[:7] for c in run_caveats(info)] == ["Judged "]


def test_report_command_rebuilds_everything_from_files(demo_dir, tmp_path, monkeypatch):
    from abnirml.cli import main

    copy = tmp_path / "copy"
    shutil.copytree(demo_dir, copy)
    for name in ("report.md", "report.html"):
        (copy / name).unlink()
    shutil.rmtree(copy / "tables")
    monkeypatch.setenv("ABNIRML_CACHE", str(tmp_path / "never-created.sqlite"))
    assert main(["report", str(copy)]) == 0
    assert not (tmp_path / "never-created.sqlite").exists()      # nothing was rescored
    assert (copy / "report.md").read_text() == (demo_dir / "report.md").read_text()
    assert (copy / "report.html").read_text() == (demo_dir / "report.html").read_text()
    names = sorted(p.name for p in (demo_dir / "tables").iterdir())
    _, mismatch, errors = filecmp.cmpfiles(demo_dir / "tables", copy / "tables", names,
                                               shallow=False)
    assert mismatch == [] and errors == []


def test_rank_origin_file_in_directory_joins_the_report(demo_dir, tmp_path, dl19):
    from abnirml.cli import main

    copy = tmp_path / "with-origin"
    shutil.copytree(demo_dir, copy)
    runs = dl19 / "runs"
    assert main(["rank-origin", str(runs / "bm25.run"), str(runs / "tas-b.run"), "--qrels",
                 str(dl19 / "qrels.txt"), "--out", str(copy)]) == 0
    assert main(["report", str(copy)]) == 0
    html = (copy / "report.html").read_text("utf-8")
    assert "tas-b.run vs bm25.run (grade=3)" in html
    assert (copy / "tables" / "rank-origin-file-grade-3.csv").is_file()


def test_crafted_markup_is_escaped_everywhere(crafted_dir):
    from abnirml.report.page_script import SCRIPT

    raw = (crafted_dir / "report.html").read_text("utf-8")
    # one script, the page's own, whose hash the Content-Security-Policy pins
    assert raw.lower().count("<script") == 1 and f"<script>{SCRIPT}</script>" in raw
    html = re.sub(r'<mark class="\w+">|</mark>', "", raw)     # word-diff highlighting
    assert "<iframe" not in html.lower() and "<img src=\"http" not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert "&lt;b&gt;bold&lt;/b&gt; &amp;amp;" in html
    assert 'onerror=&quot;window.__pwned = 2&quot;' in html
    md = (crafted_dir / "report.md").read_text("utf-8")
    assert "# abnirml report" in md


def test_word_diff_marks_only_changed_words():
    a, b, related = word_diff("the cat sat on the mat", "the cat lay on the <mat>")
    assert related
    assert a == 'the cat <mark class="del">sat</mark> on the <mark class="del">mat</mark>'
    assert b == 'the cat <mark class="ins">lay</mark> on the <mark class="ins">&lt;mat&gt;</mark>'
    plain_a, _, related = word_diff("apples and pears", "the stock market fell")
    assert not related and plain_a == "apples and pears"


def test_exports_escape_latex_and_keep_csv_cells():
    table = Table("Scores of my_model & co", ["Probe", "bm25", "n"],
                  [["tmp:50%_off", "* -0.05", "1,234"], ["x", "+0.40", "7"]])
    # CSV is tidy: the star becomes a column, the thousands separator goes
    assert to_csv(table).splitlines()[:2] == ["Probe,bm25,bm25 significant,n",
                                              "tmp:50%_off,-0.05,false,1234"]
    latex = to_latex(table, "tab:x")
    assert r"tmp:50\%\_off & $^{*}-0.05$ & $1{,}234$ \\" in latex
    assert r"\caption{Scores of my\_model \& co}" in latex
    assert r"\begin{tabular}{lrr}" in latex
    assert latex_cell("+0.40") == "$+0.40$" and latex_cell("a^b") == r"a\textasciicircum{}b"


# -- the browser test ---------------------------------------------------------------------

CHROME_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage")


def _install_browser() -> str | None:
    """Install Debian's chromium and chromium-driver when missing; a reason if impossible."""
    if shutil.which("chromium") and shutil.which("chromedriver"):
        return None
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "chromium/chromedriver missing and apt-get unavailable (run 'make browser-deps')"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "chromium", "chromium-driver"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
        if done.returncode != 0:
            return f"installing chromium failed: {done.stderr.strip()[-300:]}"
    if shutil.which("chromium") and shutil.which("chromedriver"):
        return None
    return "chromium installed but not found on PATH"


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    reason = _install_browser()
    if reason:
        pytest.skip(reason)
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (it is in the 'dev' extra)")
    options = Options()
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chrome-profile')}")
    options.add_argument("--window-size=1400,1000")
    options.binary_location = shutil.which("chromium")
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    yield driver
    driver.quit()


def _open(driver, path: Path) -> list[str]:
    """Load ``path`` and return every URL the page requested."""
    driver.get_log("performance")                           # drop earlier events
    driver.get(path.resolve().as_uri())
    driver.execute_script("return document.readyState")
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def _external(urls: list[str]) -> list[str]:
    """Requests that would leave the machine (browser-internal chrome:// pages do not)."""
    return [u for u in urls if not re.match(r"^(file|data|chrome|about|blob|devtools):", u)]


def test_network_detector_catches_requests(browser, tmp_path):
    page = tmp_path / "control.html"
    page.write_text('<html><body><img src="http://127.0.0.1:9/pixel.png"></body></html>')
    assert _external(_open(browser, page)) == ["http://127.0.0.1:9/pixel.png"]


@pytest.mark.slow
def test_browser_opens_demo_report(browser, demo_dir):
    from selenium.webdriver.common.by import By

    html_path = demo_dir / "report.html"
    urls = _open(browser, html_path)
    assert _external(urls) == []
    source = html_path.read_text("utf-8")
    tables = browser.find_elements(By.TAG_NAME, "table")
    assert len(tables) == source.count("<table") and len(tables) >= 6
    for table in tables:
        assert table.find_elements(By.TAG_NAME, "tr")
    images = browser.find_elements(By.TAG_NAME, "img")
    assert len(images) == source.count("<img") >= 4
    for image in images:
        assert browser.execute_script(
            "return arguments[0].complete && arguments[0].naturalWidth > 0", image)
    assert browser.find_element(By.ID, "delta-sweep").is_displayed()
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(int(height) + 100, 12000))
    out = REPO / "test-output"
    out.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(out / "report.png"))
    assert (out / "report.png").stat().st_size > 10_000
    browser.set_window_size(1400, 1000)


def _open_sections(driver) -> None:
    """Unfold every section and sample block, as a reader clicking each summary would."""
    driver.execute_script("document.querySelectorAll('details').forEach("
                          "function (d) { d.open = true; });")


def test_browser_shows_markup_as_text(browser, crafted_dir):
    from selenium.webdriver.common.by import By

    from abnirml.report.page_script import SCRIPT, script_hash

    assert _external(_open(browser, crafted_dir / "report.html")) == []
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    (script,) = browser.find_elements(By.TAG_NAME, "script")     # the page's own, only
    assert browser.execute_script("return arguments[0].textContent", script) == SCRIPT
    assert f"script-src {script_hash()};" in (crafted_dir / "report.html").read_text("utf-8")
    assert browser.find_elements(By.TAG_NAME, "iframe") == []
    # a reader clicks each summary, outer ones first: the first one natively, the others
    # by the summary's own click (one WebDriver call; a native click each takes ≈ 0.3 s)
    first, *others = browser.find_elements(By.TAG_NAME, "details")
    first.find_element(By.TAG_NAME, "summary").click()
    assert first.get_attribute("open") is not None and others
    browser.execute_script(
        "Array.from(document.querySelectorAll('details')).slice(1).forEach(function (d) {"
        "  d.querySelector(':scope > summary').click(); });")
    assert browser.execute_script(
        "return Array.from(document.querySelectorAll('details')).every(d => d.open)")
    shown = " ".join(_rendered_texts(browser, ".doc"))
    assert "<script>window.__pwned = 1</script>" in shown
    assert '<img src="http://127.0.0.1:9/pixel.png"' in shown
    assert "<b>bold</b> &amp;" in shown
    queries = " ".join(_rendered_texts(browser, ".sample p"))
    assert "vitamin <script>window.__pwned = 9</script> symptoms" in queries


def _rendered_texts(driver, selector: str) -> list[str]:
    """The rendered text of every element ``selector`` matches, in one WebDriver call."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), e => e.innerText);",
        selector)


def _rgba(css: str) -> tuple[float, ...]:
    """``rgb(1, 2, 3)`` / ``rgba(1, 2, 3, 0.4)`` → (1, 2, 3, alpha)."""
    values = [float(v) for v in re.findall(r"[\d.]+", css)]
    return tuple(values) if len(values) == 4 else (*values, 1.0)


@pytest.mark.slow
def test_browser_shows_every_caveat_and_one_table_style(browser, demo_dir):
    """What a reader sees: the caveats of report.md, and the TMP table (the largest) in the
    page's one style, read from the browser's computed styles, not from our class names."""
    from selenium.webdriver.common.by import By

    from abnirml.report.caveats import all_caveats
    from abnirml.report.html import NEGATIVE_RGB, POSITIVE_RGB

    assert _external(_open(browser, demo_dir / "report.html")) == []
    _open_sections(browser)
    shown = browser.find_element(By.TAG_NAME, "body").text
    records = [json.loads(line) for line in (demo_dir / "results.jsonl").open()]
    run_info = json.loads((demo_dir / "run.json").read_text())
    for caveat in all_caveats(records, run_info):
        assert caveat.text in shown, caveat
    for title in ("Axiomatic diagnostic datasets (Câmara & Hauff, Table 2)",
                  "Fraction of instances satisfied, ties within the ranker's δ"):
        assert title in shown

    table = browser.find_element(By.CSS_SELECTOR, '#family-tmp table[data-table="tmp"]')
    header = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    rankers = [h for h in header if h in ("bm25", "ql", "tfidf")]
    columns = [header.index(r) for r in rankers]
    # every cell's rendered text and computed style in one WebDriver call (a call per cell
    # is thousands of round trips)
    styles = browser.execute_script(
        "return Array.from(arguments[0].querySelectorAll('tbody tr')).map(function (row) {"
        "  return Array.from(row.querySelectorAll('td')).map(function (cell) {"
        "    const s = getComputedStyle(cell);"
        "    return [cell.innerText.trim(), s.textAlign, s.fontVariantNumeric,"
        "            s.backgroundColor, s.color]; }); });", table)
    seen = {"positive": 0, "negative": 0, "not significant": 0}
    assert len(styles) >= 80                     # 30 manipulations × 3 subsets
    for cells in styles:
        for j in columns:
            text, align, numeric, background, colour = cells[j]
            assert align == "right" and "tabular-nums" in numeric, (text, align, numeric)
            # the default mark: a * after each significant score, none on the others
            match = re.match(r"^([+-]?)(\d+\.\d+)†?(\*?)$", text)
            if match is None:
                assert text == "–"
                continue
            if not match[3]:                                  # not significant: grey, no tint
                assert _rgba(colour)[:3] == (118, 118, 118) and _rgba(background)[3] == 0
                seen["not significant"] += 1
            elif float(match[2]) > 0:
                rgb = POSITIVE_RGB if match[1] != "-" else NEGATIVE_RGB
                tint = _rgba(background)
                assert tint[:3] == rgb and tint[3] >= 0.15, (text, background)
                seen["positive" if match[1] != "-" else "negative"] += 1
        assert cells[0][1] == "left"                  # the label
    assert all(seen.values()), seen
    legend = table.find_element(By.XPATH, "../following-sibling::p[@class='legend']")
    assert "blue when positive" in legend.text and "grey" in legend.text
    assert "a * after a score marks it significant" in legend.text


#: the demo report's height at 1,400 px with every section folded, and the bound it keeps
FOLDED_HEIGHT_BOUND = 15_000


#: Each body row of a table as the browser renders it: displayed (it has a box), its class,
#: and its cells' rendered text. One WebDriver call for the whole table: a call per row and
#: cell (Selenium's ``is_displayed`` sends its whole visibility script each time) takes
#: minutes for the intervals table's ≈ 1,300 rows.
_RENDERED_ROWS = """
return Array.from(arguments[0].querySelectorAll('tbody tr')).map(function (row) {
  return [row.getClientRects().length > 0, row.className,
          Array.from(row.querySelectorAll('td')).map(function (cell) {
            return cell.innerText.replace(/\\s+/g, ' ').trim(); })];
});"""


def _rendered_rows(table) -> list[tuple[bool, str, list[str]]]:
    """(displayed, class, cell texts) of each of ``table``'s body rows, in page order."""
    return [(shown, cls, cells) for shown, cls, cells
            in table.parent.execute_script(_RENDERED_ROWS, table)]


def _visible_rows(table) -> list[list[str]]:
    return [cells for shown, _, cells in _rendered_rows(table) if shown]


@pytest.mark.slow
def test_browser_navigates_the_demo_report(browser, demo_dir):
    """Folded, the page is short; unfolded, nothing scrolls sideways; the table of contents,
    the findings' links, the filters, the sort and the sample links work in a real browser."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.set_window_size(1400, 1000)
    assert _external(_open(browser, demo_dir / "report.html")) == []
    size = "return [document.documentElement.scrollHeight, " \
           "document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    height, _, _ = browser.execute_script(size)
    assert height <= FOLDED_HEIGHT_BOUND, height
    assert browser.find_element(By.ID, "findings").is_displayed()
    assert not browser.find_element(By.CSS_SELECTOR, "#family-tmp table").is_displayed()

    # the table of contents: every entry names an element of the page; following one opens
    # its section
    links = browser.find_elements(By.CSS_SELECTOR, "nav a")
    targets = [link.get_attribute("href").split("#", 1)[1] for link in links]
    assert "findings" in targets and "statistics" in targets and len(targets) >= 8
    for target in targets:
        assert browser.execute_script("return document.getElementById(arguments[0]) !== null",
                                      target), target
    next(link for link in links if link.get_attribute("href").endswith("#family-tmp")).click()
    assert browser.find_element(By.CSS_SELECTOR, "#family-tmp table").is_displayed()
    browser.execute_script("window.scrollTo(0, document.documentElement.scrollHeight)")
    assert browser.execute_script("return window.scrollY") > 500
    top = browser.execute_script(
        "return document.querySelector('nav').getBoundingClientRect().top")
    assert abs(top) < 1                                      # the contents stay in view

    # a finding's "detail" opens the statistics section at its row; "samples" opens the
    # probe's examples with both texts
    _open(browser, demo_dir / "report.html")
    detail = browser.find_element(By.CSS_SELECTOR, "#findings a[href^='#row-']")
    row_id = detail.get_attribute("href").split("#", 1)[1]
    detail.click()
    assert browser.find_element(By.ID, row_id).is_displayed()
    row = browser.find_element(By.ID, row_id)
    samples = row.find_element(By.CSS_SELECTOR, "a[href^='#ex-']")
    example_id = samples.get_attribute("href").split("#", 1)[1]
    samples.click()
    block = browser.find_element(By.ID, example_id)
    assert block.get_attribute("open") is not None
    texts = block.find_elements(By.CSS_SELECTOR, ".doc")
    assert len(texts) >= 2 and all(t.is_displayed() and t.text for t in texts[:2])

    # filters on the intervals table: by ranker, by significance, by text
    _open_sections(browser)
    table = browser.find_element(By.CSS_SELECTOR, 'table[data-table="intervals"]')
    header = [th.text.strip() for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    ranker, family, significant = (header.index(h) for h in ("Ranker", "Family",
                                                              "Significant"))
    box = table.find_element(By.XPATH, "../preceding-sibling::div[@class='controls']")
    every = len(_visible_rows(table))
    Select(box.find_element(By.CSS_SELECTOR, f"select[data-column='{ranker}']")
           ).select_by_visible_text("ql")
    shown = _visible_rows(table)
    assert 0 < len(shown) < every and {r[ranker] for r in shown} == {"ql"}
    Select(box.find_element(By.CSS_SELECTOR, f"select[data-column='{significant}']")
           ).select_by_visible_text("yes")
    assert {(r[ranker], r[significant]) for r in _visible_rows(table)} == {("ql", "yes")}
    Select(box.find_element(By.CSS_SELECTOR, f"select[data-column='{family}']")
           ).select_by_visible_text("tmp")
    assert {r[family] for r in _visible_rows(table)} == {"tmp"}
    search = box.find_element(By.CSS_SELECTOR, "input.filter")
    search.send_keys("query")
    assert all("query" in r[0] for r in _visible_rows(table))
    assert box.find_element(By.CLASS_NAME, "count").text.endswith(f"of {every} rows")
    for select in box.find_elements(By.TAG_NAME, "select"):
        Select(select).select_by_index(0)
    search.clear()
    search.send_keys(" ")                      # an input event with nothing to match
    assert len(_visible_rows(table)) == every

    # sorting by the effect size, largest first: rows from fewer than 10 samples stay last
    column = header.index("Effect size d_z")
    table.find_elements(By.CSS_SELECTOR, "thead th")[column].click()
    rows = _rendered_rows(table)
    small = [("small" in cls.split()) for _, cls, _ in rows]
    assert any(small) and small == sorted(small)
    values = [cells[column] for _, _, cells in rows]
    numbers = [float(v.replace("−", "-")) for v, s in zip(values, small, strict=True)
               if not s and v != "–"]
    assert numbers == sorted(numbers, reverse=True)
    assert "n < 10" in table.find_elements(By.CSS_SELECTOR, "tbody tr")[-1].text

    # unfolded, the page never scrolls sideways: wide tables scroll inside their own box
    _, width, client = browser.execute_script(size)
    assert width <= client, (width, client)
    axiom = browser.find_element(By.CSS_SELECTOR, 'table[data-table="axiom"]')
    box = axiom.find_element(By.XPATH, "..")
    assert box.get_attribute("class") == "scroll"
    assert box.size["width"] <= client

    # the first screen, for the documentation
    _open(browser, demo_dir / "report.html")
    out = REPO / "test-output"
    out.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(out / "report-first-screen.png"))
