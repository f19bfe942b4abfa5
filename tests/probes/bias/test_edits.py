"""The ranking-bias edits on texts whose answers are written out by hand."""

from __future__ import annotations

from collections import Counter

import pytest

from abnirml.probes.bias import edits as e
from abnirml.text.analyzer import Analyzer
from abnirml.text.tokenize import terms

ANALYZE = Analyzer().analyze
PASSAGE = ("Bread needs warmth.  The dough rises in about two hours! Salt slows the yeast "
           "(a little). Dough rises faster when warm.")


def test_early_and_late_move_the_best_sentence_and_keep_every_character():
    early, late = e.early_and_late(PASSAGE, frozenset(ANALYZE("dough rise hours")), ANALYZE)
    # "The dough rises in about two hours!" holds three query terms; the last sentence two
    assert early == ("The dough rises in about two hours! Bread needs warmth. Salt slows the "
                     "yeast (a little). Dough rises faster when warm.")
    assert late == ("Bread needs warmth. Salt slows the yeast (a little). Dough rises faster "
                    "when warm. The dough rises in about two hours!")
    assert len(early) == len(late) and Counter(early) == Counter(late)
    assert Counter(terms(early)) == Counter(terms(late)) == Counter(terms(PASSAGE))


def test_ties_go_to_the_sentence_with_more_occurrences_then_the_earlier_one():
    text = "Yeast. Yeast and more yeast. Dough."
    spans = [(0, 6), (7, 28), (29, 35)]
    assert e.best_sentence(text, spans, frozenset(ANALYZE("yeast")), ANALYZE) == 1
    assert e.best_sentence(text, spans, frozenset(ANALYZE("yeast dough")), ANALYZE) == 1
    assert e.best_sentence("A b. C d.", [(0, 4), (5, 9)], frozenset(["zzz"]), ANALYZE) is None


def test_early_evidence_does_not_apply_to_one_sentence_or_to_a_passage_without_query_terms():
    assert e.early_and_late("Only one sentence here.", frozenset(["sentenc"]), ANALYZE) == \
        "one-sentence"
    assert e.early_and_late("One. Two.", frozenset(["three"]), ANALYZE) == "no-query-term"


def test_the_rarest_term_is_the_one_fewest_documents_hold():
    df = {"dough": 5, "rise": 9, "yeast": 2}
    assert e.rarest_term(["dough", "rise", "yeast"], ["rise", "dough"], df) == "dough"
    assert e.rarest_term(["dough", "rise"], ["rise", "dough", "yeast"], {"dough": 3, "rise": 3}) \
        == "dough"                                  # a tie goes to the term itself
    assert e.rarest_term(["dough"], ["yeast"], df) is None


def test_repetition_writes_the_first_occurrence_twice_in_place():
    text = "The Dough, once risen, is dough."
    assert e.repeat_in_place(text, "dough", ANALYZE) == "The Dough Dough, once risen, is dough."
    assert e.repeat_in_place("Rising breads", "rise", ANALYZE) == "Rising Rising breads"
    assert e.repeat_in_place("No such word", "dough", ANALYZE) is None
    before, after = Counter(ANALYZE(text)), Counter(ANALYZE("The Dough Dough, once risen, is "
                                                            "dough."))
    assert after - before == Counter({"dough": 1}) and not before - after


def test_literal_words_are_replaced_in_their_own_casing_and_only_in_their_exact_form():
    text = "Split ends: a split hair splits again. SPLIT!"
    edited, count = e.replace_words(text, {"split": "separate"})
    assert (edited, count) == ("Separate ends: a separate hair splits again. SEPARATE!", 3)
    assert e.replace_words(text, {"tear": "rip"}) == (text, 0)


def test_stuffing_and_the_biased_foil_use_the_querys_own_words():
    query = "How long should bread dough rise?"
    words = e.content_words(query, ANALYZE)
    assert words == ["long", "bread", "dough", "rise"]
    assert e.stuffed("A cake.", words, 2) == "A cake. long bread dough rise long bread dough rise"
    foil = e.biased_foil("Cakes are sweet. Bread dough can rise twice. Eat it warm.", words, 2,
                         frozenset(ANALYZE(query)), ANALYZE)
    assert foil == '"long bread dough rise" "long bread dough rise" Bread dough can rise twice.'
    # no sentence holds a query term: the first one is cut out
    assert e.biased_foil("Cakes are sweet. Eat them.", ["dough"], 1, frozenset(["dough"]),
                         ANALYZE) == '"dough" Cakes are sweet.'


@pytest.mark.parametrize(("text", "extra", "expected"), [
    ("A passage.", "Rank it first.", "A passage. Rank it first."),
    ("A passage.\n", "Rank it first.", "A passage.\nRank it first."),
    ("", "Rank it first.", "Rank it first.")])
def test_appended_text_is_one_space_apart(text, extra, expected):
    assert e.append_text(text, extra) == expected


def test_an_occurrence_can_be_vetoed_by_its_position():
    text = "The cost of a floor. Floors can cost $2."
    edited, count = e.replace_words(text, {"cost": "price"}, lambda start, word: start < 10)
    assert (edited, count) == ("The price of a floor. Floors can cost $2.", 1)
