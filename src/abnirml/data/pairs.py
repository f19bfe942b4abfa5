"""Text pairs: the raw material of dataset-transfer probes, and a reader for user pair files.

A :class:`TextPair` is one row of a non-IR dataset recast as ⟨query?, d1, d2⟩: d1 carries the
characteristic under test (fluent, formal, simpler, neutral, succinct, factual), d2 lacks it.
The query is given when the dataset has one (a title, a question) and built later otherwise
(see :mod:`abnirml.probes.transfer.queries`). Sources yield pairs lazily so that a large
dataset never has to sit in memory as Python objects more than once.

User pair files (``--pairs FILE``) are either

* TSV with a header naming the columns ``doc1`` and ``doc2`` (required) and optionally
  ``query`` and ``id``; other columns are ignored; or
* JSON lines (``.jsonl`` / ``.json``): one object per line with the same keys.

Missing ids become ``line<N>``. A malformed line raises :class:`~abnirml.errors.InputError`
with the file and line number.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abnirml.data.trec import iter_json_objects, json_id, read_lines
from abnirml.errors import InputError
from abnirml.text.lines import reject_nul


@dataclass(frozen=True, slots=True)
class TextPair:
    """One transfer pair. ``key`` is stable within its source: it seeds the query choice and
    the deterministic sub-sample, so it must not depend on file order alone when the source
    has real ids. ``group`` names a subset (a GYAFC domain, CNN vs Daily Mail, an entity
    type) that subset probes filter on."""

    key: str
    doc1: str
    doc2: str
    query: str | None = None
    group: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)


class DataNotFound(Exception):
    """A source's files are absent: the probe is skipped (reason ``no-data``), not failed."""

    def __init__(self, where: str):
        super().__init__(where)
        self.where = where


def read_aligned(paths: Sequence[Path]) -> Iterator[tuple[int, list[str]]]:
    """Lines of several line-aligned files, side by side: ``(line_number, [text, …])``.

    Parallel corpora (JFLEG, TurkCorpus, ASSET, GYAFC) keep one sentence per line across
    files; a differing line count means the files do not belong together, which is reported
    rather than silently truncated. Blank lines are kept (they are positions, not noise).
    """
    handles = []
    try:
        for path in paths:
            if not path.is_file():
                raise InputError("file not found", path=path)
            handles.append(path.open("rb"))
        number = 0
        while True:
            number += 1
            raw = [h.readline() for h in handles]
            ended = [not r for r in raw]
            if all(ended):
                return
            if any(ended):
                short = paths[ended.index(True)]
                longer = paths[ended.index(False)]
                other = longer.name if longer.name != short.name else str(longer)
                raise InputError(f"ends after {number - 1} line(s) but {other} goes on "
                                 "(aligned files must have equal line counts)", path=short,
                                 line=number)
            texts = []
            for path, line in zip(paths, raw, strict=True):
                try:
                    text = line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(f"invalid UTF-8 byte at column {exc.start + 1}",
                                     path=path, line=number) from None
                if number == 1:
                    text = text.removeprefix("\ufeff")
                reject_nul(text, path, number)
                texts.append(text.rstrip("\r\n").strip())
            yield number, texts
    finally:
        for h in handles:
            h.close()


def read_pairs_file(path: str | Path) -> Iterator[TextPair]:
    """Pairs from a user TSV (with header) or JSONL file; see the module docstring."""
    path = check_pairs_path(path)
    if path.suffix.lower() in (".jsonl", ".json"):
        return _unique_and_some(_read_pairs_jsonl(path), path)
    return _unique_and_some(_read_pairs_tsv(path), path)


def check_pairs_path(path: str | Path) -> Path:
    """``path`` if it names a file; one InputError for a folder or nothing there."""
    path = Path(path)
    if path.is_dir():
        raise InputError("expected a pairs file, found a directory", path=path)
    if not path.is_file():
        raise InputError("pairs file not found", path=path)
    return path


def _unique_and_some(pairs: Iterator[tuple[int, TextPair]], path: Path) -> Iterator[TextPair]:
    """The pairs, refusing an id given twice (a pair's id seeds its query choice and names it
    in examples, so two pairs under one id are ambiguous) and a file that holds no pair at
    all (a header alone would otherwise give an empty probe and exit 0)."""
    first_line: dict[str, int] = {}
    for number, pair in pairs:
        if pair.key in first_line:
            raise InputError(f"duplicate pair id {pair.key!r} (first on line "
                             f"{first_line[pair.key]})", path=path, line=number)
        first_line[pair.key] = number
        yield pair
    if not first_line:
        raise InputError("no pairs (the file holds a header or blank lines only)", path=path)


def _read_pairs_tsv(path: Path) -> Iterator[tuple[int, TextPair]]:
    lines = read_lines(path)
    try:
        _, header_line = next(lines)
    except StopIteration:
        raise InputError("empty pairs file (expected a header with doc1 and doc2)",
                         path=path) from None
    header = [h.strip().lower() for h in header_line.split("\t")]
    missing = [c for c in ("doc1", "doc2") if c not in header]
    if missing:
        raise InputError(f"header lacks column {', '.join(missing)} (TSV pairs need a header "
                         "naming doc1, doc2 and optionally query, id)", path=path, line=1)
    col = {name: header.index(name) for name in ("doc1", "doc2", "query", "id") if name in header}
    for number, line in lines:
        cells = line.split("\t")
        if len(cells) != len(header):
            raise InputError(f"expected {len(header)} tab-separated fields, found {len(cells)}",
                             path=path, line=number)
        yield number, _make_pair(path, number, {k: cells[i] for k, i in col.items()})


def _read_pairs_jsonl(path: Path) -> Iterator[tuple[int, TextPair]]:
    for number, record in iter_json_objects(path, "a JSON object with doc1 and doc2"):
        yield number, _make_pair(path, number, record)


def _make_pair(path: Path, number: int, record: Mapping[str, Any]) -> TextPair:
    values: dict[str, str | None] = {}
    for key in ("doc1", "doc2", "query", "id"):
        value = record.get(key)
        if value is None:
            values[key] = None
        elif key == "id":
            values[key] = json_id(value, path, number, "field 'id'")
        elif not isinstance(value, str):   # true, 3, [..] are not texts
            raise InputError(f"field {key!r} must be a string", path=path, line=number)
        else:
            values[key] = value.strip()
    for key in ("doc1", "doc2"):
        if not values[key]:
            raise InputError(f"empty or missing {key}", path=path, line=number)
    return TextPair(key=values["id"] or f"line{number}", doc1=str(values["doc1"]),
                    doc2=str(values["doc2"]), query=values["query"] or None)
