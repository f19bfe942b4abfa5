"""Collections from ir_datasets (``irds:<id>``), e.g. ``irds:msmarco-passage/trec-dl-2019/judged``.

Only the texts the analysis needs are fetched: judged documents and, when the dataset ships
scored documents (a first-stage run), its candidates. The dataset's own first-stage run is
exposed as the run ``bm25`` so it becomes the default candidate set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from abnirml.data.trec import Qrels, Run
from abnirml.errors import ConfigError, InputError

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
        raise ConfigError("irds: collections need ir_datasets (pip install 'abnirml[irds]')") \
            from None
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        raise ConfigError(f"unknown ir_datasets id {dataset_id!r}") from None
    for needed in ("queries", "qrels", "docs"):
        if not getattr(dataset, f"has_{needed}")():
            raise ConfigError(f"ir_datasets id {dataset_id!r} has no {needed}")
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
    except (OSError, ConnectionError) as exc:
        raise InputError(f"ir_datasets could not provide {dataset_id!r}: {exc}") from None
    docs = {k: v for k, v in docs.items() if v.strip()}
    return IrdsData(queries, docs, qrels, run)


def _query_text(query: Any) -> str:
    text = getattr(query, "text", None)
    return text if isinstance(text, str) else query.default_text()


def _doc_text(doc: Any) -> str:
    text = getattr(doc, "text", None)
    return text if isinstance(text, str) else doc.default_text()
