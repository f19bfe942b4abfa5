"""Carry a word's capitalisation over to the word that replaces it.

Text edits (synonym and lemma swaps in the manipulations, term swaps in the query
variations) replace a word in running text; the replacement comes lowercased from a
lexicon, so without this a sentence-initial or all-caps word would lose its casing and
the edit would change more than the one word it means to.
"""

from __future__ import annotations


def match_case(source: str, word: str) -> str:
    """``word`` with the casing pattern of ``source``: all caps (two or more letters),
    capitalised, or as it is."""
    if len(source) > 1 and source.isupper():
        return word.upper()
    if source[:1].isupper():
        return word[:1].upper() + word[1:]
    return word
