"""Configurable English stopword lists.

The papers use Terrier's 733-word list, which no package ships. abnirml defaults to its own
list of English function words (``stopwords_en.txt``); ``spacy`` selects spaCy's
``STOP_WORDS``, ``none`` disables stopping, and any other value is read as a file with one
word per line (``#`` starts a comment). The chosen list's name is recorded with results.
"""

from __future__ import annotations

import hashlib
import io
from functools import lru_cache
from importlib import resources
from pathlib import Path

from abnirml.errors import InputError, MissingExtra, install_hint
from abnirml.text.lines import decoded_lines

DEFAULT = "default"


BUILTIN = (DEFAULT, "none", "spacy")


def load_stopwords(spec: str = DEFAULT) -> frozenset[str]:
    """The stopword set named by ``spec`` (``default``, ``spacy``, ``none`` or a file path).

    Files are read every time (they are small): a list edited between two calls in one
    process must not be served from memory.
    """
    if spec in BUILTIN:
        return _builtin(spec)
    return _read_file(spec)


def content_tag(spec: str, words: frozenset[str]) -> str:
    """``''`` for the built-in lists, else a digest of the words a file holds.

    Cache keys name the file's *contents*: editing a stopword file must change every
    fingerprint built on it, while moving it must not.
    """
    if spec in BUILTIN:
        return ""
    digest = hashlib.blake2b("\n".join(sorted(words)).encode("utf-8", "surrogatepass"),
                             digest_size=8).hexdigest()
    return f"#words={digest}"


@lru_cache(maxsize=4)
def _builtin(spec: str) -> frozenset[str]:
    if spec == DEFAULT:
        packaged = resources.files("abnirml.text").joinpath("stopwords_en.txt")
        return _parse_file(packaged.read_bytes(), Path(packaged.name))
    if spec == "none":
        return frozenset()
    try:
        from spacy.lang.en.stop_words import STOP_WORDS
    except ImportError:
        raise MissingExtra(f"--stopwords spacy needs spaCy: {install_hint('nlp')}",
                           "nlp") from None

    return frozenset(w.lower() for w in STOP_WORDS)


@lru_cache(maxsize=1)
def textattack_stopwords() -> frozenset[str]:
    """NLTK's English stopword list (179 words, ``stopwords_nltk_en.txt``): the default of
    TextAttack's ``StopwordModification``, which Penha et al.'s misspelling generators
    apply whatever the run's own ``--stopwords`` list is."""
    packaged = resources.files("abnirml.text").joinpath("stopwords_nltk_en.txt")
    return _parse_file(packaged.read_bytes(), Path(packaged.name))


def _read_file(spec: str) -> frozenset[str]:
    path = Path(spec)
    if path.is_dir():
        raise InputError("expected a stopword list file, found a directory", path=path)
    if path.exists() and not path.is_file():   # never opened: a FIFO would block
        from abnirml.files.ownership import kind_of

        raise InputError(f"expected a stopword list file, found a {kind_of(path)}", path=path)
    if not path.is_file():
        raise InputError("stopword list not found (expected default, spacy, none or a file)",
                         path=path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the stopword list ({exc.strerror})", path=path) from None
    return _parse_file(data, path)


def _parse_file(data: bytes, path: Path) -> frozenset[str]:
    """The words of a stopword list (a user's or the packaged default), each line checked: a
    word that cannot match a token (two words on one line, a NUL, a UTF-8 BOM glued to the
    first word) would otherwise be kept and silently never stop anything, and an empty list
    would silently stop nothing."""
    words: set[str] = set()
    for number, line in decoded_lines(io.BytesIO(data), path):
        fields = line.split("#", 1)[0].split()
        if len(fields) > 1:
            raise InputError(f"expected one word per line, found {len(fields)} "
                             f"({' '.join(fields[:3])!r})", path=path, line=number)
        if fields:
            words.add(fields[0].lower())
    if not words:
        raise InputError("the stopword list holds no words (use --stopwords none to stop "
                         "nothing)", path=path)
    return frozenset(words)

