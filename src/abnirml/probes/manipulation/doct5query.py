"""Where DocT5Query expansions come from, for the ``tmp:add-doct5query`` probe.

Three sources, in this order (the ``tmp`` family's typed settings, ``--option
tmp.KEY=VALUE`` on the command line):

``tmp.doct5query_file``
    A file of precomputed expansions: JSON lines ``{"docno": …, "expansion": …}`` (a file
    ending in ``.jsonl``; ``doc_id``/``id`` and ``text``/``queries`` are accepted as field
    names) or ``docno<TAB>expansion`` lines (any other name). This is how the papers'
    setting is reproduced offline: expand the collection once with a doc2query model and
    pass the result.
``tmp.doct5query_source``
    An object with ``expand(texts) -> list[str]`` (:class:`ExpansionSource`), given through
    the Python API, or a ranker spec string (e.g. ``doc2query:castorini/doc2query-t5-base-msmarco``)
    built through the ranker registry; the built object must offer ``expand``.
neither
    The probe applies to no document: every sample is skipped as ``not-applicable`` and a
    warning says how to supply expansions. It never fails the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from abnirml.errors import ConfigError

FILE_OPTION = "tmp.doct5query_file"
SOURCE_OPTION = "tmp.doct5query_source"
BATCH = 32


@runtime_checkable
class ExpansionSource(Protocol):
    """Anything that writes expansion text for documents (e.g. a doc2query model)."""

    def expand(self, texts: Sequence[str]) -> list[str]: ...


def read_expansions(path: str | Path) -> dict[str, str]:
    """Read an expansions file: ``docno → expansion text`` (see the module docstring)."""
    from abnirml.data.trec import read_id_text_jsonl, read_id_text_tsv

    path = Path(path)
    if path.suffix.lower() == ".jsonl":
        return read_id_text_jsonl(path, "expansion", ("docno", "doc_id", "id"),
                                  ("expansion", "text", "queries"))
    return read_id_text_tsv(path, "expansion")


def resolve_source(raw: Any, collection: Any = None,
                   env: Any = None) -> ExpansionSource | None:
    """The expansion source ``raw`` (the ``tmp.doct5query_source`` setting) names, or None
    when it names none.

    A ranker spec is built with the run's ranker environment ``env``, or a fresh one over
    ``collection``.
    """
    if raw is None or raw == "":
        return None
    if isinstance(raw, ExpansionSource):
        return raw
    if isinstance(raw, str):
        from abnirml.rankers.registry import RankerEnv, build_ranker

        env = env or RankerEnv(collection=collection)
        built = build_ranker(raw, env)
        if not isinstance(built, ExpansionSource):
            raise ConfigError(f"{SOURCE_OPTION}={raw}: this ranker cannot write expansions "
                              "(it has no expand(texts) method)")
        return built
    raise ConfigError(f"{SOURCE_OPTION} must be an object with expand(texts) or a ranker spec, "
                      f"got {type(raw).__name__}")


def expand_all(source: ExpansionSource, texts: Iterable[str]) -> dict[str, str]:
    """Expansions for every distinct text, asked for in batches."""
    unique = list(dict.fromkeys(texts))
    out: dict[str, str] = {}
    for start in range(0, len(unique), BATCH):
        batch = unique[start:start + BATCH]
        produced = list(source.expand(batch))
        if len(produced) != len(batch) or not all(isinstance(p, str) for p in produced):
            raise ConfigError(f"{type(source).__name__}.expand returned {len(produced)} values "
                              f"for {len(batch)} texts (expected one string per text)")
        out.update(zip(batch, produced, strict=True))
    return out


def expansions_for(file: str | Path | None, source_spec: Any, collection: Any,
                   docnos: Iterable[str], env: Any = None) -> tuple[dict[str, str], str]:
    """``document text → expansion`` for the given documents, and where they came from:
    the expansions ``file`` when given, else those ``source_spec`` (an object or a ranker
    spec) writes.

    The second value is a short description for messages ("" when there is no source).
    """
    docs = collection.docs
    docnos = list(docnos)
    path = file
    if path:
        by_docno = read_expansions(path)
        found = {docs[d]: by_docno[d] for d in docnos if d in by_docno}
        return found, f"file {path}"
    source = resolve_source(source_spec, collection, env)
    if source is not None:
        return expand_all(source, (docs[d] for d in docnos)), type(source).__name__
    return {}, ""
