"""Each query's candidate set: a run's top k (default ``bm25``) or a BM25 top k computed here.

Used for δ calibration, the axiom datasets and effectiveness. Candidates whose text the
collection lacks are dropped and counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from abnirml.counts import counted
from abnirml.errors import ConfigError, did_you_mean

if TYPE_CHECKING:
    from abnirml.data.collection import Collection
    from abnirml.data.stats import CollectionStats

DEFAULT_DEPTH = 100


@dataclass
class Candidates:
    source: str
    ranking: dict[str, list[str]]            # qid → docnos, best first
    skipped: dict[str, int] = field(default_factory=dict)
    #: qid → docno → the first-stage run's score (what LB1 compares), for the kept docnos.
    scores: dict[str, dict[str, float]] = field(default_factory=dict)


def resolve_candidates(collection: Collection, spec: str | None, depth: int = DEFAULT_DEPTH,
                       stats_provider: Callable[[], CollectionStats] | None = None
                       ) -> Candidates:
    """``spec``: a run name in the collection's ``runs/``, a run file path, or None (default).

    ``stats_provider`` returns collection statistics, needed only when no run exists.
    """
    from abnirml.data.collection import load_run_file

    if depth < 1:
        raise ConfigError(f"candidate depth must be ≥ 1, got {depth}")
    if spec is None:
        spec = "bm25" if "bm25" in collection.runs else "computed:bm25"
    if spec == "computed:bm25":
        from abnirml.data.stats import CollectionStats
        from abnirml.rankers.families.lexical import bm25_top_k
        from abnirml.text.analyzer import Analyzer

        if stats_provider is not None:
            stats = stats_provider()
        else:
            stats = CollectionStats.build(collection.doc_texts(), Analyzer())
        run = bm25_top_k(stats, collection.docs, collection.queries, depth)
        source = f"BM25 top {depth} computed over the collection"
    elif spec in collection.runs:
        run = collection.runs[spec]()
        source = f"run {spec} (top {depth})"
    elif Path(spec).is_file():
        run = load_run_file(Path(spec), collection.queries)
        from abnirml.text.lines import shown_path

        source = f"run file {shown_path(spec)} (top {depth})"
    else:
        known = sorted(collection.runs)
        raise ConfigError(f"unknown candidate run {spec!r}{did_you_mean(spec, known)}; "
                          f"known: {', '.join(known) or 'none'} (or give a run file path)")
    ranking: dict[str, list[str]] = {}
    scores: dict[str, dict[str, float]] = {}
    missing = 0
    for qid in sorted(run):
        if qid not in collection.queries:
            continue
        top = [(d, float(s)) for d, s in run[qid][:depth]]
        kept = [d for d, _ in top if d in collection.docs]
        missing += len(top) - len(kept)
        ranking[qid] = kept
        scores[qid] = {d: s for d, s in top if d in collection.docs}
    if run and not any(ranking.values()):
        from abnirml.errors import InputError

        if not missing:      # nothing to look up: the run (or BM25) ranked no document
            raise InputError(f"{source} ranks no document for any of the "
                             f"{counted(sum(q in collection.queries for q in run), 'query')} "
                             "(a query "
                             "of stopwords only matches nothing under BM25); give queries "
                             "with content words, or other --candidates",
                             path=Path(spec) if Path(spec).is_file() else None)
        run_path = Path(spec) if Path(spec).is_file() else None
        raise InputError(f"none of the candidate documents of {source} has text in the "
                         f"collection ({missing:,} looked up); the run and the passages file "
                         "name documents differently", path=run_path)
    return Candidates(source=source, ranking=ranking,
                      skipped={"candidates_without_text": missing}, scores=scores)
