"""Test collections: queries, document texts, graded judgments and candidate runs.

Three sources share one shape (:class:`Collection`): the demo collection shipped with the
package, a directory of local TREC-style files, and ``irds:<id>`` through ir_datasets.
Judged documents (and run entries) whose text is unavailable are skipped and counted in
``Collection.skipped`` — never silently dropped, never a crash.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from abnirml.data.trec import Qrels, Run, read_id_text_jsonl, read_id_text_tsv, read_lines, read_run
from abnirml.errors import InputError
from abnirml.text.lines import shown_path

DEMO = "demo"
#: Passage files larger than this are read on demand from disk instead of into memory
#: (override with the environment variable ABNIRML_STREAM_DOCS_BYTES).
STREAM_THRESHOLD_BYTES = 256 * 1024 * 1024


@dataclass
class Collection:
    """An ad-hoc test collection.

    ``docs`` maps docno → text for every document whose text is known. ``runs`` maps a run
    name to a loader so large run files are only read when used.
    """

    name: str
    queries: dict[str, str]
    docs: Mapping[str, str]
    qrels: Qrels
    runs: dict[str, Callable[[], Run]] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    source: str = ""

    def judged(self) -> Iterator[tuple[str, str, int]]:
        """``(qid, docno, grade)`` for each judgment whose query and document text exist."""
        for qid in sorted(self.qrels):
            if qid not in self.queries:
                continue
            for docno, grade in sorted(self.qrels[qid].items()):
                if docno in self.docs:
                    yield qid, docno, grade

    def grade(self, qid: str, docno: str) -> int | None:
        return self.qrels.get(qid, {}).get(docno)

    def doc_texts(self) -> Iterator[str]:
        return iter(self.docs.values())

    def __len__(self) -> int:
        return len(self.docs)


def grades_outside(collection: Collection, bands: Sequence[tuple[str, int, int]]
                   ) -> dict[int, int]:
    """Judged grades no band covers → how many judgments carry each (breakdowns skip them)."""
    outside: dict[int, int] = {}
    for _, _, grade in collection.judged():
        if not any(lo <= grade <= hi for _, lo, hi in bands):
            outside[grade] = outside.get(grade, 0) + 1
    return dict(sorted(outside.items()))


def count_missing_judged(queries: Mapping[str, str], docs: Mapping[str, str],
                         qrels: Qrels) -> int:
    return sum(1 for qid, judged in qrels.items() if qid in queries
               for docno in judged if docno not in docs)


def collection_spec(value: str | os.PathLike[str]) -> str:
    """A collection given as a ``Path`` is a directory, even one named ``demo`` or
    ``irds:x``: it is spelt ``./demo`` so the keywords keep their meaning for strings."""
    if not isinstance(value, os.PathLike):
        return value
    text = os.fspath(value)
    return os.path.join(".", text) if text == DEMO or text.startswith("irds:") else text


def load_collection(spec: str | os.PathLike[str]) -> Collection:
    """Resolve a collection spec: ``demo``, a directory path, or ``irds:<dataset id>``."""
    spec = collection_spec(spec)
    if spec == DEMO:
        root = resources.files("abnirml.data").joinpath("demo")
        with resources.as_file(root) as path:
            collection = load_directory(Path(path))
        collection.name = DEMO
        return collection
    if spec.startswith("irds:"):
        return _load_irds(spec.removeprefix("irds:"))
    path = Path(spec)
    if not path.exists():
        raise InputError("collection not found (expected 'demo', 'irds:<id>' or a directory)",
                         path=path)
    if not path.is_dir():
        raise InputError("a collection must be a directory holding queries.tsv, qrels.txt "
                         "and passages.tsv or passages.jsonl", path=path)
    return load_directory(path)


def load_directory(root: Path) -> Collection:
    """Load ``queries.tsv``, ``qrels.txt``, ``passages.tsv`` or ``.jsonl`` and ``runs/*.run``."""
    queries_path = _require(root, ["queries.tsv", "topics.tsv"])
    qrels_path = _require(root, ["qrels.txt", "qrels"])
    passages_path = _require(root, ["passages.tsv", "passages.jsonl", "docs.tsv", "docs.jsonl"])
    queries = read_id_text_tsv(queries_path, "query")
    docs: Mapping[str, str]
    threshold = stream_threshold()
    if passages_path.stat().st_size > threshold:
        from abnirml.data.passages_on_disk import PassagesOnDisk

        docs = PassagesOnDisk(passages_path)
    elif passages_path.suffix == ".jsonl":
        docs = read_id_text_jsonl(passages_path, "document", ("docno", "doc_id", "id", "pid"))
    else:
        docs = read_id_text_tsv(passages_path, "document")
    qrels = read_qrels_checked(qrels_path, queries)
    runs: dict[str, Callable[[], Run]] = {}
    run_dir = root / "runs"
    if run_dir.is_dir():
        for run_path in sorted(run_dir.glob("*.run")):
            runs[run_path.stem] = _lazy_run(run_path, queries)
    collection = Collection(name=shown_path(root.name), queries=queries, docs=docs,
                            qrels=qrels, runs=runs, source=shown_path(root))
    collection.skipped["judged_without_text"] = count_missing_judged(queries, docs, qrels)
    _reject_unmatched_judgments(qrels_path, passages_path, qrels, docs)
    return collection


def _reject_unmatched_judgments(qrels_path: Path, passages_path: Path, qrels: Qrels,
                                docs: Mapping[str, str]) -> None:
    """InputError when not one judged document has text: the document ids of the two files
    do not match (another id scheme, a header taken for a passage), and every probe built
    from judgments would be empty — counting them all as skipped would hide that."""
    judged = {docno for per_query in qrels.values() for docno in per_query}
    if any(docno in docs for docno in judged):
        return
    example = min(judged)
    raise InputError(f"none of the {len(judged):,} judged document ids (e.g. {example!r}) "
                     f"is in {passages_path.name}; the two files name documents differently",
                     path=qrels_path)


def stream_threshold() -> int:
    """Bytes above which passages are read from disk: ``$ABNIRML_STREAM_DOCS_BYTES`` if set.

    A value that is not a whole number is refused with one line rather than a traceback.
    """
    from abnirml.errors import ConfigError
    from abnirml.strict_numbers import strict_int

    raw = os.environ.get("ABNIRML_STREAM_DOCS_BYTES", "").strip()
    if not raw:
        return STREAM_THRESHOLD_BYTES
    try:
        return strict_int(raw)
    except ValueError:
        raise ConfigError(f"ABNIRML_STREAM_DOCS_BYTES={raw!r} is not a whole number of "
                          "bytes") from None


def read_qrels_checked(path: Path, queries: Mapping[str, str]) -> Qrels:
    """Read qrels and reject judgments for queries the topics file does not define."""
    from abnirml.data.trec import read_qrels

    qrels = read_qrels(path)
    _reject_unknown_queries(path, qrels, queries)
    return qrels


def load_run_file(path: Path, queries: Mapping[str, str]) -> Run:
    run = read_run(path)
    _reject_unknown_queries(path, run, queries)
    return run


def _reject_unknown_queries(path: Path, by_query: Mapping[str, object],
                            queries: Mapping[str, str]) -> None:
    """InputError at the first line of ``path`` naming a query the topics file lacks; when
    it knows none of them, the message says the file may belong to another collection."""
    unknown = set(by_query) - set(queries)
    if not unknown:
        return
    if len(unknown) == len(by_query):
        detail = (f"none of its {len(unknown)} query ids is in the queries file: a file of "
                  "another collection?")
    else:
        detail = f"not in the queries file; {len(unknown)} unknown in all"
    for number, line in read_lines(path):
        qid = line.split()[0] if line.strip() else ""
        if qid in unknown:
            raise InputError(f"unknown query id {qid!r} ({detail})", path=path, line=number)


def _lazy_run(path: Path, queries: Mapping[str, str]) -> Callable[[], Run]:
    cache: dict[str, Run] = {}

    def load() -> Run:
        if "run" not in cache:
            cache["run"] = load_run_file(path, queries)
        return cache["run"]

    return load


def _require(root: Path, names: list[str]) -> Path:
    for name in names:
        if (root / name).is_file():
            return root / name
    for name in names:   # the file is there, but not as a readable file: say what it is
        candidate = root / name
        if candidate.is_symlink() and not candidate.exists():
            raise InputError(f"is a symbolic link to a missing file ({os.readlink(candidate)})",
                             path=candidate)
        if candidate.is_dir():
            raise InputError("expected a file, found a directory", path=candidate)
    raise InputError(f"missing required file: expected one of {', '.join(names)}", path=root)


def _load_irds(dataset_id: str) -> Collection:
    """An ``irds:<id>`` collection: judged and first-stage documents only."""
    from abnirml.data.irds import read_irds

    data = read_irds(dataset_id)
    queries, docs, qrels, run = data.queries, data.docs, data.qrels, data.run
    runs: dict[str, Callable[[], Run]] = {"bm25": (lambda: run)} if run else {}
    collection = Collection(name=dataset_id.replace("/", "_"), queries=queries, docs=docs,
                            qrels={q: j for q, j in qrels.items() if q in queries}, runs=runs,
                            source=f"irds:{dataset_id}")
    collection.skipped["judged_without_text"] = count_missing_judged(queries, docs, qrels)
    collection.skipped["qrels_unknown_query"] = sum(1 for q in qrels if q not in queries)
    return collection
