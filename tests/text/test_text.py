import pytest

from abnirml.text.analyzer import Analyzer
from abnirml.text.stopwords import load_stopwords
from abnirml.text.tokenize import PUNCTUATION, sentence_spans, sentences, terms


def test_terms_are_lowercased_alphanumeric_runs():
    assert terms("Hello, World! It's 3.5km—O'Neil_x") == [
        "hello", "world", "it", "s", "3", "5km", "o", "neil", "x"]
    assert terms("") == []
    assert terms("Café naïve") == ["café", "naïve"]


def test_sentences_split_on_terminal_punctuation_but_not_abbreviations():
    text = "Dr. Smith arrived. He said \"hi!\" Then left?  The U.S. is big."
    assert sentences(text) == ["Dr. Smith arrived.", 'He said "hi!"', "Then left?",
                               "The U.S. is big."]


def test_sentence_spans_cover_text_without_surrounding_space():
    text = "  One.  Two three!\nFour"
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == ["One.", "Two three!", "Four"]


def test_single_sentence_and_empty():
    assert sentences("no terminal punctuation") == ["no terminal punctuation"]
    assert sentences("") == []
    assert sentences("   ") == []


def test_punctuation_is_the_ascii_set():
    assert len(PUNCTUATION) == 32
    assert {"!", "~", "\\", "`"} <= PUNCTUATION


def test_analyzer_stops_then_porter_stems():
    analyzer = Analyzer()
    assert analyzer.analyze("The running dogs are jumping over the fences") == [
        "run", "dog", "jump", "fenc"]
    # Porter (not Porter2): "generously" → "gener"
    assert analyzer.analyze("generously") == ["gener"]
    assert analyzer.query_terms("dogs dog DOG cats") == ["dog", "cat"]


def test_stopword_lists_are_configurable(tmp_path):
    custom = tmp_path / "stops.txt"
    custom.write_text("# comment\nDogs\n\ncats  # trailing comment\n", encoding="utf-8")
    assert load_stopwords(str(custom)) == frozenset({"dogs", "cats"})
    assert load_stopwords("none") == frozenset()
    assert "the" in load_stopwords("default")
    assert Analyzer(stopwords="none", stem=False).analyze("The dogs") == ["the", "dogs"]
    assert Analyzer(stopwords=str(custom), stem=False).analyze("The dogs and cats") == [
        "the", "and"]


def test_spacy_stopwords_list_loads():
    stops = load_stopwords("spacy")
    assert {"the", "and", "of"} <= stops


@pytest.mark.parametrize(("source", "word", "expected"), [
    ("NASA", "agency", "AGENCY"),        # all caps carries over
    ("Quick", "fast", "Fast"),           # capitalised
    ("quick", "fast", "fast"),           # as is
    ("A", "one", "One"),                 # a lone capital is a capitalised word, not caps
    ("iPhone", "phone", "phone"),        # lower first letter: left alone
])
def test_match_case_carries_the_casing_pattern(source, word, expected):
    from abnirml.text.casing import match_case

    assert match_case(source, word) == expected
