"""Decoding a text file's lines with every check a line-based format needs.

The run, qrels, TSV and stopword readers all read lines, and a line they cannot trust must
be named by file and line rather than kept: broken UTF-8 (replaced, it would silently
become part of a word or an id), a NUL (a binary or UTF-16 file), a carriage return inside
a line (a file with classic-Mac line endings would be read as one line). This sits in the
``text`` layer so that readers below ``data`` (the stopword list) share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from abnirml.errors import InputError


def decoded_lines(raw_lines: Iterable[bytes], path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` of every line, blank ones included, numbered from 1, without
    its line ending; a UTF-8 byte-order mark before the first line is dropped."""
    for number, raw in enumerate(raw_lines, start=1):
        yield number, decode_line(raw, path, number)


def decode_line(raw: bytes, path: str | Path, number: int) -> str:
    """One raw line (``number`` counted from 1) decoded and checked, without its ending.

    Every line reader shares this, whether it holds a file in memory or seeks into it on
    disk, so that both accept exactly the same files.
    """
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"invalid UTF-8 byte at column {exc.start + 1}",
                         path=path, line=number) from None
    line = line.rstrip("\r\n")
    if "\r" in line:
        raise InputError("carriage return inside a line: the file seems to use CR-only "
                         "(classic Mac) line endings; convert them to newlines",
                         path=path, line=number)
    if number == 1:
        line = line.removeprefix("\ufeff")
    reject_nul(line, path, number)
    return line


def reject_nul(line: str, path: str | Path, number: int) -> None:
    """InputError for a NUL character: no text format here holds one, and it usually means a
    binary or UTF-16 file, or one damaged in transfer. Kept, it would become part of an id
    (which then matches nothing) or of a text, unnoticed."""
    column = line.find("\x00")
    if column >= 0:
        raise InputError(f"NUL byte at column {column + 1} (a binary or UTF-16 file?)",
                         path=path, line=number)


def shown_path(path: str | Path) -> str:
    """``path`` as text that can be written anywhere: a file name that is not valid UTF-8
    reaches Python with its bad bytes as lone surrogates (``\\udcff``), which no UTF-8 file
    (run.json, report.md, a cache key) can hold; they are shown as ``\\xff`` escapes instead.
    Only for showing and recording a path, never for opening it."""
    text = str(path)
    if text.isascii() or not any("\udc80" <= c <= "\udcff" for c in text):
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
