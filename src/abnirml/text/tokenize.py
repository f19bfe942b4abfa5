"""Term and sentence splitting.

Terms are maximal runs of Unicode letters and digits, lowercased — the plain tokenizer that
lexical IR systems (and the ABNIRML characteristics) assume. The sentence splitter is a
small rule-based one: good enough for passages, deterministic, and free of model downloads.
"""

from __future__ import annotations

import re
import string

#: The punctuation symbols the ABNIRML "remove punctuation" manipulation deletes
#: (the ASCII punctuation set).
PUNCTUATION: frozenset[str] = frozenset(string.punctuation)

_TERM = re.compile(r"[^\W_]+", re.UNICODE)
# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) and white space,
# unless the period belongs to a common abbreviation or a single initial.
_SENTENCE_END = re.compile(r"""(?<=[.!?])["')\]]*\s+""")
_ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "u.s", "u.k",
    "no", "fig", "approx", "inc", "ltd", "co", "corp", "dept", "est", "jan", "feb", "mar",
    "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
})


def terms(text: str) -> list[str]:
    """Lowercased alphanumeric terms of ``text``, in order."""
    return _TERM.findall(text.lower())


def term_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the terms in ``text`` (for manipulations that edit in place)."""
    return [m.span() for m in _TERM.finditer(text)]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text``; white space between them is excluded."""
    spans: list[tuple[int, int]] = []
    start = _skip_space(text, 0)
    for match in _SENTENCE_END.finditer(text):
        end = match.start()
        # keep the closing quote/bracket with the sentence it closes
        closing = match.group(0).rstrip()
        end += len(closing)
        candidate = text[start:end]
        last_word = (candidate.rsplit(None, 1)[-1].rstrip(".!?\"')]").lstrip("\"'([").lower()
                     if candidate else "")
        if candidate.endswith(".") and (last_word in _ABBREVIATIONS or len(last_word) == 1):
            continue
        if candidate.strip():
            spans.append((start, end))
        start = _skip_space(text, match.end())
    if start < len(text) and text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` as substrings (untouched casing and inner spacing)."""
    return [text[a:b] for a, b in sentence_spans(text)]


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos
