"""Document texts read from disk on demand.

A passages file is scanned once — validating every line as it goes — and only a compact
index is kept: a sorted array of 64-bit docno hashes with the byte offset of each line.
Looking a document up seeks to its line. A collection of millions of passages therefore
costs 12 bytes per document in memory (16 for files of 4 GiB or more) instead of its whole
text, and 28 while the index is sorted.
"""

from __future__ import annotations

import hashlib
import os
from array import array
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from abnirml.data.trec import json_id, parse_json_line, reject_header
from abnirml.errors import InputError
from abnirml.text.lines import decode_line

#: Texts a :class:`PassagesOnDisk` keeps after looking them up (first in, first out).
RECENT = 1024


def offset_typecode(file_size: int) -> str:
    """The array type of line offsets: 4 bytes for a file under 4 GiB (MS MARCO's 8.8 M
    passages take 3 GB), 8 beyond."""
    return "I" if file_size < 2**32 and array("I").itemsize == 4 else "q"


def _key(docno: str) -> int:
    return int.from_bytes(hashlib.blake2b(docno.encode("utf-8"), digest_size=8).digest(),
                          "little", signed=True)


class PassagesOnDisk(Mapping[str, str]):
    """docno → text for a ``docno<TAB>text`` TSV or a JSON-lines passages file."""

    def __init__(self, path: str | Path, id_keys: tuple[str, ...] = ("docno", "doc_id", "id",
                                                                      "pid"),
                 text_keys: tuple[str, ...] = ("text", "contents", "body")):
        self.path = Path(path)
        self.jsonl = self.path.suffix == ".jsonl"
        self.id_keys, self.text_keys = id_keys, text_keys
        keys = array("q")     # 8 bytes per document, not a Python int object each
        try:
            handle = self.path.open("rb")
        except OSError as exc:
            raise InputError(f"cannot read the file ({exc.strerror})", path=self.path) from None
        with handle:
            typecode = offset_typecode(os.fstat(handle.fileno()).st_size)
            offsets = array(typecode)
            offset = number = 0
            first_row = True
            try:
                for number, raw in enumerate(handle, start=1):
                    parsed = self._parse(raw, number, first_row)
                    if parsed is not None:
                        first_row = False
                        keys.append(_key(parsed[0]))
                        offsets.append(offset)
                    offset += len(raw)
            except OverflowError:   # past 4 GiB: the file grew while it was read
                raise InputError("the file changed while it was being read", path=self.path,
                                 line=number) from None
        # Sorting needs the order and the sorted copies; freeing the file-order keys before
        # the offsets are permuted keeps the peak at 28 bytes a document (was 40).
        key_array = np.frombuffer(keys, dtype=np.int64)
        order = np.argsort(key_array, kind="stable")
        self._keys = key_array[order]
        del key_array, keys
        self._offsets = np.frombuffer(offsets, dtype=np.dtype(typecode))[order]
        del offsets, order
        self._recent: dict[str, str] = {}
        duplicates = np.flatnonzero(self._keys[1:] == self._keys[:-1])
        if duplicates.size:
            self._report_duplicate()

    def _parse(self, raw: bytes, number: int, first_row: bool = False
               ) -> tuple[str, str] | None:
        """One line as (docno, text), None for a blank one; ``first_row``: no row came before
        it, so a column header is refused here (the scan in ``__init__`` checks every line,
        later passes read a file already accepted). The same rules as the in-memory readers
        of :mod:`abnirml.data.trec`, line decoding included."""
        line = decode_line(raw, self.path, number)
        if not line.strip():
            return None
        if self.jsonl:
            record = parse_json_line(line, self.path, number)
            if not isinstance(record, dict):
                raise InputError("expected a JSON object", path=self.path, line=number)
            ident = next((record[k] for k in self.id_keys if k in record), None)
            text = next((record[k] for k in self.text_keys if k in record), None)
            if ident is None or text is None:
                raise InputError(f"expected fields {'/'.join(self.id_keys)} and "
                                 f"{'/'.join(self.text_keys)}", path=self.path, line=number)
            ident = json_id(ident, self.path, number, "document id")
        else:
            ident, sep, text = line.partition("\t")
            ident = ident.strip()
            if not sep:
                raise InputError("expected 'document_id<TAB>text', found no tab",
                                 path=self.path, line=number)
            if first_row:
                reject_header(ident, text, self.path, number, "document")
        if not ident:
            raise InputError("empty document id", path=self.path, line=number)
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"empty document text for id {ident!r}", path=self.path,
                             line=number)
        return ident, text

    def _report_duplicate(self) -> None:
        seen: set[str] = set()
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                parsed = self._parse(raw, number)
                if parsed is None:
                    continue
                if parsed[0] in seen:
                    raise InputError(f"duplicate document id {parsed[0]!r}", path=self.path,
                                     line=number)
                seen.add(parsed[0])

    def _read_at(self, offset: int) -> tuple[str, str]:
        with self.path.open("rb") as handle:
            handle.seek(offset)
            # line "1" at offset 0 so that a UTF-8 BOM is stripped there as in the scan
            parsed = self._parse(handle.readline(), 1 if offset == 0 else 0)
        assert parsed is not None
        return parsed

    def _lookup(self, docno: str) -> str | None:
        """The text of ``docno``, reading only its line (hash collisions checked by id).

        Callers mostly ask ``docno in docs`` and then ``docs[docno]``, and the same candidate
        again for each probe, so the last :data:`RECENT` texts found are kept (~0.5 MiB).
        """
        recent = self._recent
        text = recent.get(docno)
        if text is not None:
            return text
        key = _key(docno)
        lo = int(np.searchsorted(self._keys, key, side="left"))
        hi = int(np.searchsorted(self._keys, key, side="right"))
        for index in range(lo, hi):
            found, text = self._read_at(int(self._offsets[index]))
            if found == docno:
                if len(recent) >= RECENT:   # drop the oldest (pop: safe if a thread did)
                    recent.pop(next(iter(recent), ""), None)
                recent[docno] = text
                return text
        return None

    def __getitem__(self, docno: str) -> str:
        text = self._lookup(docno)
        if text is None:
            raise KeyError(docno)
        return text

    def __contains__(self, docno: object) -> bool:
        return isinstance(docno, str) and self._lookup(docno) is not None

    def __len__(self) -> int:
        return int(self._keys.shape[0])

    def __iter__(self) -> Iterator[str]:
        for docno, _ in self.items_streamed():
            yield docno

    def items_streamed(self) -> Iterator[tuple[str, str]]:
        """(docno, text) in file order, reading the file sequentially."""
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                parsed = self._parse(raw, number)
                if parsed is not None:
                    yield parsed

    def values(self) -> Iterator[str]:  # type: ignore[override]
        for _, text in self.items_streamed():
            yield text
