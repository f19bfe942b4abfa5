"""Random bytes into every loader: the only acceptable failure is a clean InputError."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abnirml.data.collection import load_directory
from abnirml.data.passages_on_disk import PassagesOnDisk
from abnirml.data.trec import read_id_text_jsonl, read_id_text_tsv, read_qrels, read_run
from abnirml.errors import InputError
from abnirml.report.run_outputs import read_results

# Bytes biased towards the separators the formats use, so parsers get past line one.
CHUNKS = st.lists(st.sampled_from([b"\t", b" ", b"\n", b"\r\n", b"q1", b"d1", b"0", b"3",
                                   b"Q0", b"1.5", b"{", b"}", b'"docno"', b":", b",",
                                   b'"text"', b"\xff", b"\xe9", b"\x00", b"nan", b"-", b"x"]),
                  max_size=40).map(b"".join)
ANY_BYTES = st.one_of(st.binary(max_size=200), CHUNKS)

LOADERS = {
    "qrels": read_qrels,
    "run": read_run,
    "tsv": lambda p: read_id_text_tsv(p, "document"),
    "jsonl": lambda p: read_id_text_jsonl(p, "document", ("docno",)),
    "passages_on_disk_tsv": PassagesOnDisk,
    "results": read_results,
}


@pytest.mark.parametrize("name", sorted(LOADERS))
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=ANY_BYTES)
def test_loader_survives_random_bytes(tmp_path, name, data):
    suffix = ".jsonl" if name in ("jsonl", "results") else ".txt"
    path = tmp_path / f"input{suffix}"
    path.write_bytes(data)
    try:
        result = LOADERS[name](path)
        if isinstance(result, PassagesOnDisk):
            for docno in result:
                assert result[docno].strip()
    except InputError as exc:
        assert str(exc).startswith(str(path))
        assert "\n" not in str(exc)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(queries=ANY_BYTES, qrels=ANY_BYTES, passages=ANY_BYTES)
def test_collection_directory_survives_random_bytes(tmp_path, queries, qrels, passages):
    root = Path(tmp_path) / "coll"
    root.mkdir(exist_ok=True)
    (root / "queries.tsv").write_bytes(queries)
    (root / "qrels.txt").write_bytes(qrels)
    (root / "passages.tsv").write_bytes(passages)
    try:
        collection = load_directory(root)
        assert set(collection.qrels) <= set(collection.queries)
    except InputError as exc:
        assert str(root) in str(exc)
        assert "\n" not in str(exc)
