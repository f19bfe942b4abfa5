"""Key findings by contrast: a ranker's findings are what sets it apart, on the same samples."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from abnirml.evaluation.analyses.compare import ProbeComparison
from abnirml.report import contrasts


def _record(probe: str, ranker: str, score: float, n: int = 40) -> dict:
    return {"probe": probe, "family": probe.split(":", 1)[0], "ranker": ranker,
            "subset": "all", "score": score, "n": n, "significant": True,
            "effect_size": 2.0 * np.sign(score), "ci_low": score - 0.1,
            "ci_high": score + 0.1, "symmetric": False}


def _pairs(scores: dict[str, dict[str, float]]) -> dict:
    """Every pair of rankers: differs when the scores differ by more than 0.1 (a stand-in
    for the test and interval of compare; the interval ±0.05 around the difference)."""
    rankers = list(next(iter(scores.values())))
    out = {}
    for i, a in enumerate(rankers):
        for b in rankers[i + 1:]:
            rows = {}
            for probe, by_ranker in scores.items():
                d = by_ranker[b] - by_ranker[a]
                rows[probe] = ProbeComparison(probe, probe.split(":")[0], "all", 40,
                                              by_ranker[a], by_ranker[b], 10, 0.001,
                                              abs(d) > 0.1, "", d - 0.05, d + 0.05)
            out[(a, b)] = rows
    return out


def test_a_ranker_unlike_all_others_gets_the_probe_and_a_split_goes_to_the_fewer():
    scores = {
        "tmp:shuffle-words": {"bm25": 0.0, "ql": 0.0, "tfidf": 0.0, "bi": -0.34},
        # two camps of two: each ranker differs from 2 of 3 others; only half may keep it
        "tmp:only-query": {"bm25": 0.5, "ql": 0.6, "tfidf": 0.0, "bi": 0.0},
        # all alike: nobody's contrast
        "tmp:append-query": {"bm25": 1.0, "ql": 1.0, "tfidf": 1.0, "bi": 0.95},
    }
    records = [_record(p, r, s) for p, by in scores.items() for r, s in by.items()]
    found = contrasts.candidates(records, _pairs(scores))
    by_probe = Counter(c.probe for c in found)
    assert by_probe == {"tmp:shuffle-words": 1, "tmp:only-query": 2}
    shuffle = next(c for c in found if c.probe == "tmp:shuffle-words")
    assert (shuffle.ranker, shuffle.group) == ("bi", ("bm25", "ql", "tfidf"))
    assert shuffle.difference == pytest.approx(-0.34)
    assert (shuffle.low, shuffle.high) == pytest.approx((-0.39, -0.29))
    # the camp whose own scores are largest keeps the split probe
    assert {c.ranker for c in found if c.probe == "tmp:only-query"} == {"bm25", "ql"}
    words = contrasts.sentence(shuffle, lambda up: "Prefers the original" if not up
                               else "Prefers the changed", 3)
    assert words == "Unlike bm25, ql and tfidf, bi prefers the original"


def test_sentences_say_more_less_or_not_at_all():
    def said(own, theirs):
        c = contrasts.Candidate("r", "tmp:x", "tmp", ("a", "b"), own, theirs, "a", 0.3, 0.2,
                                0.4)
        return contrasts.sentence(c, lambda up: "Prefers d1" if up else "Prefers d2", 5)

    assert said(0.9, (0.4, 0.5)) == "r prefers d1 more strongly than a and b"
    assert said(0.2, (0.8, 0.9)) == "r prefers d1 less strongly than a and b"
    assert said(0.0, (0.8, 0.9)) == "Unlike a and b, r does not prefer d1"
    assert said(-0.5, (0.3, 0.4)) == "Unlike a and b, r prefers d2"
    assert contrasts.named(("a", "b", "c", "d"), 4) == "the other 4 rankers"
    assert contrasts.base_form("Goes against axiom X") == "go against axiom X"
    assert contrasts.base_form("Agrees with") == "agree with"
    assert contrasts.base_form("Scores a document") == "score a document"


class _Bigrams:
    """Order-sensitive: how many of the query's adjacent word pairs the text holds in order."""

    name = "bigrams"
    fingerprint = "test-bigrams-v1"

    def score(self, pairs):
        def grams(text):
            words = text.lower().split()
            return set(itertools.pairwise(words))

        return np.array([float(len(grams(q) & grams(d))) for q, d in pairs])


@pytest.fixture(scope="module")
def contrast_run(tmp_path_factory):
    import abnirml

    out = tmp_path_factory.mktemp("contrast") / "out"
    abnirml.run(abnirml.RunConfig(
        rankers=["bm25", "ql", _Bigrams()], probes=["tmp:shuffle-words", "tmp:append-query"],
        out=str(out), effectiveness=False,
        session=abnirml.SessionSettings(cache=None, progress=False)))
    return out


def test_the_order_sensitive_ranker_is_told_apart_by_word_order(contrast_run):
    """Known answer: shuffling words leaves bag-of-words scores unchanged (0.00 for bm25 and
    ql) and breaks the query's word pairs, so only the bigram ranker cares; appending the
    query raises all three, so that is the shared line."""
    from abnirml.report.analyses import _store
    from abnirml.report.findings import first_screen
    from abnirml.run_folder import RunFolder

    folder = RunFolder(contrast_run)
    screen = first_screen(folder.read_records(), folder.read_run_info(), (),
                          _store(contrast_run))
    assert screen.by_contrast
    assert [f.probe for f in screen.found["bigrams"]] == ["tmp:shuffle-words"]
    assert screen.found["bm25"] == [] and screen.found["ql"] == []
    finding = screen.found["bigrams"][0]
    assert finding.sentence.startswith("Unlike bm25 and ql, bigrams prefers the original")
    assert " vs 0.00; difference -" in finding.numbers
    assert [s.probe for s in screen.shared] == ["tmp:append-query"]
    md = (contrast_run / "report.md").read_text(encoding="utf-8")
    assert "**Shared:** all 3 rankers prefer the document changed by “append-query”" in md
    assert "Unlike bm25 and ql, bigrams prefers the original" in md
    assert "(`tmp:shuffle-words`)" in md


def test_the_screen_never_draws_resampling_rounds_for_every_pair_of_rankers():
    """A resampling test over every pair × probe would take minutes per report: the screen
    tests pairs with the paired t-test then (the interval still has to exclude 0), and
    says so; a cheap test of the run's own is kept."""
    from abnirml.evaluation.stats.significance import StatsConfig
    from abnirml.report.findings import screening_stats

    for test in ("bootstrap", "permutation"):
        chosen = screening_stats(StatsConfig(test=test, correction="holm", resamples=500))
        assert (chosen.test, chosen.correction, chosen.resamples) == ("ttest", "holm", 500)
    assert screening_stats(StatsConfig(test="wilcoxon")).test == "wilcoxon"
    assert "the paired t-test with Holm correction" in contrasts.criteria(
        3, StatsConfig(test="ttest", correction="holm"))


def test_report_marks_significant_scores_unless_asked_for_abnirmls_mark(contrast_run):
    """The tables' default marks what is significant and says so; `--significance-mark
    not-significant` (kept in run.json by `run`, given again to `report`) prints ABNIRML's
    star on the scores that are not. The CSV is the same either way."""
    import json

    from abnirml.cli import main

    info = json.loads((contrast_run / "run.json").read_text(encoding="utf-8"))
    assert info["report"] == {"significance_mark": "significant"}
    md = (contrast_run / "report.md").read_text(encoding="utf-8")
    csv = (contrast_run / "tables" / "tmp.csv").read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| tmp:shuffle-words | all"))
    assert row.startswith("| tmp:shuffle-words | all | 0.00 | 0.00 | -") and "| * " not in row
    assert row.split(" | ")[4].endswith("*")                       # bigrams: significant
    assert "`*` after a score marks it significant" in md
    assert main(["report", str(contrast_run), "--significance-mark", "not-significant"]) == 0
    papers = (contrast_run / "report.md").read_text(encoding="utf-8")
    row = next(line for line in papers.splitlines()
               if line.startswith("| tmp:shuffle-words | all"))
    assert row.startswith("| tmp:shuffle-words | all | * 0.00 | * 0.00 | -")
    assert "`*` before a score marks it not significant" in papers
    assert (contrast_run / "tables" / "tmp.csv").read_text(encoding="utf-8") == csv
    assert main(["report", str(contrast_run)]) == 0          # run.json's choice again
    assert (contrast_run / "report.md").read_text(encoding="utf-8") == md


def test_counts_before_a_noun_agree_with_the_number():
    """Two rankers: the criteria speak of "the other ranker", never "the other 1 rankers"."""
    from abnirml.counts import counted, plural

    assert counted(1, "ranker") == "1 ranker" and counted(2, "query") == "2 queries"
    assert counted(1781, "sample") == "1,781 samples"
    assert [plural(w) for w in ("box", "day", "pass", "patch", "probe family")] == [
        "boxes", "days", "passes", "patches", "probe families"]
    assert "other 1 rankers" not in contrasts.criteria(2)
    assert "the other ranker on the same samples" in contrasts.criteria(2)
    assert "more than half of the other 3 rankers" in contrasts.criteria(4)


def test_the_screens_pair_test_is_described_as_what_it_runs():
    """The default run tests with the query-clustered bootstrap; the screen replaces it by
    the paired t-test, so its note says the t-test and that compare uses the run's test —
    never "as compare does". The guide and the analyses page say the same."""
    from pathlib import Path

    from abnirml.evaluation.stats.significance import StatsConfig
    from abnirml.report.findings import screening_stats

    run = StatsConfig()
    words = contrasts.criteria(3, screening_stats(run), run.test)
    assert "with the paired t-test with Bonferroni correction over the pair's probes" in words
    assert "'abnirml compare' tests a pair with the run's query-clustered bootstrap" in words
    assert "as 'abnirml compare' does" not in words
    docs = Path(__file__).resolve().parents[2] / "docs"
    for page in ("guide/report.md", "analyses.md"):
        text = " ".join((docs / page).read_text(encoding="utf-8").split())
        assert "paired t-test" in text, page
        assert "compared as `abnirml compare` compares them" not in text, page


def test_each_named_ranker_is_described_by_its_own_row_not_the_groups_average():
    """Constructed rows where the group's average and a member's own row disagree: r at
    +0.5 differs by more than 0.15 from a (+0.3) and from b (−0.3, or −0.6). The group's
    average (0, or −0.15) would call r "unlike a and b" though a prefers d1 as well."""
    def said(own, theirs, group=("a", "b")):
        c = contrasts.Candidate("r", "tmp:x", "tmp", group, own, theirs, group[0],
                                own - theirs[0], 0.1, 0.3)
        return contrasts.sentence(c, lambda up: "Prefers d1" if up else "Prefers d2", 5)

    assert said(0.5, (0.3, -0.3)) == "Unlike b, r prefers d1, and more strongly than a"
    assert said(0.5, (0.3, -0.6)) == "Unlike b, r prefers d1, and more strongly than a"
    assert said(-0.5, (0.02, -0.2, 0.4), ("a", "b", "c")) == (
        "Unlike a and c, r prefers d2, and more strongly than b")
    assert said(0.01, (0.4, -0.4)) == (
        "Unlike a, r does not prefer d1; unlike b, it does not prefer d2")


def test_one_rankers_findings_name_the_level_their_interval_was_taken_at():
    """With the default test the score interval is the test's own, at 1 − α/m: a finding
    may not call it a 95 % interval. The run's --ci level is named where the interval is
    the bootstrap one (another test)."""
    from abnirml.report.findings import coverage_text, key_findings

    record = {"probe": "tmp:x", "family": "tmp", "ranker": "bm25", "subset": "all",
              "effect_size": 1.5, "score": 0.5, "n": 40, "significant": True,
              "ci_low": 0.3, "ci_high": 0.7, "symmetric": False, "tests_in_table": 36}

    def numbers(statistics):
        run_info = {"statistics": statistics, "options": {"alpha": 0.01}}
        return key_findings([record], run_info)["bm25"][0].numbers

    assert numbers({"test": "clustered", "correction": "bonferroni", "ci": 0.95}) == (
        "score +0.50, 99.97 % CI (1 − α/m, m = 36) [+0.30, +0.70]; d_z +1.50, n = 40")
    assert "99 % CI [" in numbers({"test": "clustered", "correction": "none", "ci": 0.95})
    assert "CI at the level the Holm procedure tested the row at [" in numbers(
        {"test": "clustered", "correction": "holm", "ci": 0.95})
    assert "95 % CI [" in numbers({"test": "ttest", "correction": "bonferroni", "ci": 0.95})
    assert [coverage_text(x) for x in (0.95, 0.9, 1 - 0.01 / 1000)] == ["95", "90", "99.999"]
