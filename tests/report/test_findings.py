"""The report's first screen: which effects count as key findings, and how they read."""

from __future__ import annotations

from abnirml.report.findings import findings_html, findings_markdown, key_findings


def _record(probe: str, ranker: str, effect: float, *, score: float = 0.5, n: int = 40,
            significant: bool = True, low: float | None = 0.3, high: float | None = 0.7,
            subset: str = "all", symmetric: bool = False) -> dict:
    family = probe.split(":", 1)[0]
    return {"probe": probe, "family": family, "ranker": ranker, "subset": subset,
            "effect_size": effect, "score": score, "n": n, "significant": significant,
            "ci_low": low, "ci_high": high, "symmetric": symmetric}


RUN_INFO = {"families": [{"key": "mmp", "title": "Measure-and-Match probes"},
                         {"key": "tmp", "title": "Textual-manipulation probes"},
                         {"key": "axiom", "title": "Axioms"}],
            "probe_labels": {}, "statistics": {"ci": 0.9}}


def test_only_significant_large_well_measured_effects_count():
    records = [
        _record("mmp:length:relevance", "bm25", 1.2, score=0.41, low=0.30, high=0.52),
        _record("tmp:typos", "bm25", -0.9, score=-0.3, low=-0.5, high=-0.1),
        _record("tmp:a", "bm25", 5.0, n=9),                     # fewer than 10 samples
        _record("tmp:b", "bm25", 3.0, significant=False),       # not significant
        _record("tmp:c", "bm25", 0.79),                         # not large
        _record("tmp:d", "bm25", 2.0, score=0.1),               # a score within ±0.2
        _record("tmp:e", "bm25", 2.0, low=-0.1, high=0.6),      # interval holds 0
        _record("tmp:f", "bm25", 2.0, subset="relevant"),       # a subset, not "all"
        _record("axiom:tfc1", "bm25", 2.0, symmetric=True),     # a rate: no direction
        _record("tmp:typos", "ql", 0.5),                        # ql: nothing qualifies
    ]
    found = key_findings(records, RUN_INFO)
    assert list(found) == ["bm25", "ql"] and found["ql"] == []
    first, second = found["bm25"]
    assert first.sentence == ("Prefers the document with higher length when relevance grade "
                              "is held equal")
    assert first.numbers == "score +0.41, 90 % CI [+0.30, +0.52]; d_z +1.20, n = 40"
    assert first.row_id == "row-mmp:length:relevance--bm25" and first.examples_id == ""
    assert second.sentence == "Prefers the original over the document changed by “typos”"


def test_at_most_two_per_family_and_five_per_ranker_largest_first():
    records = [_record(f"tmp:m{i}", "bm25", 1.0 + i / 10) for i in range(4)]
    records += [_record(f"mmp:tf:x{i}", "bm25", 2.0 + i / 10) for i in range(3)]
    records += [_record(f"axiom:a{i}", "bm25", 0.9 + i / 10) for i in range(3)]
    found = key_findings(records, RUN_INFO, with_examples={"tmp:m3"})["bm25"]
    assert [f.probe for f in found] == ["mmp:tf:x2", "mmp:tf:x1", "tmp:m3", "tmp:m2",
                                        "axiom:a2"]
    assert found[2].examples_id == "ex-tmp:m3" and found[3].examples_id == ""


def test_the_first_screen_escapes_and_links_and_report_md_lists_the_same():
    records = [_record("tmp:<b>x</b>", "<i>r</i>", 1.5)]
    found = key_findings(records, RUN_INFO, with_examples={"tmp:<b>x</b>"})
    html = findings_html(found)
    assert "<b>x</b>" not in html and "<i>r</i>" not in html
    assert "&lt;i&gt;r&lt;/i&gt;" in html and "changed by “&lt;b&gt;x&lt;/b&gt;”" in html
    assert 'href="#row-tmp:_b_x__b_--_i_r__i_"' in html and 'href="#ex-tmp:_b_x__b_"' in html
    md = findings_markdown(found)
    assert md[0] == "## Key findings" and md[-1].startswith("1. Prefers the document changed")
    assert findings_html({}) == "" and findings_markdown({}) == []


def test_each_family_says_its_effects_in_its_own_words():
    """The sentence comes from the family record (``Family.finding``), so a user's family
    phrases its own effects and one without a phrase gets the generic sentence."""
    from abnirml.probes.family import Family
    from abnirml.probes.family_registry import register_family
    from abnirml.registry import scoped_registrations
    from abnirml.report.findings import _phrase

    def said(probe: str, score: float, labels=(), family: str | None = None) -> str:
        record = {"probe": probe, "family": family or probe.split(":", 1)[0], "score": score}
        return _phrase(record, list(labels), "d1 is the query")

    assert said("axiom:tfc1", 0.4) == "Agrees with axiom TFC1 (prefers the document it favours)"
    assert said("axiom:tfc1", -0.4) == ("Goes against axiom TFC1 (prefers the document it "
                                        "does not favour)")
    assert said("dtp:fluency-jfleg", 0.3, ["Fluency", "JFLEG"]) == (
        "Prefers the text higher in fluency (JFLEG pairs)")
    assert said("qvp:misspell", -0.3) == ("Scores a document lower under the “misspell” "
                                          "query variation than under the original query")
    assert said("echo:x", -0.3) == "Prefers d2 on echo:x (d1 is the query)"
    with scoped_registrations():
        register_family(Family(key="echo", title="Echo", positive="",
                               finding=lambda probe, labels, up: f"Echoes {probe} ({up})"))
        assert said("echo:x", 0.3) == "Echoes echo:x (True)"


def test_a_card_that_would_repeat_another_says_its_ranker_behaves_alike():
    """bm25 and tfidf qualify on the same probes with scores a hair apart: tfidf's card
    says it behaves like bm25 instead of listing the same findings again; ql differs by
    more than 0.05 on one probe, so it keeps its own card."""
    from abnirml.report.findings import first_screen

    scores = {"bm25": (0.61, -0.42), "tfidf": (0.63, -0.40), "ql": (0.61, -0.30)}
    records = [_record(probe, ranker, 1.5 if score > 0 else -1.5, score=score,
                       low=score - 0.1, high=score + 0.1)
               for ranker, pair in scores.items()
               for probe, score in zip(("tmp:a", "mmp:tf:x"), pair, strict=True)]
    screen = first_screen(records, RUN_INFO)
    assert set(screen.alike) == {"tfidf"}
    same = screen.alike["tfidf"]
    assert (same.like, set(same.probes)) == ("bm25", {"tmp:a", "mmp:tf:x"})
    md = "\n".join(findings_markdown(screen.found, screen.shared, screen.criteria,
                                     screen.alike))
    assert "Behaves like bm25: the same 2 findings, each score within 0.02 of bm25's" in md
    assert md.count("Prefers the document changed by “a”") == 2        # bm25 and ql only
    html = findings_html(screen.found, screen.shared, screen.criteria, screen.alike)
    assert 'href="#row-tmp:a--tfidf"' in html and "Behaves like bm25" in html


def test_two_findings_with_the_same_numbers_are_one_item_naming_both_probes():
    """Two probes that pair the same documents give the same numbers: one item names both."""
    records = [_record("mmp:tf:x", "ql", 1.3, score=0.5),
               _record("mmp:tf:y", "ql", 1.3, score=0.5),
               _record("tmp:z", "ql", 1.1, score=0.4)]
    found = key_findings(records, RUN_INFO)["ql"]
    assert [(f.probe, f.also) for f in found] == [("mmp:tf:x", ("mmp:tf:y",)),
                                                  ("tmp:z", ())]
    md = findings_markdown({"ql": found})
    assert any("(`mmp:tf:x`; the same numbers on `mmp:tf:y`)" in line for line in md)


def test_a_card_that_repeats_part_of_another_names_the_shared_findings_once():
    """tfidf shares two findings with bm25 (scores a hair apart) and has one of its own:
    its card names the two in one line and lists only its own."""
    from abnirml.report.findings import first_screen

    scores = {"bm25": {"tmp:a": 0.61, "mmp:tf:x": -0.42},
              "tfidf": {"tmp:a": 0.63, "mmp:tf:x": -0.40, "axiom:orig": 0.8}}
    records = [_record(probe, ranker, 1.5 if score > 0 else -1.5, score=score,
                       low=score - 0.1, high=score + 0.1)
               for ranker, by in scores.items() for probe, score in by.items()]
    screen = first_screen(records, RUN_INFO)
    assert set(screen.alike) == {"tfidf"} and set(screen.alike["tfidf"].probes) == {
        "tmp:a", "mmp:tf:x"}
    md = findings_markdown(screen.found, screen.shared, screen.criteria, screen.alike)
    text = "\n".join(md)
    assert ("Behaves like bm25: 2 findings of bm25's card, each score within 0.02 of "
            "bm25's (") in text
    tfidf = md[md.index("**tfidf**"):]
    assert [line for line in tfidf if line.startswith("1. ")] == [
        next(line for line in tfidf if "(`axiom:orig`)" in line)]
    html = findings_html(screen.found, screen.shared, screen.criteria, screen.alike)
    card = html[html.index('data-ranker="tfidf"'):]
    assert card.count("<li ") == 1 and "Behaves like bm25" in card
