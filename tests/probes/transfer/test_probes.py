"""Transfer probes end to end on fixture corpora: discards, subsets, sampling, factuality,
and the symmetric paraphrase score through the engine."""

from collections import Counter

import numpy as np
import pytest

from abnirml.evaluation.execution.experiment import ExperimentConfig, run_experiment
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.probes.base import ProbeContext
from abnirml.probes.probe_registry import select_probes
from abnirml.probes.transfer.factuality import factual_pairs
from abnirml.probes.transfer.probes import TransferProbe, hash_fraction, pairs_probe
from abnirml.rankers.support.cache import ScoreCache
from abnirml.samples import Sample, Skip
from abnirml.text.stopwords import load_stopwords
from tests._contexts import probe_context
from tests.transfer_fixtures import (
    lines,
    nq_record,
    write_gyafc,
    write_jfleg,
    write_mrpc,
    write_nq,
    write_xsum,
)

pytest.importorskip("spacy")


def probe(name):
    (found,) = select_probes([name])
    return found


def run_probe(p, root, seed=0, **options):
    """The probe's samples and skips with ``dtp.data`` at ``root`` and ``options`` (dtp keys
    without the family: ``max_pairs=5``)."""
    given = {"dtp.data": str(root), **{f"dtp.{key}": value for key, value in options.items()}}
    context = probe_context(collection=None, seed=seed, options=given)
    items = list(p.samples(context))
    samples = [i for i in items if isinstance(i, Sample)]
    skips = Counter(i.reason for i in items if isinstance(i, Skip))
    return samples, skips


class WordCount:
    """A ranker with known scores: the number of words of the document."""

    name = "words"
    fingerprint = "test-word-count"

    def score(self, pairs):
        return np.array([len(d.split()) for _, d in pairs], dtype=np.float64)


PARAPHRASES = [
    (1, 1, 2, "The blue whale swims in deep oceans.", "The blue whale swims."),   # +3 words
    (1, 3, 4, "The red car stopped.", "The red car stopped near the old station."),  # −4
    (1, 5, 6, "The tall tree fell.", "The tall tree dropped."),                    # 0
    (0, 7, 8, "The tall tree fell.", "Stock prices rose sharply."),                # Quality 0
]


def test_paraphrase_probe_counts_absolute_differences(tmp_path):
    write_mrpc(tmp_path / "mrpc", PARAPHRASES)
    symmetric = probe("dtp:paraphrase-mrpc")
    directional = TransferProbe("dtp:directed", "X", "Y", symmetric.source)
    assert symmetric.symmetric and not directional.symmetric
    context = probe_context(collection=None, options={"dtp.data": str(tmp_path)})
    with ScoreCache(None) as cache:
        result = run_experiment([symmetric, directional], [WordCount()], context,
                                Scorer(cache, progress=False), ExperimentConfig(delta_all=1.5))
    by_probe = {r["probe"]: r for r in result.records}
    sym = by_probe["dtp:paraphrase-mrpc"]
    # |+3| > δ and |−4| > δ count, 0 does not: 2 of 3, never negative
    assert (sym["n"], sym["pos"], sym["neg"], sym["neutral"]) == (3, 2, 0, 1)
    assert sym["score"] == pytest.approx(2 / 3) and 0 <= sym["score"] <= 1
    # the same pairs read directionally cancel out: +1 and −1
    assert by_probe["dtp:directed"]["score"] == 0.0
    assert by_probe["dtp:directed"]["neg"] == 1
    queries = {s.query for s in map(result.tables["dtp:paraphrase-mrpc"].sample, range(3))}
    assert queries == {"the blue whale", "the red car", "the tall tree"}


def test_fluency_discards_identical_and_duplicate_references(tmp_path):
    write_jfleg(tmp_path / "jfleg", "dev",
                ["the cat sit on the mat .", "the dog run fast ."],
                [["The cat sits on the mat .", "the dog run fast ."],
                 ["The cat sits on the mat .", "The dog runs fast ."],
                 ["The cat sat on the mat .", "The dog ran fast ."]])
    samples, skips = run_probe(probe("dtp:fluency-jfleg"), tmp_path)
    assert skips == Counter({"identical": 1, "duplicate": 1})
    assert [(s.doc1, s.doc2) for s in samples] == [
        ("The cat sits on the mat .", "the cat sit on the mat ."),
        ("The cat sat on the mat .", "the cat sit on the mat ."),
        ("The dog runs fast .", "the dog run fast ."),
        ("The dog ran fast .", "the dog run fast .")]
    for s in samples:
        assert s.query in s.doc1.lower() and s.query in s.doc2.lower()
        assert s.meta["query_source"] == "noun-chunk"


def test_missing_data_is_one_no_data_skip(tmp_path):
    samples, skips = run_probe(probe("dtp:neutrality-wnc"), tmp_path)
    assert samples == [] and skips == Counter({"no-data": 1})
    context = ProbeContext(collection=None)
    (item,) = list(probe("dtp:factuality-nq-per").samples(context))
    assert item.reason == "no-data" and "--transfer-data not given" in item.meta["where"]


def test_gyafc_domain_probes_split_the_samples(tmp_path):
    write_gyafc(tmp_path / "gyafc", "Entertainment_Music", "test",
                informal=["that movie was sooo good lol"],
                formal_refs=[["That movie was very good."]],
                formal=["The concert was excellent."], informal_refs=[["the concert was dope"]])
    write_gyafc(tmp_path / "gyafc", "Family_Relationships", "test",
                informal=["my mother is sooo strict"], formal_refs=[["My mother is very strict."]],
                formal=["My family is kind."], informal_refs=[["my family is kinda nice"]])
    em, _ = run_probe(probe("dtp:formality-gyafc-em"), tmp_path)
    fr, _ = run_probe(probe("dtp:formality-gyafc-fr"), tmp_path)
    both, _ = run_probe(probe("dtp:formality-gyafc"), tmp_path)
    assert {s.meta["group"] for s in em} == {"em"} and {s.meta["group"] for s in fr} == {"fr"}
    assert len(em) + len(fr) == len(both) == 4
    assert {s.doc1 for s in fr} == {"My mother is very strict.", "My family is kind."}


def test_succinctness_sub_sample_is_deterministic(tmp_path):
    for i in range(60):
        write_xsum(tmp_path / "xsum", f"{1000 + i}", "Floods hit northern towns",
                   f"Floods hit towns in the north, report {i}.",
                   ["Heavy rain caused floods in several towns.", "Roads were closed."])
    expected = {f"{1000 + i}" for i in range(60) if hash_fraction(f"{1000 + i}") < 0.1}
    assert 0 < len(expected) < 20
    xsum = probe("dtp:succinctness-xsum")
    samples, skips = run_probe(xsum, tmp_path, seed=0)
    other_seed, _ = run_probe(xsum, tmp_path, seed=9)
    assert {s.meta["key"] for s in samples} == expected
    assert [s.meta["key"] for s in other_seed] == [s.meta["key"] for s in samples]
    assert skips == Counter({"sub-sampled": 60 - len(expected)})
    assert all(s.query == "Floods hit northern towns" and s.meta["query_source"] == "given"
               for s in samples)
    everything, _ = run_probe(xsum, tmp_path, sample_rate=1)
    assert len(everything) == 60


def test_title_without_overlap_is_discarded(tmp_path):
    write_xsum(tmp_path / "xsum", "1", "Election results announced",
               "Cats sleep a lot.", ["Cats are animals.", "They sleep."])
    samples, skips = run_probe(probe("dtp:succinctness-xsum"), tmp_path, sample_rate=1)
    assert samples == [] and skips == Counter({"no-query-overlap": 1})


def test_max_pairs_cap_is_seeded(tmp_path):
    rows = [(1, i, i + 1000, f"The green lamp {i} glowed.", f"The green lamp {i} shone.")
            for i in range(12)]
    write_mrpc(tmp_path / "mrpc", rows)
    p = probe("dtp:paraphrase-mrpc")
    a, skips = run_probe(p, tmp_path, seed=1, max_pairs=5)
    b, _ = run_probe(p, tmp_path, seed=1, max_pairs=5)
    c, _ = run_probe(p, tmp_path, seed=2, max_pairs=5)
    keys = [s.meta["key"] for s in a]
    assert len(a) == 5 and skips == Counter({"capped": 7})
    assert keys == [s.meta["key"] for s in b]
    assert keys != [s.meta["key"] for s in c]


NQ = [
    nq_record("who wrote the play hamlet", ["William Shakespeare"],
              ["Hamlet is a tragedy written by William Shakespeare around 1600.",
               "The play is set in Denmark."]),
    nq_record("who discovered penicillin", ["Alexander Fleming", "Sir Alexander Fleming"],
              ["Penicillin was discovered by alexander   fleming in 1928."]),
    nq_record("who was the first us president", ["George Washington"],
              ["George Washington was the first president. Washington led the army."]),
    nq_record("was george washington or john adams the first president",
              ["George Washington"], ["George Washington served two terms."]),
    nq_record("who painted the mona lisa", ["Leonardo da Vinci"],
              ["The Mona Lisa was painted by Leonardo da Vinci."]),
    nq_record("what is the capital of kenya", ["Nairobi"], ["Nairobi is the capital of Kenya."]),
    nq_record("where is the eiffel tower", ["Paris"], ["The Eiffel Tower stands in Paris."]),
    nq_record("which band sang hey jude", ["the Beatles"], ["Hey Jude is a song by the Beatles."]),
]


def test_factual_pairs_replace_answer_with_same_type_and_length(tmp_path):
    from abnirml.data.transfer.nq import load_nq

    write_nq(tmp_path, NQ)
    items = list(factual_pairs(load_nq(tmp_path), load_stopwords("default"), seed=0))
    pairs = [i for i in items if not isinstance(i, Skip)]
    skips = Counter((i.reason, i.meta["group"]) for i in items if isinstance(i, Skip))
    assert skips == Counter({("answer-not-in-text", "per"): 1,     # Hamlet's 2nd passage
                             ("answer-in-question", "per"): 1,     # "george washington or …"
                             ("no-substitute", "per"): 1})         # da Vinci: 3 tokens, alone
    by_question = {p.query: p for p in pairs}
    people = {"William Shakespeare", "Alexander Fleming", "George Washington"}
    hamlet = by_question["who wrote the play hamlet"]
    assert hamlet.group == "per" and hamlet.meta["substitute"] in people - {"William Shakespeare"}
    assert hamlet.doc2 == hamlet.doc1.replace("William Shakespeare", hamlet.meta["substitute"])
    fleming = by_question["who discovered penicillin"]  # matched case- and space-insensitively
    assert "fleming" not in fleming.doc2.lower() and fleming.meta["substitute"] in people
    washington = by_question["who was the first us president"]
    assert washington.doc2.startswith(washington.meta["substitute"] + " was the first")
    assert washington.doc2.endswith(" Washington led the army.")  # only the full answer
    kenya, paris = by_question["what is the capital of kenya"], by_question[
        "where is the eiffel tower"]
    assert kenya.group == paris.group == "gpe"
    assert kenya.doc2 == "Paris is the capital of Kenya."
    assert paris.doc2 == "The Eiffel Tower stands in Nairobi."
    assert "which band sang hey jude" not in by_question  # no entity type: in no probe


def test_factuality_probe_per_type(tmp_path):
    write_nq(tmp_path / "nq", NQ, name="nq-dev.jsonl")
    context = probe_context(collection=None, options={"dtp.data": str(tmp_path)})
    per = list(probe("dtp:factuality-nq-per").samples(context))
    gpe = list(probe("dtp:factuality-nq-gpe").samples(context))
    per_samples = [s for s in per if isinstance(s, Sample)]
    assert len(per_samples) == 3 and all(s.meta["entity"] == "PERSON" for s in per_samples)
    assert Counter(s.reason for s in per if isinstance(s, Skip)) == Counter(
        {"answer-not-in-text": 1, "answer-in-question": 1, "no-substitute": 1})
    assert [s.meta["entity"] for s in gpe] == ["GPE", "GPE"]
    assert list(probe("dtp:factuality-nq-loc").samples(context)) == []


def test_pairs_probe_from_a_file(tmp_path):
    path = lines(tmp_path / "mine.tsv", ["doc1\tdoc2\tquery",
                                         "A short answer about solar panels.\t"
                                         "A long rambling answer about solar panels and more.\t"
                                         "solar panels",
                                         "The small brown fox jumped over a fence.\t"
                                         "The small brown fox leaped.\t"])
    p = pairs_probe("dtp:mine", path)
    context = ProbeContext(collection=None)
    samples = [s for s in p.samples(context) if isinstance(s, Sample)]
    assert [(s.query, s.meta["query_source"]) for s in samples] == [
        ("solar panels", "given"), ("the small brown fox", "noun-chunk")]
    with pytest.raises(Exception, match="dtp:<name>"):
        pairs_probe("mine", path)


@pytest.mark.parametrize(("option", "value", "message"), [
    ("max_pairs", "abc", "dtp.max_pairs: 'abc' is not a number"),
    ("max_pairs", "-1", "must be ≥ 0"),
    ("max_pairs", "1.5", "is not a whole number"),
    ("sample_rate", "0", "must be > 0"),
    ("sample_rate", "1.5", "must be ≤ 1"),
    ("sample_rate", "nan", "is not a number"),
    ("sample_rate", "lots", "is not a number"),
])
def test_bad_options(tmp_path, option, value, message):
    from abnirml.errors import ConfigError

    write_mrpc(tmp_path / "mrpc", PARAPHRASES)
    write_xsum(tmp_path / "xsum", "1", "t", "s", ["b"])
    name = "dtp:succinctness-xsum" if option == "sample_rate" else "dtp:paraphrase-mrpc"
    with pytest.raises(ConfigError, match=message):
        run_probe(probe(name), tmp_path, **{option: value})


def test_symmetric_duplicates_ignore_order(tmp_path):
    write_mrpc(tmp_path / "mrpc", [(1, 1, 2, "The blue whale swims.", "The blue whale dives."),
                                   (1, 2, 1, "The blue whale dives.", "The blue whale swims.")])
    samples, skips = run_probe(probe("dtp:paraphrase-mrpc"), tmp_path)
    assert len(samples) == 1 and skips == Counter({"duplicate": 1})
    directed = TransferProbe("dtp:directed", "X", "Y", probe("dtp:paraphrase-mrpc").source)
    samples, skips = run_probe(directed, tmp_path)
    assert len(samples) == 2 and not skips
