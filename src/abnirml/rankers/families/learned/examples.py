"""Training examples from a collection: each judged query's documents and grades."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from abnirml.errors import ConfigError

if TYPE_CHECKING:
    from abnirml.data.collection import Collection


@dataclass(frozen=True)
class JudgedQuery:
    qid: str
    text: str
    docs: tuple[str, ...]        # document texts
    grades: tuple[int, ...]


def judged_queries(collection: Collection) -> dict[str, JudgedQuery]:
    """Queries with at least two judged documents with text (others teach nothing)."""
    by_qid: dict[str, tuple[list[str], list[int]]] = {}
    for qid, docno, grade in collection.judged():
        docs, grades = by_qid.setdefault(qid, ([], []))
        docs.append(collection.docs[docno])
        grades.append(int(grade))
    out = {qid: JudgedQuery(qid, collection.queries[qid], tuple(d), tuple(g))
           for qid, (d, g) in sorted(by_qid.items()) if len(d) >= 2}
    if not out:
        raise ConfigError(f"collection {collection.name!r} has no judged documents with text "
                          "to train on")
    return out


def preference_pairs(query: JudgedQuery) -> list[tuple[int, int]]:
    """(better, worse) document indices for every pair with different grades."""
    g = query.grades
    return [(i, j) for i in range(len(g)) for j in range(len(g)) if g[i] > g[j]]
