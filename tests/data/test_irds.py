"""The irds: loader against a stand-in for ir_datasets (no downloads here)."""

import sys
import types
from collections import namedtuple

import pytest

from abnirml.data.collection import load_collection
from abnirml.errors import ConfigError

Query = namedtuple("Query", "query_id text")
Doc = namedtuple("Doc", "doc_id text")
Qrel = namedtuple("Qrel", "query_id doc_id relevance iteration")
Scored = namedtuple("Scored", "query_id doc_id score")


class FakeStore:
    def __init__(self, docs):
        self.docs = docs

    def get_many(self, ids):
        return {i: Doc(i, self.docs[i]) for i in ids if i in self.docs}


class FakeDataset:
    def __init__(self):
        self.docs = {"d1": "apple pie recipe", "d2": "river bank", "d3": "apple orchard"}

    def has_queries(self):
        return True

    def has_qrels(self):
        return True

    def has_docs(self):
        return True

    def has_scoreddocs(self):
        return True

    def queries_iter(self):
        return iter([Query("1", "apple pie"), Query("2", "river")])

    def qrels_iter(self):
        return iter([Qrel("1", "d1", 3, "0"), Qrel("1", "d9", 1, "0"), Qrel("2", "d2", 2, "0"),
                     Qrel("7", "d2", 1, "0")])

    def scoreddocs_iter(self):
        return iter([Scored("1", "d3", 5.0), Scored("1", "d1", 9.0), Scored("2", "d2", 1.0)])

    def docs_store(self):
        return FakeStore(self.docs)


@pytest.fixture()
def fake_irds(monkeypatch):
    module = types.ModuleType("ir_datasets")

    def load(name):
        if name != "fake/test":
            raise KeyError(name)
        return FakeDataset()

    module.load = load
    monkeypatch.setitem(sys.modules, "ir_datasets", module)


def test_irds_collection_with_candidates_and_counts(fake_irds):
    collection = load_collection("irds:fake/test")
    assert collection.queries == {"1": "apple pie", "2": "river"}
    assert set(collection.docs) == {"d1", "d2", "d3"}
    assert collection.skipped["judged_without_text"] == 1       # d9
    assert collection.skipped["qrels_unknown_query"] == 1       # query 7
    assert collection.runs["bm25"]()["1"] == [("d1", 9.0), ("d3", 5.0)]
    assert list(collection.judged()) == [("1", "d1", 3), ("2", "d2", 2)]


def test_unknown_irds_id_is_a_clean_error(fake_irds):
    with pytest.raises(ConfigError, match="unknown ir_datasets id 'nope'"):
        load_collection("irds:nope")
