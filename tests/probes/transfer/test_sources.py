"""Transfer-pair loaders on small files written in each dataset's public release format."""

import sys
import types

import pytest

from abnirml.data.pairs import DataNotFound, TextPair, read_pairs_file
from abnirml.data.transfer import Source, corpora, hub, keep_all, news
from abnirml.data.transfer.nq import load_nq
from abnirml.errors import ConfigError, InputError
from abnirml.samples import Skip
from tests.transfer_fixtures import (
    lines,
    nq_record,
    write_gyafc,
    write_jfleg,
    write_mrpc,
    write_simplification,
    write_story,
    write_wnc,
    write_xsum,
)


def pairs_of(items):
    return [i for i in items if isinstance(i, TextPair)]


def skips_of(items):
    return [i.reason for i in items if isinstance(i, Skip)]


# --- MRPC ---------------------------------------------------------------------------------

def test_mrpc_keeps_quality_one_pairs(tmp_path):
    write_mrpc(tmp_path, [(1, 11, 12, "A cat sat.", "The cat was sitting."),
                          (0, 21, 22, "Rain fell.", "Stocks rose."),
                          (1, 31, 32, "He left early.", "He departed early.")])
    got = pairs_of(corpora.load_mrpc(tmp_path, keep_all))
    assert [(p.key, p.doc1, p.doc2) for p in got] == [
        ("test:11:12", "A cat sat.", "The cat was sitting."),
        ("test:31:32", "He left early.", "He departed early.")]


def test_mrpc_splits_a_line_that_joins_two_records(tmp_path):
    # The public train file has one line missing its newline: two records on one line.
    path = write_mrpc(tmp_path, [(1, 1, 2, "First one.", "First two.")],
                      name="msr_paraphrase_train.txt")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("0\t3\t4\tSecond one.\tSecond two.1\t5\t6\tThird one.\tThird two.\n")
    got = pairs_of(corpora.load_mrpc(tmp_path, keep_all))
    assert [(p.key, p.doc2) for p in got] == [("train:1:2", "First two."),
                                             ("train:5:6", "Third two.")]


@pytest.mark.parametrize(("row", "message"), [
    ("1\t1\t2\tonly four fields", "expected 5 tab-separated fields, found 4"),
    ("7\t1\t2\tA.\tB.", "Quality must be 0 or 1"),
])
def test_mrpc_malformed_line_names_file_and_line(tmp_path, row, message):
    path = write_mrpc(tmp_path, [(1, 1, 2, "A.", "B.")])
    with path.open("a", encoding="utf-8") as handle:
        handle.write(row + "\n")
    with pytest.raises(InputError) as info:
        list(corpora.load_mrpc(tmp_path, keep_all))
    assert info.value.path == str(path) and info.value.line == 3
    assert message in str(info.value)


def test_mrpc_wrong_header(tmp_path):
    lines(tmp_path / "msr_paraphrase_test.txt", ["a\tb\tc\td\te"])
    with pytest.raises(InputError, match="MRPC header") as info:
        list(corpora.load_mrpc(tmp_path, keep_all))
    assert info.value.line == 1


def test_missing_files_raise_data_not_found(tmp_path):
    for loader in (corpora.load_mrpc, corpora.load_jfleg, corpora.load_simplification,
                   corpora.load_wnc, corpora.load_gyafc, news.load_xsum, news.load_cnndm):
        with pytest.raises(DataNotFound):
            list(loader(tmp_path, keep_all))
    with pytest.raises(DataNotFound):
        list(load_nq(tmp_path))


# --- JFLEG --------------------------------------------------------------------------------

def test_jfleg_one_pair_per_reference_fluent_first(tmp_path):
    write_jfleg(tmp_path, "dev", ["he go to school ."],
                [["He goes to school ."], ["He went to school ."]],
                spellchecked=["he go to school ."])
    got = pairs_of(corpora.load_jfleg(tmp_path, keep_all))
    assert [(p.key, p.doc1, p.doc2) for p in got] == [
        ("dev:1:ref0", "He goes to school .", "he go to school ."),
        ("dev:1:ref1", "He went to school .", "he go to school .")]
    spell = pairs_of(corpora.load_jfleg_spellchecked(tmp_path, keep_all))
    assert [p.doc2 for p in spell] == ["he go to school ."] * 2


def test_jfleg_misaligned_reference_is_an_input_error(tmp_path):
    write_jfleg(tmp_path, "test", ["one .", "two ."], [["One .", "Two ."], ["One ."]])
    with pytest.raises(InputError,
                       match=r"ends after 1 line\(s\) but test.src goes on") as info:
        list(corpora.load_jfleg(tmp_path, keep_all))
    assert info.value.path.endswith("test.ref1") and info.value.line == 2


def test_invalid_utf8_is_located(tmp_path):
    write_jfleg(tmp_path, "dev", ["fine ."], [["Fine ."]])
    (tmp_path / "dev.ref0").write_bytes(b"bad \xff byte\n")
    with pytest.raises(InputError, match="UTF-8") as info:
        list(corpora.load_jfleg(tmp_path, keep_all))
    assert info.value.line == 1


# --- TurkCorpus / ASSET -------------------------------------------------------------------

def test_simplification_pairs_every_orig_with_its_simps(tmp_path):
    write_simplification(tmp_path, "test.truecase.detok", ["The feline reposed on the mat."],
                         [["The cat slept on the mat."], ["The cat rested on the mat."]])
    write_simplification(tmp_path, "asset.valid", ["Commence the procedure."],
                         [["Start the process."]])
    got = pairs_of(corpora.load_simplification(tmp_path, keep_all))
    assert {(p.key, p.doc1, p.doc2) for p in got} == {
        ("test.truecase.detok:1:simp0", "The cat slept on the mat.",
         "The feline reposed on the mat."),
        ("test.truecase.detok:1:simp1", "The cat rested on the mat.",
         "The feline reposed on the mat."),
        ("asset.valid:1:simp0", "Start the process.", "Commence the procedure.")}


def test_simplification_reference_order_is_numeric(tmp_path):
    write_simplification(tmp_path, "x", ["orig"], [[f"s{i}"] for i in range(11)])
    got = pairs_of(corpora.load_simplification(tmp_path, keep_all))
    assert [p.doc1 for p in got] == [f"s{i}" for i in range(11)]


# --- WNC ----------------------------------------------------------------------------------

def test_wnc_neutral_first(tmp_path):
    write_wnc(tmp_path, [("101", "The brilliant senator spoke.", "The senator spoke.")])
    (pair,) = pairs_of(corpora.load_wnc(tmp_path, keep_all))
    assert (pair.doc1, pair.doc2) == ("The senator spoke.", "The brilliant senator spoke.")
    assert pair.meta["rev_id"] == "101"


def test_wnc_short_row(tmp_path):
    path = lines(tmp_path / "biased.full", ["1\ta\tb"])
    with pytest.raises(InputError, match="at least 5") as info:
        list(corpora.load_wnc(tmp_path, keep_all))
    assert (info.value.path, info.value.line) == (str(path), 1)


# --- GYAFC --------------------------------------------------------------------------------

def _gyafc(tmp_path, qids=None):
    write_gyafc(tmp_path, "Entertainment_Music", "test",
                informal=["u gotta see that movie lol"],
                formal_refs=[["You must see that movie."], ["You should watch that film."]],
                formal=["I enjoy classical music."],
                informal_refs=[["i luv classical music"], ["classical music rocks"]],
                qids=qids)
    write_gyafc(tmp_path, "Family_Relationships", "tune",
                informal=["my bf is sooo annoying"], formal_refs=[["My boyfriend is annoying."]],
                formal=["Communication is important."], informal_refs=[["u gotta talk"]])


def test_gyafc_formal_first_in_both_directions(tmp_path):
    _gyafc(tmp_path)
    got = pairs_of(corpora.load_gyafc(tmp_path, keep_all))
    by_key = {p.key: p for p in got}
    assert len(got) == 6
    a = by_key["Entertainment_Music:test:informal:1:ref1"]
    assert (a.doc1, a.doc2, a.group) == ("You should watch that film.",
                                         "u gotta see that movie lol", "em")
    b = by_key["Entertainment_Music:test:formal:1:ref0"]
    assert (b.doc1, b.doc2) == ("I enjoy classical music.", "i luv classical music")
    assert by_key["Family_Relationships:tune:informal:1:ref0"].group == "fr"
    assert all(p.query is None for p in got)  # no question mapping → noun-chunk queries


def test_gyafc_questions_from_yahoo_mapping(tmp_path):
    _gyafc(tmp_path, qids={"informal": ["q7"], "formal": ["_"]})
    lines(tmp_path / "questions.tsv", ["q7\tWhat movie should I see this weekend?"])
    items = list(corpora.load_gyafc(tmp_path, keep_all))
    em = [p for p in pairs_of(items) if p.group == "em"]
    assert [p.query for p in em] == ["What movie should I see this weekend?"] * 2
    # the formal originals have no linked question ("_"): one discard per reference
    assert skips_of(items) == ["no-question", "no-question"]


# --- XSum ---------------------------------------------------------------------------------

def test_xsum_summary_body_title(tmp_path):
    write_xsum(tmp_path, "3581", "Flood warning for river towns",
               "Towns along the river have been warned of floods.",
               ["Heavy rain is expected overnight.", "Residents were told to prepare."])
    (pair,) = pairs_of(news.load_xsum(tmp_path, keep_all))
    assert pair.key == "3581" and pair.query == "Flood warning for river towns"
    assert pair.doc1 == "Towns along the river have been warned of floods."
    assert pair.doc2 == "Heavy rain is expected overnight. Residents were told to prepare."


def test_xsum_keep_is_consulted_before_reading(tmp_path):
    write_xsum(tmp_path, "1", "t", "s", ["b"])
    (tmp_path / "bbc-summary-data" / "2.summary").write_text("not xsum at all")
    items = list(news.load_xsum(tmp_path, lambda key: key == "1"))
    assert skips_of(items) == ["sub-sampled"] and len(pairs_of(items)) == 1
    with pytest.raises(InputError, match="TITLE"):
        list(news.load_xsum(tmp_path, keep_all))


# --- CNN / Daily Mail ---------------------------------------------------------------------

def test_cnndm_bullets_join_and_titles(tmp_path):
    write_story(tmp_path, "cnn", "abc", ["(CNN) The mayor opened a bridge.", "It is long."],
                ["Mayor opens bridge", "Bridge is long"])
    write_story(tmp_path, "dailymail", "def", ["A dog saved a child."], ["Dog saves child"])
    lines(tmp_path / "titles.tsv", ["abc\tMayor opens new bridge"])
    items = list(news.load_cnndm(tmp_path, keep_all))
    (cnn,) = [p for p in pairs_of(items) if p.group == "cnn"]
    assert cnn.doc1 == "Mayor opens bridge. Bridge is long."
    assert cnn.doc2 == "(CNN) The mayor opened a bridge. It is long."
    assert cnn.query == "Mayor opens new bridge"
    assert skips_of(items) == ["no-title"]  # the titles file lacks "def"
    only_dm = list(news.load_cnndm(tmp_path, keep_all, sources=("dailymail",)))
    assert skips_of(only_dm) == ["no-title"] and not pairs_of(only_dm)


def test_cnndm_without_titles_falls_back_to_chunk_queries(tmp_path):
    write_story(tmp_path, "dailymail", "def", ["A dog saved a child."], ["Dog saves child"])
    (pair,) = pairs_of(news.load_cnndm(tmp_path, keep_all))
    assert pair.query is None and pair.key == "dailymail:def"


# --- NQ -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["biencoder-nq-dev.json", "nq-dev.jsonl", "nq-dev.jsonl.gz"])
def test_nq_formats(tmp_path, name):
    from tests.transfer_fixtures import write_nq

    write_nq(tmp_path, [nq_record("who wrote hamlet", ["William Shakespeare"],
                                  ["Hamlet is a tragedy by William  Shakespeare."])], name)
    (record,) = list(load_nq(tmp_path))
    assert record.question == "who wrote hamlet"
    assert record.answers == ("William Shakespeare",)
    assert record.passages[0].text == "Hamlet is a tragedy by William Shakespeare."
    assert record.passages[0].pid == "100"


def test_nq_bad_record_is_located(tmp_path):
    lines(tmp_path / "nq.jsonl", [json_line({"question": "q", "answers": ["a"]}),
                                  json_line({"question": "q", "answers": "a"})])
    with pytest.raises(InputError, match="answers") as info:
        list(load_nq(tmp_path))
    assert info.value.line == 2


def json_line(value):
    import json

    return json.dumps(value)


# --- user pair files ----------------------------------------------------------------------

def test_pairs_tsv_and_jsonl(tmp_path):
    tsv = lines(tmp_path / "p.tsv", ["id\tdoc1\tdoc2\tquery\textra",
                                     "a\tFirst text.\tSecond text.\tmy query\tx",
                                     "\tThird.\tFourth.\t\ty"])
    got = list(read_pairs_file(tsv))
    assert [(p.key, p.doc1, p.doc2, p.query) for p in got] == [
        ("a", "First text.", "Second text.", "my query"),
        ("line3", "Third.", "Fourth.", None)]
    jsonl = lines(tmp_path / "p.jsonl", [json_line({"doc1": "x y", "doc2": "y z"})])
    (pair,) = list(read_pairs_file(jsonl))
    assert (pair.key, pair.doc1, pair.query) == ("line1", "x y", None)


@pytest.mark.parametrize(("name", "rows", "line", "message"), [
    ("p.tsv", ["doc1\tquery", "a\tb"], 1, "lacks column doc2"),
    ("p.tsv", ["doc1\tdoc2", "a\tb\tc"], 2, "expected 2 tab-separated fields"),
    ("p.tsv", ["doc1\tdoc2", "a\tb", "\tb"], 3, "empty or missing doc1"),
    ("p.jsonl", ['{"doc1": "a", "doc2": "b"}', "{oops"], 2, "invalid JSON"),
    ("p.jsonl", ['["a", "b"]'], 1, "expected a JSON object"),
    ("p.jsonl", ['{"doc1": "a", "doc2": ["b"]}'], 1, "must be a string"),
])
def test_pairs_file_errors(tmp_path, name, rows, line, message):
    path = lines(tmp_path / name, rows)
    with pytest.raises(InputError, match=message) as info:
        list(read_pairs_file(path))
    assert (info.value.path, info.value.line) == (str(path), line)


# --- locating data, hub copies --------------------------------------------------------------

def test_source_location_rules(tmp_path):
    write_mrpc(tmp_path / "mrpc", [(1, 1, 2, "A.", "B.")])
    source = Source("mrpc", corpora.load_mrpc, hub.hub_mrpc)
    assert len(list(source.items(data=str(tmp_path)))) == 1
    with pytest.raises(DataNotFound, match="--transfer-data not given"):
        source.items()
    jfleg = Source("jfleg", corpora.load_jfleg)
    with pytest.raises(DataNotFound) as info:
        jfleg.items(data=str(tmp_path), online=True)
    assert info.value.where == str(tmp_path / "jfleg")  # no hub copy to fall back on


class FakeDatasets(types.ModuleType):
    """Stands in for Hugging Face ``datasets``: rows per (id, config, split)."""

    def __init__(self, tables):
        super().__init__("datasets")
        self.tables = tables
        self.calls = []

    def load_dataset(self, name, config=None, split=None):
        self.calls.append((name, config, split))
        if (name, config, split) not in self.tables:
            raise FileNotFoundError(f"no {name}/{config}/{split} offline")
        return list(self.tables[(name, config, split)])


def test_hub_loaders_map_fields(monkeypatch):
    fake = FakeDatasets({
        ("nyu-mll/glue", "mrpc", "train"): [
            {"sentence1": "A b.", "sentence2": "A  b!", "label": 1, "idx": 4},
            {"sentence1": "C.", "sentence2": "D.", "label": 0, "idx": 5}],
        ("nyu-mll/glue", "mrpc", "validation"): [],
        ("jhu-clsp/jfleg", None, "validation"): [
            {"sentence": "he go .", "corrections": ["He goes .", "He went ."]}],
        ("jhu-clsp/jfleg", None, "test"): [],
        ("facebook/asset", "simplification", "validation"): [
            {"original": "Commence now.", "simplifications": ["Start now."]}],
        ("facebook/asset", "simplification", "test"): [],
    })
    monkeypatch.setitem(sys.modules, "datasets", fake)
    mrpc = pairs_of(hub.hub_mrpc(keep_all))
    assert [(p.key, p.doc1, p.doc2) for p in mrpc] == [("train:4", "A b.", "A  b!")]
    jfleg = pairs_of(hub.hub_jfleg(keep_all))
    assert [(p.key, p.doc1, p.doc2) for p in jfleg] == [
        ("validation:1:ref0", "He goes .", "he go ."),
        ("validation:1:ref1", "He went .", "he go .")]
    asset = pairs_of(hub.hub_asset(keep_all))
    assert [(p.key, p.doc1, p.doc2) for p in asset] == [
        ("validation:1:simp0", "Start now.", "Commence now.")]
    with pytest.raises(InputError, match="community-datasets/turk"):
        list(hub.hub_turk(keep_all))


def test_online_source_used_only_when_asked(monkeypatch, tmp_path):
    fake = FakeDatasets({("jhu-clsp/jfleg", None, s): [] for s in ("validation", "test")})
    monkeypatch.setitem(sys.modules, "datasets", fake)
    source = Source("jfleg", corpora.load_jfleg, hub.hub_jfleg)
    assert list(source.items(online=True)) == []
    assert fake.calls == [("jhu-clsp/jfleg", None, "validation"), ("jhu-clsp/jfleg", None, "test")]
    with pytest.raises(DataNotFound):
        source.items(online=False)


def test_hub_without_datasets_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # import fails
    with pytest.raises(ConfigError, match="\\[transfer\\]"):
        list(hub.hub_mrpc(keep_all))


class FakeIrds(types.ModuleType):
    """Stands in for ir_datasets' dpr-w100 NQ: queries with answers, graded qrels, docs."""

    def __init__(self):
        super().__init__("ir_datasets")

    def load(self, dataset_id):
        assert dataset_id == hub.NQ_IRDS
        ns = types.SimpleNamespace
        docs = {"d1": ns(doc_id="d1", text="Hamlet was written by  William Shakespeare.",
                         title="Hamlet"),
                "d2": ns(doc_id="d2", text="Unrelated text.", title="X")}

        class Store:
            def get_many(self, ids):
                return {i: docs[i] for i in ids if i in docs}

        return ns(
            queries_iter=lambda: iter([
                ns(query_id="1", text="who wrote hamlet ", answers=["William Shakespeare"]),
                ns(query_id="2", text="no positives", answers=["X"])]),
            qrels_iter=lambda: iter([ns(query_id="1", doc_id="d1", relevance=2),
                                     ns(query_id="1", doc_id="d2", relevance=0),
                                     ns(query_id="2", doc_id="d2", relevance=-1)]),
            docs_store=lambda: Store())


def test_irds_nq_records(monkeypatch):
    monkeypatch.setitem(sys.modules, "ir_datasets", FakeIrds())
    (record,) = list(hub.irds_nq())
    assert (record.key, record.question, record.answers) == (
        "irds:1", "who wrote hamlet", ("William Shakespeare",))
    assert [(p.pid, p.text) for p in record.passages] == [
        ("d1", "Hamlet was written by William Shakespeare.")]
