"""Rank origin (Rau & Kamps, figure 1): where a run's documents sat in a reference run.

Both runs' rankings are cut into rank ranges (default 1–10, 11–100, 101–500, 501–1000). For
each range of the run, the documents in it — pooled over all queries — are counted by the
range they held in the reference run, and each row is normalised to sum to one. A document
the reference run ranked deeper than its last range goes to the ``>N`` column, and one the
reference never retrieved goes to ``absent``: neither is merged into a rank range.

With judgments the same matrix is computed per relevance grade (``grade=3`` … ``grade=0``)
and for unjudged documents, which shows e.g. whether a re-ranker lifts relevant documents
from deep in the first-stage ranking.

Queries the reference run lacks altogether are left out and counted (otherwise all their
documents would look "absent" for a reason that has nothing to do with the rankers).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abnirml.data.trec import Qrels, Run
from abnirml.errors import ConfigError

if TYPE_CHECKING:
    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.rankers.base import Ranker

ABSENT = "absent"
ALL = "all"
UNJUDGED = "unjudged"
CSV_FIELDS = ("subset", "run_range", "reference_range", "fraction", "count")


@dataclass(frozen=True)
class RankRange:
    lo: int
    hi: int

    @property
    def label(self) -> str:
        return f"{self.lo}-{self.hi}"

    def __contains__(self, rank: object) -> bool:
        return isinstance(rank, int) and self.lo <= rank <= self.hi


DEFAULT_RANGES: tuple[RankRange, ...] = (RankRange(1, 10), RankRange(11, 100),
                                         RankRange(101, 500), RankRange(501, 1000))


def ranges_for_depth(depth: int) -> tuple[RankRange, ...]:
    """The default ranges a ranking of ``depth`` documents can fill: on depth-100 runs
    101–500 and 501–1000 would always be 0 %, so they are left out."""
    return tuple(r for r in DEFAULT_RANGES if r.lo <= max(depth, 1))


def run_depth(*runs: Run) -> int:
    """The longest ranking of any query in ``runs``."""
    return max((len(ranking) for run in runs for ranking in run.values()), default=0)


def parse_ranges(text: str) -> tuple[RankRange, ...]:
    """``1-10,11-100,101-500`` → ranges; they must start at 1 and be contiguous."""
    ranges: list[RankRange] = []
    for part in text.split(","):
        lo_text, dash, hi_text = part.strip().partition("-")
        try:
            if not dash:
                raise ValueError
            ranges.append(RankRange(int(lo_text), int(hi_text)))
        except ValueError:
            raise ConfigError(f"--ranges: {part.strip()!r} is not LOW-HIGH") from None
    return check_ranges(ranges)


def check_ranges(ranges: Sequence[RankRange]) -> tuple[RankRange, ...]:
    if not ranges:
        raise ConfigError("--ranges: no range given")
    expected = 1
    for r in ranges:
        if r.lo != expected or r.hi < r.lo:
            raise ConfigError(f"--ranges: ranges must start at 1 and be contiguous "
                              f"(expected one starting at {expected}, got {r.label})")
        expected = r.hi + 1
    return tuple(ranges)


@dataclass(frozen=True)
class RankOrigin:
    """Counts[subset][run_range][reference_column]; ``columns`` are ranges, ``>N``, absent."""

    ranges: tuple[RankRange, ...]
    columns: tuple[str, ...]
    counts: dict[str, dict[str, dict[str, int]]]
    queries: int
    skipped: dict[str, int] = field(default_factory=dict)

    def subsets(self) -> list[str]:
        return list(self.counts)

    def rows(self, subset: str) -> list[str]:
        """Run ranges holding at least one document in ``subset``."""
        return [r.label for r in self.ranges if sum(self.counts[subset][r.label].values())]

    def fraction(self, subset: str, run_range: str, column: str) -> float:
        row = self.counts[subset][run_range]
        total = sum(row.values())
        return row[column] / total if total else float("nan")

    def matrix(self, subset: str) -> list[list[float]]:
        return [[self.fraction(subset, row, c) for c in self.columns] for row in self.rows(subset)]

    def csv_rows(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for subset in self.subsets():
            for row in self.rows(subset):
                for column in self.columns:
                    out.append({"subset": subset, "run_range": row, "reference_range": column,
                                "fraction": self.fraction(subset, row, column),
                                "count": self.counts[subset][row][column]})
        return out


def _ranks(ranking: Sequence[tuple[str, float]]) -> dict[str, int]:
    return {docno: i for i, (docno, _) in enumerate(ranking, start=1)}


def _bucket(rank: int, ranges: Sequence[RankRange]) -> str | None:
    for r in ranges:
        if rank in r:
            return r.label
    return None


def rank_origin(reference: Run, run: Run, qrels: Qrels | None = None,
                ranges: Sequence[RankRange] = DEFAULT_RANGES) -> RankOrigin:
    """The rank-origin counts of ``run`` against ``reference`` (rankings best first)."""
    ranges = check_ranges(ranges)
    deeper = f">{ranges[-1].hi}"
    columns = (*[r.label for r in ranges], deeper, ABSENT)
    subsets = [ALL]
    if qrels is not None:
        grades = sorted({g for judged in qrels.values() for g in judged.values()}, reverse=True)
        subsets += [f"grade={g}" for g in grades] + [UNJUDGED]
    counts = {s: {r.label: dict.fromkeys(columns, 0) for r in ranges} for s in subsets}
    queries = 0
    missing = 0
    for qid in sorted(run):
        if qid not in reference:
            missing += 1
            continue
        queries += 1
        reference_ranks = _ranks(reference[qid])
        judged = (qrels or {}).get(qid, {})
        for rank, (docno, _) in enumerate(run[qid], start=1):
            row = _bucket(rank, ranges)
            if row is None:
                break           # ranks only grow: everything further down is past the ranges
            ref_rank = reference_ranks.get(docno)
            column = ABSENT if ref_rank is None else (_bucket(ref_rank, ranges) or deeper)
            counts[ALL][row][column] += 1
            if qrels is not None:
                grade = judged.get(docno)
                subset = UNJUDGED if grade is None else f"grade={grade}"
                counts[subset][row][column] += 1
    skipped = {"queries_missing_from_reference": missing}
    return RankOrigin(ranges, columns, counts, queries, skipped)


def csv_text(origin: RankOrigin) -> str:
    """``rank_origin.csv``'s text."""
    import io

    handle = io.StringIO(newline="")
    writer = csv.DictWriter(handle, fieldnames=list(CSV_FIELDS))
    writer.writeheader()
    for row in origin.csv_rows():
        writer.writerow({**row, "fraction": f"{row['fraction']:.6f}"})
    return handle.getvalue()


def read_csv(path: Path) -> dict[str, dict[str, dict[str, float]]]:
    """``rank_origin.csv`` → fractions[subset][run_range][reference_range] (for reports)."""
    from abnirml.errors import InputError

    out: dict[str, dict[str, dict[str, float]]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [f for f in CSV_FIELDS[:4] if f not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"rank-origin file lacks columns {', '.join(missing)}", path=path)
        for number, row in enumerate(reader, start=2):
            try:
                value = float(row["fraction"])
            except ValueError:
                raise InputError(f"fraction {row['fraction']!r} is not a number",
                                 path=path, line=number) from None
            out.setdefault(row["subset"], {}).setdefault(row["run_range"], {})[
                row["reference_range"]] = value
    return out


def rerank(run: Run, queries: Mapping[str, str], docs: Mapping[str, str], ranker: Ranker,
           depth: int = 1000, scorer: Scorer | None = None) -> Run:
    """Re-score each query's top ``depth`` of ``run`` with ``ranker``; best first.

    Documents without text are dropped (the caller can count them from the input run).
    Scores go through ``scorer`` (an :class:`~abnirml.evaluation.execution.scoring.Scorer`, so
    cached) when given, else straight to the ranker. Ties keep the docno order for determinism.
    """
    from abnirml.evaluation.execution.routing import score_judged
    from abnirml.rankers.base import QueryIdentity

    pairs: list[tuple[str, str]] = []
    identities: list[QueryIdentity] = []
    spans: list[tuple[str, list[str]]] = []
    for qid in sorted(run):
        if qid not in queries:
            continue
        docnos = [d for d, _ in run[qid][:depth] if d in docs]
        spans.append((qid, docnos))
        pairs.extend((queries[qid], docs[d]) for d in docnos)
        identities.extend([QueryIdentity(qid, queries[qid])] * len(docnos))
    # each pair scored once (through the cache when a scorer is given), by its query's model
    scores = score_judged(scorer, ranker, pairs, identities)
    out: Run = {}
    pos = 0
    for qid, docnos in spans:
        scored = [(d, float(s)) for d, s in zip(docnos, scores[pos:pos + len(docnos)],
                                                 strict=True)]
        pos += len(docnos)
        out[qid] = sorted(scored, key=lambda item: (-item[1], item[0]))
    return out


def rerank_in_workspace(reference: Run, spec: str, collection: str, session: Any,
                        depth: int = 1000) -> Run:
    """``reference`` re-ranked by the ranker ``spec`` inside a
    :class:`~abnirml.evaluation.execution.workspace.Workspace` over ``collection`` with ``session``
    (a ``SessionSettings``): the same collection loading, ranker checks and score cache as
    ``run``, ``expect`` and ``masking``."""
    from abnirml.evaluation.execution.workspace import Workspace

    if depth < 1:
        raise ConfigError(f"--depth must be ≥ 1, got {depth}")
    workspace = Workspace(collection, session)
    (ranker,) = workspace.build_rankers([spec])
    with workspace.scorer() as scorer:
        return rerank(reference, workspace.collection.queries, workspace.collection.docs,
                      ranker, depth, scorer)
