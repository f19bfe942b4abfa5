"""qvp:synonym's sources: the WordNet reader on files it writes, WordNet synonyms by part of
speech (real WordNet and spaCy when installed), counter-fitted vectors from a local file, and
what a run does without WordNet."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.probes.query_variation import synonyms as sources
from abnirml.text import wordnet as wn
from abnirml.text.stopwords import load_stopwords
from tests._contexts import probe_context

STOPS = load_stopwords()


def _write_wordnet(folder) -> None:
    """A two-sense noun "car" and the words sharing its senses, in WordNet's file format
    (data lines found by their byte offsets, as the real files are)."""
    senses = [["car", "auto", "automobile"], ["car", "railcar"]]
    for suffix in wn.POS_FILES.values():
        data = ["  1 licence header line\n"]
        index = ["  1 licence header line\n"]
        if suffix == "noun":
            offsets: list[int] = []
            position = len(data[0])
            for words in senses:
                body = " ".join(f"{w} 0" for w in words)
                line = f"{position:08d} 06 n {len(words):02x} {body} 000 | gloss\n"
                offsets.append(position)
                data.append(line)
                position += len(line)
            car, rail = offsets
            index += [f"auto n 1 0 1 0 {car:08d}\n", f"automobile n 1 0 1 0 {car:08d}\n",
                      f"car n 2 1 @ 2 2 {car:08d} {rail:08d}\n",
                      f"railcar n 1 0 1 0 {rail:08d}\n"]
        (folder / f"data.{suffix}").write_text("".join(data))
        (folder / f"index.{suffix}").write_text("".join(index))


def test_reader_on_written_files(tmp_path, monkeypatch):
    _write_wordnet(tmp_path)
    monkeypatch.setenv(wn.ENV_VAR, str(tmp_path))
    assert wn.wordnet_dir() == tmp_path
    net = wn.WordNet(tmp_path)
    assert len(net.senses("car", "n")) == 2 and net.senses("car", "v") == ()
    assert net.words("n", net.senses("car", "n")[0]) == ("car", "auto", "automobile")
    assert net.synonyms("car", "n") == ["auto", "automobile"]          # first sense only
    # "railcar"'s own first sense is the second car sense: mutual, so it is kept
    assert net.synonyms("car", "n", senses=2) == ["auto", "automobile", "railcar"]


def test_no_database_is_none(tmp_path, monkeypatch):
    monkeypatch.setenv(wn.ENV_VAR, str(tmp_path))
    monkeypatch.setattr(wn, "DEFAULT_DIRS", ())
    assert wn.wordnet_dir() is None


def test_synonym_probe_left_out_without_wordnet(tmp_path, monkeypatch):
    """`all` leaves qvp:synonym out with the reason; counter-fitted does not need WordNet."""
    from abnirml.probes.family_registry import resolve_options
    from abnirml.probes.probe_registry import omit_unavailable, select_probes

    monkeypatch.setenv(wn.ENV_VAR, str(tmp_path))
    monkeypatch.setattr(wn, "DEFAULT_DIRS", ())
    _, omitted = omit_unavailable(select_probes(["qvp"]), ["qvp"],
                                     resolve_options({}).settings)
    assert [o["probe"] for o in omitted] == ["qvp:synonym"]
    assert "wordnet-base" in omitted[0]["reason"] and "\n" not in omitted[0]["reason"]
    settings = resolve_options({"qvp.synonyms": "counter-fitted"}).settings
    assert omit_unavailable(select_probes(["qvp"]), ["qvp"], settings)[1] == []


def test_counter_fitted_neighbours_from_a_local_file(tmp_path):
    """Cosine ≥ 0.8 among the nearest 15, not a form of the same word, and the varied
    query must keep the word's part of speech (a stand-in tagger here)."""
    path = tmp_path / "vectors.txt"
    path.write_text("quick 1 0 0\nfast 0.95 0.1 0\nquicks 0.99 0 0.05\nslow -1 0 0\n"
                    "rapid 0.7 0.7 0\n")

    class Token:
        def __init__(self, text, idx):
            self.text, self.idx, self.lower_ = text, idx, text.lower()
            self.is_alpha = text.isalpha()
            self.pos_ = "ADJ"

    def parse(text):
        out, pos = [], 0
        for word in text.split(" "):
            out.append(Token(word, pos))
            pos += len(word) + 1
        return out

    source = sources.load_counter_fitted(path, STOPS)
    source._parse = parse
    assert source.neighbours("quick") == ["quicks", "fast"]    # rapid: cosine 0.71
    options = source("quick answer")
    assert options.choices == (((0, 5), "fast"),)               # "quicks": same stem
    assert (options.content_words, options.without_synonym) == (2, 1)


def test_counter_fitted_file_errors_name_the_line(tmp_path):
    bad = tmp_path / "vectors.txt"
    bad.write_text("quick 1 0 0\nfast 0.9 x 0\n")
    with pytest.raises(ConfigError, match=r"vectors.txt:2: expected a word and 3 numbers"):
        sources.load_counter_fitted(bad, STOPS)
    with pytest.raises(ConfigError, match="is not a file"):
        sources.counter_fitted_path(str(tmp_path / "missing.txt"))


@pytest.fixture(scope="module")
def real_wordnet():
    found = wn.load_wordnet()
    if found is None:
        pytest.skip("WordNet database not installed (apt-get install wordnet-base)")
    pytest.importorskip("spacy")
    return sources.WordNetSynonyms(found, STOPS)


def test_real_wordnet_synonyms_keep_part_of_speech_and_number(real_wordnet):
    def replacements(query):
        return {query[a:b]: r for (a, b), r in real_wordnet(query).choices}

    assert replacements("a red car")["car"] == "auto"
    assert replacements("red cars")["cars"] == "autos"            # plural kept
    # a word inside a multi-word WordNet entry keeps its entry's meaning: not replaced
    assert "car" not in replacements("cheap car insurance")
    assert "cycle" not in replacements("life cycle of a flea")
    # "find" shares its first sense with "happen", whose own usual sense is another one
    assert replacements("find the midsegment").get("find") != "happen"
    assert "miscarriage" not in replacements("causes of miscarriage")     # no tag counts
    options = real_wordnet("who is robert gray")                # a name: no content word
    assert options.choices == () and options.content_words == 0
    for query in ("social determinants of health", "define visceral"):
        for (a, b), found in real_wordnet(query).choices:
            assert found.isalpha() and found != query[a:b].lower()


def test_synonym_run_reports_words_without_a_synonym(real_wordnet, demo_collection):
    from abnirml.probes.query_variation.probes import QueryVariationProbe

    context = probe_context(collection=demo_collection, options={"qvp.depth": 0})
    table = QueryVariationProbe("synonym").sample_table(context)
    record = table.extra["record"]
    assert record["synonym_source"] == "wordnet"
    total = record["synonym_content_words"]
    assert 0 < record["synonym_words_without"] < total
    queries = sum(real_wordnet(q).content_words for q in demo_collection.queries.values())
    assert total == queries
    varied = {table.meta(i)["qid"]: table.meta(i)["query_variation"] for i in range(len(table))}
    for qid, text in varied.items():
        original = demo_collection.queries[qid].split()
        assert len(text.split()) == len(original)
        assert sum(a != b for a, b in zip(original, text.split(), strict=True)) == 1
    assert np.isin(list(table.skipped), ["not-applicable"]).all()


def test_named_synonym_probe_without_wordnet_stops_with_one_line(tmp_path, monkeypatch, capsys):
    from abnirml.cli import main

    monkeypatch.setenv(wn.ENV_VAR, str(tmp_path))
    monkeypatch.setattr(wn, "DEFAULT_DIRS", ())
    wn.load_wordnet.cache_clear()
    try:
        code = main(["run", "--collection", "demo", "--ranker", "bm25", "--probe",
                     "qvp:synonym", "--no-cache", "--quiet", "--no-effectiveness"])
    finally:
        wn.load_wordnet.cache_clear()
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "wordnet-base" in err[0] and "Traceback" not in err[0]


def test_plurals_are_forms_wordnets_morphology_reads_back(real_wordnet):
    """A noun's plural is its noun.exc form, else the most specific rule's — and only when
    morphy maps it back to the noun; "huntsman" is not in noun.exc, and "huntsmans" (what
    adding "s" made) is never written."""
    net = real_wordnet.wordnet
    assert "huntsmen" not in net.exceptions("n")
    known = {"huntsman": "huntsmen", "woman": "women", "city": "cities", "box": "boxes",
             "church": "churches", "car": "cars", "wife": "wives", "child": "children",
             "analysis": "analyses", "mouse": "mice"}
    assert {noun: net.plural(noun) for noun in known} == known
    assert net.plural("series") is None                   # a single -s: the rules cannot tell
    assert net.morphy("huntsmen", "n") == ["huntsman"]
    assert net.morphy("wives", "n") == ["wife"] and net.morphy("cars", "n") == ["car"]
    assert net.morphy("huntsmanx", "n") == []
    replaced = {query: {query[a:b]: r for (a, b), r in real_wordnet(query).choices}
                for query in ("hunters and gatherers", "red cars", "cheap autos")}
    assert replaced["hunters and gatherers"] == {"hunters": "huntsmen"}
    assert replaced["red cars"]["cars"] == "autos" and replaced["cheap autos"]["autos"] == "cars"


def test_the_first_sense_counts_only_when_the_tag_counts_say_it_is_the_most_frequent(
        real_wordnet):
    """index.noun: miscarriage 2 senses, 0 tagged (its first sense is a failure of justice,
    the lost pregnancy is second); wifi has no counts at all: no synonym for either."""
    net = real_wordnet.wordnet
    assert net.tagged_senses("miscarriage", "n") == 0 and net.tagged_senses("hunter", "n") == 1
    assert net.synonyms("miscarriage", "n") == []
    assert net.synonyms("miscarriage", "n", tagged=False) == ["abortion"]
    assert net.synonyms("wifi", "n") == []
    assert net.synonyms("hunter", "n") == ["huntsman"]


def test_every_replacement_on_dl19_is_a_lemma_or_a_form_morphy_reads_back(real_wordnet, dl19):
    net = real_wordnet.wordnet
    lines = (dl19 / "queries.tsv").read_text(encoding="utf-8").splitlines()
    found = 0
    for query in (line.split("\t", 1)[1] for line in lines):
        for _, replacement in real_wordnet(query).choices:
            found += 1
            assert any(net.senses(replacement, pos) or net.morphy(replacement, pos)
                       for pos in "nvar"), replacement
    assert found == 20              # the substitutions judged on docs/query-variations.md
