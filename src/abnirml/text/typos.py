"""Common English misspellings, inverted into correct word → typical misspellings.

The list is codespell's main dictionary (``codespell_lib/data/dictionary.txt``), which grew
out of Wikipedia's list of common misspellings. Its lines read ``typo->fix`` or
``typo->fix1, fix2,`` (several candidate fixes). The typo manipulation needs the opposite
direction, so every (typo, fix) pair is turned around. Only single-term entries are kept
(letters and digits, nothing else) so that a misspelling never introduces punctuation or
white space into a document.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from abnirml.errors import MissingExtra, install_hint

_TERM = re.compile(r"[^\W_]+")


def parse_dictionary(text: str) -> dict[str, tuple[str, ...]]:
    """Invert codespell-format lines into ``{correct word (lowercase): misspellings}``."""
    inverted: dict[str, set[str]] = {}
    for line in text.splitlines():
        typo, arrow, fixes = line.partition("->")
        typo = typo.strip()
        if not arrow or not _TERM.fullmatch(typo):
            continue
        for fix in fixes.split(","):
            fix = fix.strip().lower()
            if fix and _TERM.fullmatch(fix) and fix != typo.lower():
                inverted.setdefault(fix, set()).add(typo.lower())
    return {word: tuple(sorted(typos)) for word, typos in inverted.items()}


@lru_cache(maxsize=1)
def load_misspellings() -> dict[str, tuple[str, ...]]:
    """The inverted codespell dictionary (read once per process)."""
    try:
        data = resources.files("codespell_lib").joinpath("data", "dictionary.txt")
        text = data.read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        raise MissingExtra("the typo probe needs codespell's dictionary: "
                           f"{install_hint('typos')}", "typos") from None
    return cached_parse(text)


#: changes whenever :func:`parse_dictionary`'s output for the same text could change
PARSE_FORMAT = "typos-v1"


def cached_parse(text: str) -> dict[str, tuple[str, ...]]:
    """:func:`parse_dictionary` of ``text``, kept as JSON in ``vocabulary/`` beside the score
    cache under a hash of the text (and :data:`PARSE_FORMAT`).

    Parsing codespell's 70,000 lines takes a few tenths of a second in every run that uses
    the typo probe; reading the JSON back takes a few hundredths. Same keys in the same
    order, same tuples. An entry that does not decode to that shape is parsed again and
    replaced; an unwritable folder only costs the next run the parse.
    """
    import hashlib
    import json

    from abnirml.files.derived_values import default_cache_path, store_json_quietly

    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16)
    digest.update(PARSE_FORMAT.encode())
    entry = default_cache_path().parent / "vocabulary" / f"codespell-{digest.hexdigest()}.json"
    try:
        stored = json.loads(entry.read_text(encoding="utf-8"))
        if isinstance(stored, dict) and all(
                isinstance(v, list) and all(isinstance(t, str) for t in v)
                for v in stored.values()):
            return {word: tuple(typos) for word, typos in stored.items()}
    except (OSError, ValueError):
        pass
    parsed = parse_dictionary(text)
    store_json_quietly(entry, parsed, ensure_ascii=False)
    return parsed
