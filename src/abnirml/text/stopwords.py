"""Configurable English stopword lists.

The papers use Terrier's 733-word list, which no package ships. abnirml defaults to its own
list of English function words (``stopwords_en.txt``); ``spacy`` selects spaCy's
``STOP_WORDS``, ``none`` disables stopping, and any other value is read as a file with one
word per line (``#`` starts a comment). The chosen list's name is recorded with results.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from abnirml.errors import InputError, MissingExtra

DEFAULT = "default"


@lru_cache(maxsize=8)
def load_stopwords(spec: str = DEFAULT) -> frozenset[str]:
    """The stopword set named by ``spec`` (``default``, ``spacy``, ``none`` or a file path)."""
    if spec == DEFAULT:
        text = resources.files("abnirml.text").joinpath("stopwords_en.txt").read_text("utf-8")
        return _parse(text)
    if spec == "none":
        return frozenset()
    if spec == "spacy":
        try:
            from spacy.lang.en.stop_words import STOP_WORDS
        except ImportError:
            raise MissingExtra("--stopwords spacy needs spaCy: pip install 'abnirml[nlp]'",
                               "nlp") from None

        return frozenset(w.lower() for w in STOP_WORDS)
    path = Path(spec)
    if not path.is_file():
        raise InputError("stopword list not found (expected default, spacy, none or a file)",
                         path=path)
    try:
        return _parse(path.read_text("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=path) from None


def _parse(text: str) -> frozenset[str]:
    words = (line.split("#", 1)[0].strip().lower() for line in text.splitlines())
    return frozenset(w for w in words if w)
