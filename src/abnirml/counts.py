"""Counts in words: "1 ranker", "2 rankers", "1 query", "1,781 samples".

Every message and report sentence that puts a number before a noun goes through
:func:`counted`, so a run with two rankers never reads "the other 1 rankers".
"""

from __future__ import annotations

_IRREGULAR = {"index": "indices", "analysis": "analyses", "child": "children"}


def plural(noun: str) -> str:
    """The plural of a regular English noun (``query`` → ``queries``, ``box`` → ``boxes``);
    a phrase is pluralised at its last word."""
    head, space, last = noun.rpartition(" ")
    if last in _IRREGULAR:
        word = _IRREGULAR[last]
    elif last.endswith("y") and len(last) > 1 and last[-2] not in "aeiou":
        word = last[:-1] + "ies"
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        word = last + "es"
    else:
        word = last + "s"
    return f"{head}{space}{word}"


def noun_for(count: int, singular: str, plural_form: str | None = None) -> str:
    """``singular`` for a count of exactly 1, else its plural."""
    if count == 1:
        return singular
    return plural_form if plural_form is not None else plural(singular)


def counted(count: int, singular: str, plural_form: str | None = None, *,
            grouped: bool = True) -> str:
    """``count`` and the noun in the number it needs: ``counted(1, "ranker")`` is
    "1 ranker", ``counted(1781, "sample")`` "1,781 samples" (``grouped=False``: "1781")."""
    number = f"{count:,}" if grouped else str(count)
    return f"{number} {noun_for(count, singular, plural_form)}"


def counted_or_unknown(count: object, singular: str) -> str:
    """:func:`counted` for a value read from a file, which may be missing: "? queries"."""
    if isinstance(count, bool) or not isinstance(count, int):
        return f"? {plural(singular)}"
    return counted(count, singular)
