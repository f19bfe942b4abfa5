"""A persistent store of what the probes read from spaCy parses, beside the score cache.

A fully cached rerun scores nothing, yet used to parse every judged document and transfer
text again with spaCy (and import it): the largest share of a warm ``make demo``. This store
keeps, per text, the plain values a probe extracted from its parse (JSON, never pickled) in
``parses.sqlite`` next to the score cache, so a rerun reads them back instead.

Keys: a *namespace* — this store's format version, the pipeline's identity (package and
version, spaCy's version: :func:`abnirml.text.nlp.pipeline_identity`), and the probe's own
kind of extraction (which components ran, which stopwords decided "content") — and the
text's hash. A changed model, spaCy, extraction or stopword list therefore never reuses an
old entry; it simply parses again. Concurrent runs are safe (SQLite WAL, a busy wait, rows
written in one transaction, identical values for identical keys). A damaged file is moved
aside to ``parses.sqlite.corrupt`` with one warning and the run parses as if the store were
empty; a row that does not decode is parsed again and replaced. The store never touches a
file that is not a SQLite database, and a folder it cannot write only costs the next run
the parses.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from abnirml.rankers.support.side_store import SideStore

STORE_VERSION = "1"    # bump when what is stored for a namespace changes shape
FILE_NAME = "parses.sqlite"


class ParseCache(SideStore):
    """Extracted parse values by (namespace, text hash); ``path=None`` stores nothing.

    The file is opened on first use, so a run without spaCy probes never creates it.
    """

    def __init__(self, path: str | Path | None):
        super().__init__(path, table="parses", label="parse store",
                         fallback="parsing without a store")

    def get_or_build(self, kind: str, texts: Sequence[str],
                     build: Callable[[list[str]], Sequence[Any]],
                     encode: Callable[[Any], Any], decode: Callable[[Any], Any]) -> dict[str, Any]:
        """``text → value`` for every distinct text, in order: stored values decoded, the
        rest from ``build``
        (called once, with the missing texts in order) and stored encoded. ``kind`` names
        the extraction; None from :func:`namespace` (no spaCy pipeline) bypasses the store."""
        unique = list(dict.fromkeys(texts))
        namespace = self.namespace(kind)
        found = self._lookup(namespace, unique) if namespace is not None else {}
        values: dict[str, Any] = {}
        for text, raw in found.items():
            try:
                values[text] = decode(raw)
            except ValueError:
                continue                     # a damaged row: parsed again and replaced
        missing = [t for t in unique if t not in values]
        if missing:
            built = list(build(missing))
            if len(built) != len(missing):
                raise RuntimeError(f"parse builder returned {len(built)} values for "
                                   f"{len(missing)} texts")
            values.update(zip(missing, built, strict=True))
            # the pipeline build() loaded names the entries (it can differ from the one
            # expected when an installed package failed to load)
            namespace = self.namespace(kind)
            if namespace is not None:
                self._save(namespace, {t: encode(v) for t, v in zip(missing, built,
                                                                     strict=True)})
        return {text: values[text] for text in unique}

    @staticmethod
    def namespace(kind: str) -> str | None:
        from abnirml.text.nlp import pipeline_identity

        identity = pipeline_identity()
        return None if identity is None else f"v{STORE_VERSION}|{identity}|{kind}"

    def _lookup(self, namespace: str, texts: Sequence[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for text, value in self.lookup_raw(namespace, texts).items():
            try:
                found[text] = json.loads(value)
            except (TypeError, ValueError):
                continue
        return found

    def _save(self, namespace: str, encoded: Mapping[str, Any]) -> None:
        rows = {}
        for t, v in encoded.items():
            try:   # strict JSON: a value holding NaN is parsed again, never stored
                rows[t] = json.dumps(v, ensure_ascii=False, separators=(",", ":"),
                                     allow_nan=False)
            except ValueError:
                continue
        self.save_raw(namespace, rows)


def stopwords_key(stopwords: frozenset[str]) -> str:
    """A short digest of a stopword list, for extraction kinds that decide "content" by it
    (another list must never reuse their stored values)."""
    import hashlib

    return hashlib.blake2b("\n".join(sorted(stopwords)).encode(), digest_size=8).hexdigest()


def store_or_memory(cache: ParseCache | None) -> ParseCache:
    """``cache``, or a store that keeps nothing when a probe runs without one."""
    return cache if cache is not None else ParseCache(None)


def default_path(score_cache: Path) -> Path:
    """The store's file beside a score cache file (a ``--cache`` that names no file, such as
    ``.``, is refused by the score cache before any probe opens this store)."""
    return score_cache.parent / FILE_NAME
