"""The textual-manipulation probe family: names, orientation, skips, determinism, options,
and the behaviour theory predicts for bag-of-words rankers on TREC DL 2019."""

from __future__ import annotations

import json
import math
import warnings
from collections import Counter

import numpy as np
import pytest

from abnirml.errors import ConfigError, InputError
from abnirml.probes.base import ProbeContext, table_from_samples
from abnirml.probes.manipulation import probes as manipulation
from abnirml.probes.manipulation.probes import ManipulationProbe, available
from abnirml.probes.probe_registry import select_probes
from abnirml.samples import Sample, Skip
from abnirml.text.analyzer import Analyzer
from abnirml.text.tokenize import sentence_spans, sentences
from tests._contexts import probe_context

NAMES = [
    "tmp:remove-stops", "tmp:remove-punct", "tmp:remove-stops-punct", "tmp:lemmatize",
    "tmp:shuffle-words", "tmp:shuffle-words-in-sentences", "tmp:shuffle-prepositions",
    "tmp:shuffle-sentences", "tmp:reverse-words", "tmp:reverse-sentences",
    "tmp:swap-noun-chunks", "tmp:replace-with-query", "tmp:add-doct5query",
    "tmp:add-nonrel-sentence", "tmp:prepend-query", "tmp:append-query", "tmp:typos",
    "tmp:duplicate-k2", "tmp:duplicate-k3", "tmp:duplicate-k4", "tmp:only-query",
    "tmp:drop-query", "tmp:case-fold", "tmp:delete-sentence-start", "tmp:delete-sentence-end",
    "tmp:delete-sentence-random", "tmp:add-nonrel-sentence-start",
    "tmp:shuffle-words-keep-noun-chunks", "tmp:shuffle-words-in-sentences-keep-noun-chunks",
    "tmp:reverse-noun-chunks", "tmp:swap-number-chunks", "tmp:typos-nostops",
]
ORDER_BLIND = ["tmp:shuffle-words", "tmp:shuffle-words-in-sentences", "tmp:shuffle-prepositions",
               "tmp:shuffle-sentences", "tmp:reverse-words", "tmp:reverse-sentences",
               "tmp:swap-noun-chunks", "tmp:shuffle-words-keep-noun-chunks",
               "tmp:shuffle-words-in-sentences-keep-noun-chunks", "tmp:reverse-noun-chunks",
               "tmp:swap-number-chunks"]
NO_SPACY_ORDER = ["tmp:shuffle-words", "tmp:shuffle-words-in-sentences",
                  "tmp:shuffle-sentences", "tmp:reverse-words", "tmp:reverse-sentences"]
# Removing stopwords or punctuation leaves the analysed terms untouched.
# Case folding too: the analyzer lowercases every term.
TERM_PRESERVING = ["tmp:remove-stops", "tmp:remove-punct", "tmp:remove-stops-punct",
                   "tmp:case-fold"]


def probe(name: str) -> ManipulationProbe:
    (found,) = [p for p in available() if p.name == name]
    return found


def items(name: str, context: ProbeContext) -> list[Sample | Skip]:
    return list(probe(name).samples(context))


def samples_by_key(name: str, context: ProbeContext) -> dict[tuple[str, str], Sample]:
    return {(s.meta["qid"], s.meta["docno"]): s for s in items(name, context)
            if isinstance(s, Sample)}


@pytest.fixture
def demo(demo_collection):
    return ProbeContext(collection=demo_collection, seed=0)


# --------------------------------------------------------------------------- the family


def test_the_family_has_exactly_the_public_names():
    assert [p.name for p in available()] == NAMES
    assert all(p.family == "tmp" and not p.symmetric for p in available())
    assert [p.name for p in select_probes(["tmp"])] == NAMES
    assert [p.name for p in select_probes(["tmp:duplicate-*"])] == NAMES[17:20]


def test_d1_is_the_manipulated_text_and_d2_the_original(demo):
    collection = demo.collection
    replaced = items("tmp:replace-with-query", demo)
    assert len(replaced) == len(list(collection.judged()))
    for sample in replaced:
        assert isinstance(sample, Sample)
        qid, docno = sample.meta["qid"], sample.meta["docno"]
        assert sample.doc1 == sample.query == collection.queries[qid]
        assert sample.doc2 == collection.docs[docno]
        assert sample.meta["grade"] == collection.grade(qid, docno)
        assert sample.meta["docno2"] == docno


def test_skips_are_counted_by_reason(demo):
    collection = demo.collection
    single = sum(1 for _, d, _ in collection.judged()
                 if len(sentence_spans(collection.docs[d])) < 2)
    assert single > 0
    reasons = Counter(i.reason for i in items("tmp:shuffle-sentences", demo) if isinstance(i, Skip))
    assert reasons == Counter({"not-applicable": single})
    # Drop-Q leaves a document unchanged when none of its terms is a query term (compared
    # lowercased and stemmed, query stopwords included)
    unstopped = Analyzer(stopwords="none")
    no_match = sum(1 for q, d, _ in collection.judged()
                   if not set(unstopped.query_terms(collection.queries[q]))
                   & set(unstopped.analyze(collection.docs[d])))
    dropped = Counter(i.reason for i in items("tmp:drop-query", demo) if isinstance(i, Skip))
    assert dropped == Counter({"unchanged": no_match})


def test_samples_do_not_depend_on_which_other_samples_are_built(demo_collection):
    full = ProbeContext(collection=demo_collection, seed=5)
    subset = probe_context(collection=demo_collection, seed=5, options={"tmp.sample": 40})
    other_seed = ProbeContext(collection=demo_collection, seed=6)
    for name in ("tmp:shuffle-words", "tmp:typos", "tmp:add-nonrel-sentence"):
        everything = samples_by_key(name, full)
        some = samples_by_key(name, subset)
        assert 0 < len(some) <= 40
        assert all(everything[key] == sample for key, sample in some.items())
        assert samples_by_key(name, full) == everything
        assert samples_by_key(name, other_seed) != everything


def test_spacy_parses_every_document_once_per_run(demo_collection, monkeypatch):
    calls: list[int] = []
    original = manipulation.m.parse_texts

    def counting(texts, batch_size=None):
        texts = list(texts)
        calls.append(len(texts))
        return original(texts, batch_size)

    monkeypatch.setattr(manipulation.m, "parse_texts", counting)
    context = probe_context(collection=demo_collection, options={"tmp.sample": 30})
    for name in ("tmp:lemmatize", "tmp:shuffle-prepositions", "tmp:swap-noun-chunks"):
        assert any(isinstance(i, Sample) for i in items(name, context))
    documents = {demo_collection.docs[d] for _, d, _ in manipulation.judged_pairs(context)}
    assert calls == [len(documents)]


def test_nonrelevant_sentences_come_from_grade_zero_documents_of_the_query(demo):
    collection = demo.collection
    for sample in items("tmp:add-nonrel-sentence", demo):
        qid = sample.meta["qid"]
        added = sample.doc1[len(sample.doc2) + 1:]
        assert sample.doc1.startswith(sample.doc2 + " ")
        donors = [collection.docs[d] for d, g in collection.qrels[qid].items()
                  if g == 0 and d in collection.docs and collection.docs[d] != sample.doc2]
        assert added in {s for donor in donors for s in sentences(donor)}


# --------------------------------------------------------------------------- options


def test_doct5query_without_expansions_skips_everything_with_a_warning(demo):
    with pytest.warns(UserWarning, match="doct5query_file"):
        result = items("tmp:add-doct5query", demo)
    assert result and all(isinstance(i, Skip) and i.reason == "not-applicable" for i in result)


@pytest.mark.parametrize("fmt", ["jsonl", "tsv"])
def test_doct5query_expansions_from_a_file(demo_collection, tmp_path, fmt):
    judged = list(demo_collection.judged())
    chosen = {docno for _, docno, _ in judged[:5]}
    path = tmp_path / f"expansions.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps({"docno": d, "expansion": f"why {d} matters"}) + "\n"
                                for d in sorted(chosen)), encoding="utf-8")
    else:
        path.write_text("".join(f"{d}\twhy {d} matters\n" for d in sorted(chosen)),
                        encoding="utf-8")
    context = probe_context(collection=demo_collection,
                            options={"tmp.doct5query_file": str(path)})
    result = items("tmp:add-doct5query", context)
    made = [i for i in result if isinstance(i, Sample)]
    assert {s.meta["docno"] for s in made} == chosen
    for sample in made:
        assert sample.doc1 == f"{sample.doc2} why {sample.meta['docno']} matters"
    assert sum(isinstance(i, Skip) for i in result) == len(judged) - len(made)


def test_a_broken_expansions_file_names_file_and_line(demo_collection, tmp_path):
    path = tmp_path / "expansions.jsonl"
    path.write_text('{"docno": "d01_01", "expansion": "x"}\n{"docno": \n', encoding="utf-8")
    context = probe_context(collection=demo_collection,
                            options={"tmp.doct5query_file": str(path)})
    with pytest.raises(InputError, match=r"expansions\.jsonl:2"):
        items("tmp:add-doct5query", context)


class Echo:
    """An expansion source that 'expands' a document into its first word, twice."""

    def __init__(self) -> None:
        self.calls = 0

    def expand(self, texts):
        self.calls += 1
        return [" ".join([t.split()[0]] * 2) for t in texts]


def test_doct5query_from_an_expansion_source(demo_collection):
    source = Echo()
    context = probe_context(collection=demo_collection,
                            options={"tmp.doct5query_source": source})
    made = [i for i in items("tmp:add-doct5query", context) if isinstance(i, Sample)]
    assert len(made) == len(list(demo_collection.judged()))
    first = made[0].doc2.split()[0]
    assert made[0].doc1 == f"{made[0].doc2} {first} {first}"
    assert source.calls >= 1


def test_bad_expansion_sources_are_configuration_errors(demo_collection):
    class Short:
        def expand(self, texts):
            return ["only one"]

    for source, message in ((Short(), "expected one string per text"),
                            ("bm25", "cannot write expansions"), (42, "must be an object")):
        context = probe_context(collection=demo_collection,
                                options={"tmp.doct5query_source": source})
        with pytest.raises(ConfigError, match=message):
            items("tmp:add-doct5query", context)


@pytest.mark.parametrize(("options", "message"), [
    ({"tmp.typo_rate": 1.5}, "typo_rate"), ({"tmp.typo_rate": "often"}, "typo_rate"),
    ({"tmp.sample": 0}, r"tmp\.sample must be ≥ 1"),
    ({"tmp.sample": 2.5}, r"tmp\.sample: 2\.5 is not a whole number"),
])
def test_bad_probe_options_are_configuration_errors(demo_collection, options, message):
    with pytest.raises(ConfigError, match=message):
        items("tmp:typos", probe_context(collection=demo_collection, options=options))


def test_mask_token_option_is_used(demo_collection):
    context = probe_context(collection=demo_collection, options={"tmp.mask_token": "<mask>"})
    made = [i for i in items("tmp:drop-query", context) if isinstance(i, Sample)]
    assert made and all("<mask>" in s.doc1 and "[MASK]" not in s.doc1 for s in made)


# --------------------------------------------------------------------------- DL19


def _records(output):
    out: dict[tuple[str, str, str], dict] = {}
    for record in output.result.records:
        out[(record["probe"], record["ranker"], record["subset"])] = record
    return out


@pytest.mark.shared
@pytest.mark.slow
def test_dl19_word_order_is_invisible_to_bag_of_words_models_on_every_document(dl19):
    from abnirml.pipeline import RunConfig, SessionSettings, run

    output = run(RunConfig(collection=str(dl19), rankers=["bm25", "ql"], probes=NO_SPACY_ORDER,
                           out=None, session=SessionSettings(cache=None, progress=False)))
    records = _records(output)
    table = output.result.tables["tmp:shuffle-words"]
    judged = len(table) + sum(v for k, v in table.skipped.items() if k != "missing-text")
    assert judged == 4337
    for name in NO_SPACY_ORDER:
        for ranker in ("bm25", "ql"):
            for subset in ("all", "non-relevant", "relevant"):
                record = records[(name, ranker, subset)]
                assert record["n"] > 0
                assert record["score"] == 0.0 and record["mean_diff"] == 0.0
                assert record["significant"] is False and record["p_value"] == 1.0


@pytest.fixture(scope="module")
def dl19_battery(dl19, tmp_path_factory):
    """The whole battery on 250 sampled judged pairs of DL19, BM25 and QL, via the CLI."""
    pytest.importorskip("spacy")
    pytest.importorskip("codespell_lib")
    from abnirml.cli import main
    from abnirml.data.collection import load_collection

    collection = load_collection(str(dl19))
    judged = list(collection.judged())
    root = tmp_path_factory.mktemp("tmp-battery")
    expansions = root / "expansions.tsv"
    # expansions for every tenth judged document: the text of a query it is judged for
    with_expansion = {docno: collection.queries[qid] for qid, docno, _ in judged[::10]}
    expansions.write_text("".join(f"{d}\t{t}\n" for d, t in with_expansion.items()),
                          encoding="utf-8")
    out = root / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = main(["run", "--collection", str(dl19), "--ranker", "bm25", "--ranker", "ql",
                       "--probe", "tmp", "--option", "tmp.sample=250",
                       "--option", f"tmp.doct5query_file={expansions}", "--no-cache", "--quiet",
                       "--out", str(out)])
    assert status == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {(r["probe"], r["ranker"], r["subset"]): r for r in records}, out, with_expansion


@pytest.mark.shared
@pytest.mark.slow
def test_dl19_battery_theory_for_bag_of_words_models(dl19_battery):
    records, _, _ = dl19_battery
    assert {r[0] for r in records} == set(NAMES)
    for name in ORDER_BLIND + TERM_PRESERVING:
        for ranker in ("bm25", "ql"):
            for subset in ("all", "non-relevant", "relevant"):
                record = records[(name, ranker, subset)]
                assert record["n"] > 0, (name, subset)
                assert record["score"] == 0.0, (name, ranker, subset)
                assert record["significant"] is False
    for subset in ("all", "non-relevant", "relevant"):
        assert records[("tmp:replace-with-query", "bm25", subset)]["score"] >= 0.9
        # duplication never lowers Terrier BM25 (b < 1), see the duplication test below
        assert records[("tmp:duplicate-k2", "bm25", subset)]["neg"] == 0
        # Drop-Q removes every query term: BM25 can only lose
        assert records[("tmp:drop-query", "bm25", subset)]["pos"] == 0
    assert records[("tmp:drop-query", "bm25", "all")]["score"] < -0.5


@pytest.mark.shared
@pytest.mark.slow
def test_dl19_battery_counts_and_report_layout(dl19_battery):
    records, out, with_expansion = dl19_battery
    all_rows = {k[0]: r for k, r in records.items() if k[1] == "bm25" and k[2] == "all"}
    for name, record in all_rows.items():
        assert record["n"] + sum(record["skipped"].values()) == 250, name
        parts = [records[(name, "bm25", s)]["n"] for s in ("non-relevant", "relevant")]
        assert sum(parts) == record["n"]
    assert all_rows["tmp:add-doct5query"]["n"] <= len(with_expansion)
    assert all_rows["tmp:add-doct5query"]["skipped"]["not-applicable"] > 0
    report = (out / "report.md").read_text()
    assert "## Textual-manipulation probes" in report
    assert "| Probe | Subset | bm25 | ql | Samples |" in report
    lines = report.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("| tmp:shuffle-words |")))
    n = {s: records[("tmp:shuffle-words", "bm25", s)]["n"] for s in
         ("all", "non-relevant", "relevant")}
    # exactly 0 and not significant: unmarked (the report marks significant scores)
    assert lines[start] == f"| tmp:shuffle-words | all | 0.00 | 0.00 | {n['all']:,} |"
    assert lines[start + 1] == (f"|  | non-relevant | 0.00 | 0.00 | "
                                f"{n['non-relevant']:,} |")
    assert lines[start + 2] == f"|  | relevant | 0.00 | 0.00 | {n['relevant']:,} |"


@pytest.mark.shared
def test_dl19_duplication_follows_bm25_length_normalisation(dl19):
    """Terrier BM25 per matched term: w·(k1+1)·tf / (K + tf), K = k1·((1−b) + b·L/avgdl).

    Duplicating k times multiplies tf and L by k: the term becomes w·(k1+1)·tf / (K_k + tf)
    with K_k = k1·(1−b)/k + k1·b·L/avgdl = K − k1·(1−b)·(1 − 1/k). So for b < 1 every
    matched term with positive weight gains, strictly more with larger k; for b = 1 the score
    is exactly unchanged (length normalisation cancels the higher tf); unmatched documents
    keep their zero.
    """
    from abnirml.data.collection import load_collection
    from abnirml.rankers.registry import RankerEnv, build_ranker

    collection = load_collection(str(dl19))
    env = RankerEnv(collection=collection)
    bm25, flat = build_ranker("bm25", env), build_ranker("bm25+b=1", env)
    context = ProbeContext(collection=collection)
    per_k = {k: samples_by_key(f"tmp:duplicate-k{k}", context) for k in (2, 3, 4)}
    keys = sorted(per_k[2])
    assert len(keys) == 4337
    original = bm25.score([(per_k[2][key].query, per_k[2][key].doc2) for key in keys])
    scores = {k: bm25.score([(per_k[k][key].query, per_k[k][key].doc1) for key in keys])
              for k in (2, 3, 4)}
    analyzer = env.analyzer
    matched = np.array([bool(set(analyzer.query_terms(per_k[2][key].query))
                             & set(analyzer.analyze(per_k[2][key].doc2))) for key in keys])
    weights_positive = all(bm25.idf(t) > 0 for t in env.collection_stats().df)
    assert weights_positive           # no term is in more than half the passages
    assert matched.sum() > 4000
    assert np.all(scores[2][matched] > original[matched])
    assert np.all(scores[3][matched] > scores[2][matched])
    assert np.all(scores[4][matched] > scores[3][matched])
    assert np.all(scores[2][~matched] == 0.0) and np.all(original[~matched] == 0.0)
    # exact size of the gain for one document, from the formula above
    key = keys[int(np.flatnonzero(matched)[0])]
    sample = per_k[2][key]
    tf = Counter(analyzer.analyze(sample.doc2))
    length = sum(tf.values())
    avgdl = env.collection_stats().avg_doc_length
    expected = 0.0
    for term, qtf in Counter(analyzer.analyze(sample.query)).items():
        weight = bm25.idf(term) * (8 + 1) * qtf / (8 + qtf)
        if tf[term]:
            k_dup = 1.2 * ((1 - 0.75) / 2 + 0.75 * length / avgdl)
            expected += weight * 2.2 * tf[term] / (k_dup + tf[term])
    assert math.isclose(scores[2][keys.index(key)], expected, rel_tol=1e-12)
    flat_original = flat.score([(per_k[2][k].query, per_k[2][k].doc2) for k in keys])
    flat_doubled = flat.score([(per_k[2][k].query, per_k[2][k].doc1) for k in keys])
    np.testing.assert_allclose(flat_doubled, flat_original, rtol=1e-12, atol=0)


def test_probes_build_tables_the_engine_can_use(demo):
    table = table_from_samples(probe("tmp:reverse-words").samples(demo))
    assert len(table) == len(list(demo.collection.judged()))
    assert not np.isnan(table.grade).any()
