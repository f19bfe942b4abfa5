"""``--queries N|FILE``: run on a subset of a collection's queries.

A first look at a large collection, or a run comparable with someone else's, needs a subset
of the judged queries; building one by hand (awk over queries.tsv and qrels.txt) is error
prone and leaves no trace. ``N`` (digits) draws N of the judged queries — those with at
least one judged document whose text is known — seeded by the run's seed, so the same seed
draws the same queries; ``FILE`` names them, one query id a line (blank lines and lines
starting with ``#`` are skipped). An id the collection does not have is one error naming
the file and line. Documents stay: collection statistics (IDF) do not change with the
subset, so a subset's scores are the full collection's scores of those queries.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from abnirml.data.collection import Collection, count_missing_judged
from abnirml.data.trec import Run
from abnirml.errors import ConfigError, InputError


@dataclass(frozen=True)
class QuerySubset:
    """What ``--queries`` chose: as given, the seed of a drawn sample, the query ids."""

    given: str
    seed: int | None
    qids: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        """run.json's ``collection.query_subset``."""
        return {"given": self.given, "seed": self.seed, "qids": list(self.qids)}


def judged_queries(collection: Collection) -> list[str]:
    """Query ids with at least one judged document whose text is known, sorted."""
    return sorted({qid for qid, _, _ in collection.judged()})


def choose(collection: Collection, given: str, seed: int) -> QuerySubset:
    """The subset ``given`` names: a count (digits) or a file of query ids."""
    text = given.strip()
    if text.isascii() and text.isdigit():
        digits = text.lstrip("0") or "0"
        # a count past Python's digit limit (4,300) is past any collection's queries
        count = int(digits) if len(digits) <= 18 else 10**18
        if count < 1:
            raise ConfigError(f"--queries {given}: need at least 1 query")
        judged = judged_queries(collection)
        if not judged:
            raise ConfigError(f"--queries {given}: collection {collection.name} has no judged "
                              "query with document text to draw from")
        if count >= len(judged):
            return QuerySubset(given, seed, tuple(judged))
        drawn = random.Random(f"abnirml-queries:{seed}").sample(judged, count)
        return QuerySubset(given, seed, tuple(sorted(drawn)))
    return QuerySubset(given, None, tuple(_read_ids(Path(given), collection)))


def _read_ids(path: Path, collection: Collection) -> list[str]:
    from abnirml.data.trec import read_lines

    if not path.is_file():       # from stat alone: a FIFO is never opened
        from abnirml.files.ownership import kind_of

        kind = kind_of(path)
        found = f", found a {kind}" if kind is not None else " (no such file)"
        raise InputError("--queries: expected a number of queries or a regular file of query "
                         f"ids, one a line{found}", path=path)
    out: list[str] = []
    for line_number, line in read_lines(path):
        qid = line.strip()
        if not qid or qid.startswith("#"):
            continue
        if qid not in collection.queries:
            raise InputError(f"query id {qid!r} is not a query of collection "
                             f"{collection.name}", path=path, line=line_number)
        if qid not in out:
            out.append(qid)
    if not out:
        raise InputError("names no query id (one a line)", path=path)
    return out


def restrict(collection: Collection, subset: QuerySubset) -> Collection:
    """The collection with only the subset's queries, their judgments and run entries."""
    keep = set(subset.qids)
    queries = {q: t for q, t in collection.queries.items() if q in keep}
    qrels = {q: j for q, j in collection.qrels.items() if q in keep}
    runs = {name: _filtered(load, keep) for name, load in collection.runs.items()}
    skipped = dict(collection.skipped)
    if "judged_without_text" in skipped:
        skipped["judged_without_text"] = count_missing_judged(queries, collection.docs, qrels)
    return replace(collection, queries=queries, qrels=qrels, runs=runs, skipped=skipped)


def _filtered(load: Callable[[], Run], keep: set[str]) -> Callable[[], Run]:
    def loader() -> Run:
        return {q: ranking for q, ranking in load().items() if q in keep}

    return loader
