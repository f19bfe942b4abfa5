"""Natural Questions with answer-bearing passages, the raw material of the factuality probes.

Format: ``nq/`` holds DPR retriever files (the form in which NQ questions come with
answer strings *and* Wikipedia passages that contain them): ``*.json`` — a JSON array, as
in DPR's ``biencoder-nq-dev.json`` — or ``*.jsonl`` with one such object per line, either
optionally gzipped. Each record needs ``question``, ``answers`` (a list of strings) and
``positive_ctxs`` (a list of ``{"text", "title"?, "passage_id"?}``); other fields, such as
the negative passages, are ignored. Turning records into factual / counterfactual pairs is
the probe's job (:mod:`abnirml.probes.transfer.factuality`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abnirml.data.pairs import DataNotFound
from abnirml.errors import InputError

PATTERNS = ("*.json", "*.json.gz", "*.jsonl", "*.jsonl.gz")


@dataclass(frozen=True, slots=True)
class Passage:
    pid: str
    text: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class NQRecord:
    key: str
    question: str
    answers: tuple[str, ...]
    passages: tuple[Passage, ...]


def load_nq(folder: Path) -> Iterator[NQRecord]:
    files = sorted({p for pattern in PATTERNS for p in folder.glob(pattern)})
    if not files:
        raise DataNotFound(str(folder / "*.json[l][.gz]"))
    for path in files:
        stem = path.name.split(".")[0]
        for index, (line, record) in enumerate(_records(path)):
            yield parse_record(record, f"{stem}:{index}", path, line)


def parse_record(record: Any, key: str, path: Path | None = None,
                 line: int | None = None) -> NQRecord:
    """Validate one DPR-style record; ``line`` is None for JSON arrays (no line numbers)."""
    if not isinstance(record, Mapping):
        raise InputError(f"record {key}: expected a JSON object", path=path, line=line)
    question = record.get("question")
    answers = record.get("answers")
    contexts = record.get("positive_ctxs", [])
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"record {key}: missing or empty 'question'", path=path, line=line)
    if (not isinstance(answers, list) or not answers
            or not all(isinstance(a, str) for a in answers)):
        raise InputError(f"record {key}: 'answers' must be a non-empty list of strings",
                         path=path, line=line)
    if not isinstance(contexts, list):
        raise InputError(f"record {key}: 'positive_ctxs' must be a list", path=path, line=line)
    passages = []
    for number, ctx in enumerate(contexts):
        text = ctx.get("text") if isinstance(ctx, Mapping) else None
        if not isinstance(text, str):
            raise InputError(f"record {key}: positive_ctxs[{number}] has no 'text'",
                             path=path, line=line)
        pid = str(ctx.get("passage_id", ctx.get("psg_id", number)))
        passages.append(Passage(pid=pid, text=" ".join(text.split()),
                                title=str(ctx.get("title") or "")))
    return NQRecord(key=key, question=question.strip(),
                    answers=tuple(a.strip() for a in answers if a.strip()),
                    passages=tuple(passages))


def _records(path: Path) -> Iterator[tuple[int | None, Any]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    jsonl = ".jsonl" in path.name
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            if not jsonl:
                try:
                    data = json.load(handle)
                except json.JSONDecodeError as exc:
                    raise InputError(f"invalid JSON ({exc.msg})", path=path,
                                     line=exc.lineno) from None
                if not isinstance(data, list):
                    raise InputError("expected a JSON array of question records", path=path)
                for record in data:
                    yield None, record
                return
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield number, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"invalid JSON ({exc.msg})", path=path,
                                     line=number) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"invalid UTF-8 byte at offset {exc.start}", path=path) from None
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot read ({exc})", path=path) from None
