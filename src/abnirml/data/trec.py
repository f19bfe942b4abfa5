"""Readers and writers for the plain-text formats IR people exchange.

Every reader validates as it goes and raises :class:`~abnirml.errors.InputError` naming the
file, the line and what was expected, so a bad line never becomes a traceback or silently
disappears.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from abnirml.errors import InputError
from abnirml.strict_numbers import strict_float, strict_int
from abnirml.text.lines import decoded_lines

Qrels = dict[str, dict[str, int]]
Run = dict[str, list[tuple[str, float]]]
MAX_GRADE = 1_000_000   # relevance grades are small; anything larger is a typo or garbage


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` without the newline; skips blank lines.

    Decodes strictly as UTF-8 so that broken bytes are reported, not replaced.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", path=path)
    if not path.is_file():     # from stat alone: a FIFO is never opened (it would block)
        from abnirml.files.ownership import kind_of

        raise InputError(f"expected a regular file, found a {kind_of(path)}", path=path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror})", path=path) from None
    with handle:
        for number, line in decoded_lines(handle, path):
            if line.strip():
                yield number, line


def parse_json_line(line: str, path: str | Path, number: int) -> Any:
    """One JSON value, with every way ``json.loads`` can fail turned into an InputError.

    Besides syntax errors that covers integers longer than Python's digit limit
    (``ValueError``), nesting deep enough to exhaust recursion, and lone UTF-16 surrogates
    (``"\\ud800"``) that cannot be written back out as UTF-8 later.
    """
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg})", path=path, line=number) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", path=path, line=number) from None
    except ValueError as exc:
        raise InputError(f"invalid JSON ({str(exc).split(';')[0]})", path=path,
                         line=number) from None
    if "\\u" in line.lower():   # only escaped text can hold a lone surrogate
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InputError("JSON text holds a lone UTF-16 surrogate (\\ud800-\\udfff), "
                             "which is not valid Unicode text", path=path, line=number) from None
    return value


def json_id(value: object, path: str | Path, number: int, what: str) -> str:
    """An identifier from JSON: a string, or an integer written without a fraction.

    ``true``, ``1234.0`` or a list would otherwise be turned into the strings ``'True'``,
    ``'1234.0'``…, which silently match nothing.
    """
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    shown = json.dumps(value)
    shown = shown if len(shown) <= 30 else shown[:27] + "…"
    raise InputError(f"{what} must be a string or an integer, found {shown}", path=path,
                     line=number)


def iter_json_objects(path: str | Path, what: str = "a JSON object"
                      ) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line_number, object)`` for each JSON-lines record; anything else is an InputError."""
    for number, line in read_lines(path):
        record = parse_json_line(line, path, number)
        if not isinstance(record, dict):
            raise InputError(f"expected {what}", path=path, line=number)
        yield number, record


def read_id_text_tsv(path: str | Path, kind: str) -> dict[str, str]:
    """Read ``id<TAB>text`` lines (queries or passages); ids must be unique, texts non-empty."""
    return _unique_texts(_tsv_rows(path, kind), path, kind, "lines")


#: Column names that, as the first row of an ``id<TAB>text`` file, mark it as a header.
HEADER_IDS = frozenset({"id", "qid", "query_id", "queryid", "topic", "topic_id", "docno",
                        "doc_id", "docid", "pid", "passage_id", "did"})
HEADER_TEXTS = frozenset({"text", "query", "passage", "body", "contents", "content", "title",
                          "question", "document", "doc"})


def reject_header(ident: str, text: str, path: str | Path, number: int, kind: str) -> None:
    """InputError for a first row that names columns (``docno<TAB>text``): these files have
    no header, and read as data it would add a query or passage called 'docno' — silently
    changing collection statistics (N, document lengths) and every lexical score."""
    if ident.lower() in HEADER_IDS and text.strip().lower() in HEADER_TEXTS:
        raise InputError(f"the first line looks like a column header ({ident!r}, "
                         f"{text.strip()!r}); '{kind}_id<TAB>text' files have no header, "
                         "remove it", path=path, line=number)


def _tsv_rows(path: str | Path, kind: str) -> Iterator[tuple[int, str, str]]:
    first = True
    for number, line in read_lines(path):
        ident, sep, text = line.partition("\t")
        ident = ident.strip()
        if not sep:
            raise InputError(f"expected '{kind}_id<TAB>text', found no tab", path=path, line=number)
        if first:
            reject_header(ident, text, path, number, kind)
            first = False
        if not ident:
            raise InputError(f"empty {kind} id", path=path, line=number)
        if not text.strip():
            raise InputError(f"empty {kind} text for id {ident!r}", path=path, line=number)
        yield number, ident, text


def read_id_text_jsonl(path: str | Path, kind: str, id_keys: tuple[str, ...],
                       text_keys: tuple[str, ...] = ("text", "contents", "body")) -> dict[str, str]:
    """Read JSON lines holding an id field and a text field (first key found wins)."""
    return _unique_texts(_jsonl_rows(path, kind, id_keys, text_keys), path, kind, "records")


def _jsonl_rows(path: str | Path, kind: str, id_keys: tuple[str, ...],
                text_keys: tuple[str, ...]) -> Iterator[tuple[int, str, str]]:
    for number, record in iter_json_objects(path):
        ident = next((record[k] for k in id_keys if k in record), None)
        text = next((record[k] for k in text_keys if k in record), None)
        if ident is None or text is None:
            raise InputError(f"expected fields {'/'.join(id_keys)} and {'/'.join(text_keys)}",
                             path=path, line=number)
        ident = json_id(ident, path, number, f"{kind} id")
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"empty or non-string {kind} text for id {ident!r}",
                             path=path, line=number)
        yield number, ident, text


def _unique_texts(rows: Iterable[tuple[int, str, str]], path: str | Path, kind: str,
                  unit: str) -> dict[str, str]:
    """id → text from ``(line, id, text)`` rows, refusing a repeated id (which would
    silently replace a text) and a file with no rows at all."""
    out: dict[str, str] = {}
    for number, ident, text in rows:
        if ident in out:
            raise InputError(f"duplicate {kind} id {ident!r}", path=path, line=number)
        out[ident] = text
    if not out:
        raise InputError(f"no {kind} {unit} (the file is empty or blank)", path=path)
    return out


def read_qrels(path: str | Path) -> Qrels:
    """TREC qrels: ``qid iteration docno grade`` (white-space separated, integer grade)."""
    qrels: Qrels = {}
    for number, line in read_lines(path):
        parts = line.split()
        if len(parts) != 4:
            raise InputError(f"expected 4 fields 'qid iter docno grade', found {len(parts)}",
                             path=path, line=number)
        qid, _, docno, grade = parts
        try:
            value = strict_int(grade)
        except ValueError:
            raise InputError(f"grade {grade!r} is not an integer", path=path, line=number) from None
        if abs(value) > MAX_GRADE:
            raise InputError(f"grade {grade} is out of range (|grade| ≤ {MAX_GRADE})", path=path,
                             line=number)
        per_query = qrels.setdefault(qid, {})
        if docno in per_query and per_query[docno] != value:
            raise InputError(f"conflicting grades for ({qid}, {docno})", path=path, line=number)
        per_query[docno] = value
    if not qrels:
        raise InputError("no judgments (the qrels file is empty or blank)", path=path)
    return qrels


def read_run(path: str | Path) -> Run:
    """TREC run: ``qid Q0 docno rank score tag``; returned per query sorted by score desc."""
    run: Run = {}
    seen: set[tuple[str, str]] = set()
    for number, line in read_lines(path):
        parts = line.split()
        if len(parts) != 6:
            raise InputError(f"expected 6 fields 'qid Q0 docno rank score tag', found {len(parts)}",
                             path=path, line=number)
        qid, _, docno, _rank, score, _tag = parts
        try:
            value = strict_float(score, finite=False)
        except ValueError:
            raise InputError(f"score {score!r} is not a number", path=path, line=number) from None
        if value != value:
            raise InputError("score is NaN", path=path, line=number)
        if (qid, docno) in seen:
            raise InputError(f"document {docno!r} listed twice for query {qid!r}",
                             path=path, line=number)
        seen.add((qid, docno))
        run.setdefault(qid, []).append((docno, value))
    if not run:
        raise InputError("the run is empty (no 'qid Q0 docno rank score tag' lines)", path=path)
    for ranking in run.values():
        ranking.sort(key=lambda item: (-item[1], item[0]))
    return run


def write_run(path: str | Path, run: Run, tag: str) -> None:
    """Write a run in TREC format (ranks from 1, ties broken by docno for determinism)."""
    Path(path).write_text(run_text(run, tag), encoding="utf-8")


def run_text(run: Run, tag: str) -> str:
    """A run in TREC format, as :func:`write_run` writes it."""
    lines = []
    for qid in sorted(run):
        ranking = sorted(run[qid], key=lambda item: (-item[1], item[0]))
        for rank, (docno, score) in enumerate(ranking, start=1):
            lines.append(f"{qid} Q0 {docno} {rank} {score!r} {tag}\n")
    return "".join(lines)


def format_pairs(pairs: Iterable[tuple[str, str]]) -> str:
    return ", ".join(f"({a}, {b})" for a, b in pairs)
