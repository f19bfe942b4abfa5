"""The on-disk passages index: lookups equal to reading the file into a dict, whatever the
offset width and however few recent texts are kept."""

import random

import pytest

from abnirml.data import passages_on_disk
from abnirml.data.passages_on_disk import PassagesOnDisk, offset_typecode
from abnirml.data.trec import read_id_text_tsv
from abnirml.errors import InputError


def _passages(tmp_path, n=200):
    rng = random.Random(3)
    path = tmp_path / "passages.tsv"
    path.write_text("".join(f"p{i}\t{' '.join(rng.choice('ab cd ef gh') for _ in range(i % 9 + 1))}"
                            f" é{i}\n" for i in range(n)), encoding="utf-8")
    return path


def test_offsets_take_four_bytes_below_four_gib_and_eight_from_there():
    assert offset_typecode(0) == "I"
    assert offset_typecode(2**32 - 1) == "I"
    assert offset_typecode(2**32) == "q"


@pytest.mark.parametrize("typecode", ["I", "q"])
def test_lookups_match_the_file_whatever_the_offset_width_and_recent_size(
        tmp_path, monkeypatch, typecode):
    path = _passages(tmp_path)
    expected = read_id_text_tsv(path, "document")
    monkeypatch.setattr(passages_on_disk, "offset_typecode", lambda size: typecode)
    monkeypatch.setattr(passages_on_disk, "RECENT", 3)
    docs = PassagesOnDisk(path)
    assert docs._offsets.itemsize == (4 if typecode == "I" else 8)
    order = [f"p{i}" for i in random.Random(1).choices(range(200), k=600)]
    for docno in order:        # repeats hit the recent texts, the rest the file
        assert docno in docs
        assert docs[docno] == expected[docno]
    assert len(docs._recent) <= 3
    assert "p200" not in docs and docs.get("p200") is None
    assert list(docs) == list(expected) and len(docs) == 200


def test_a_file_growing_past_the_offset_width_while_indexed_is_one_located_error(
        tmp_path, monkeypatch):
    path = _passages(tmp_path)
    # one-byte offsets stand in for a file that grew past 4 GiB after its size was read
    monkeypatch.setattr(passages_on_disk, "offset_typecode", lambda size: "B")
    with pytest.raises(InputError, match=r"passages.tsv:\d+: the file changed while it was "
                                         r"being read"):
        PassagesOnDisk(path)
