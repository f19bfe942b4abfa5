"""MkDocs hook: pipes escaped inside code spans of table rows.

GitHub needs ``\\|`` for a ``|`` inside a code span in a table cell, and shows it as ``|``;
Python-Markdown already keeps a bare ``|`` inside a code span in its cell and would print
the backslash. The pages are written for both readers, so the site drops that backslash.
"""

from __future__ import annotations

import re

_CODE = re.compile(r"`[^`\n]*`")


def _unescape_code(line: str) -> str:
    return _CODE.sub(lambda m: m.group(0).replace("\\|", "|"), line)


def on_page_markdown(markdown: str, **_: object) -> str:
    return "\n".join(_unescape_code(line) if line.startswith("|") else line
                     for line in markdown.split("\n"))
