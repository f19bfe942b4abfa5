"""Collections from ir_datasets (``irds:<id>``), e.g. ``irds:msmarco-passage/trec-dl-2019/judged``.

Only the texts the analysis needs are fetched: judged documents and, when the dataset ships
scored documents (a first-stage run), its candidates. The dataset's own first-stage run is
exposed as the run ``bm25`` so it becomes the default candidate set.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from abnirml.data.trec import Qrels, Run
from abnirml.errors import ConfigError, InputError, install_hint

CANDIDATE_DEPTH = 100


@dataclass(frozen=True)
class IrdsData:
    """What ir_datasets provides for one id; :mod:`.collection` builds the Collection (so this
    module does not import it back)."""

    queries: dict[str, str]
    docs: dict[str, str]
    qrels: Qrels
    run: Run


def read_irds(dataset_id: str) -> IrdsData:
    try:
        import ir_datasets
    except ImportError:
        raise ConfigError(f"irds: collections need ir_datasets ({install_hint('irds')})") \
            from None
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        raise ConfigError(f"unknown ir_datasets id {dataset_id!r}") from None
    for needed in ("queries", "qrels", "docs"):
        if not getattr(dataset, f"has_{needed}")():
            raise ConfigError(f"ir_datasets id {dataset_id!r} has no {needed}")
    with _held_notices() as held:
        data = _read(dataset, dataset_id)
    _replay(held)
    return data


def _read(dataset: Any, dataset_id: str) -> IrdsData:
    try:
        queries = {q.query_id: _query_text(q) for q in dataset.queries_iter()}
        qrels: Qrels = {}
        for row in dataset.qrels_iter():
            qrels.setdefault(row.query_id, {})[row.doc_id] = int(row.relevance)
        run: Run = {}
        if dataset.has_scoreddocs():
            for row in dataset.scoreddocs_iter():
                run.setdefault(row.query_id, []).append((row.doc_id, float(row.score)))
            for qid, ranking in run.items():
                ranking.sort(key=lambda item: (-item[1], item[0]))
                run[qid] = ranking[:CANDIDATE_DEPTH]
        wanted = {d for judged in qrels.values() for d in judged}
        wanted |= {d for ranking in run.values() for d, _ in ranking}
        store = dataset.docs_store()
        docs = {doc_id: _doc_text(doc) for doc_id, doc in store.get_many(wanted).items()}
    except Exception as exc:
        # ir_datasets downloads lazily, while iterating; offline that surfaces as a requests
        # ConnectionError or a RuntimeError('All download sources failed', …) holding them.
        host = _unreachable_host(exc)
        if host is not None:
            raise InputError(f"ir_datasets could not download {dataset_id!r} ({host} cannot be "
                             "reached): it needs the network, or a local ir_datasets copy "
                             "(~/.ir_datasets, or $IR_DATASETS_HOME)") from None
        raise InputError(f"ir_datasets could not provide {dataset_id!r}: "
                         f"{type(exc).__name__}: {_first_line(exc)}") from None
    docs = {k: v for k, v in docs.items() if v.strip()}
    return IrdsData(queries, docs, qrels, run)


def _query_text(query: Any) -> str:
    text = getattr(query, "text", None)
    return text if isinstance(text, str) else query.default_text()


def _doc_text(doc: Any) -> str:
    text = getattr(doc, "text", None)
    return text if isinstance(text, str) else doc.default_text()


_HELD = ("download error", "download failed", "please confirm")
"""ir_datasets' log lines about downloads (and the usage-agreement notice that precedes
them): held back while reading, shown after a successful read, dropped when the read fails
on the network — the one-line error then says what failed. Progress lines pass through."""


@contextmanager
def _held_notices() -> Iterator[list[tuple[Any, Any]]]:
    held: list[tuple[Any, Any]] = []
    try:
        from ir_datasets import log as irds_log

        handler_class = irds_log.TqdmHandler
    except (ImportError, AttributeError):     # another ir_datasets layout: nothing to hold
        yield held
        return
    original = handler_class.emit

    def emit(handler: Any, record: Any) -> None:
        if str(record.getMessage()).lower().startswith(_HELD):
            held.append((handler, record))
        else:
            original(handler, record)

    handler_class.emit = emit
    try:
        yield held
    finally:
        handler_class.emit = original


def _replay(held: list[tuple[Any, Any]]) -> None:
    for handler, record in held:
        handler.emit(record)


def _unreachable_host(exc: BaseException) -> str | None:
    """The host a network failure inside ``exc`` names ('the network' if none is named), or
    None when ``exc`` is not a network failure."""
    seen: set[int] = set()
    stack: list[Any] = [exc]
    found = False
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, (list, tuple)):
            stack.extend(reversed(item))        # depth first, in order: the first source
            continue
        if not isinstance(item, BaseException):
            continue
        if isinstance(item, (ConnectionError, TimeoutError)) or type(item).__name__ in {
                "ConnectionError", "MaxRetryError", "NameResolutionError", "NewConnectionError",
                "ConnectTimeout", "ReadTimeout", "gaierror"}:
            found = True
            match = re.search(r"host='([^']+)'", str(item))
            if match:
                return match.group(1)
        stack.extend(e for e in (item.__context__, item.__cause__) if e is not None)
        stack.extend(reversed(item.args))
    return "the network" if found else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else "no message"
