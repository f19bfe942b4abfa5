"""Making user text inert in the Markdown the reports write.

A leaf module (no abnirml imports) so that both the report renderers and the analyses that
write their own Markdown (masking) can use it without importing upwards.
"""

from __future__ import annotations


def escape_md(text: object) -> str:
    """User text (names, paths, specs) made inert in Markdown: no raw HTML, no broken tables.

    ``&`` and ``<`` become entities, so ``<script>`` or ``<img onerror=…>`` in a collection
    directory, ranker spec or probe name is shown, never interpreted (a lone ``>`` opens no
    tag and stays, so headers like ``>100`` are unchanged); ``|`` is escaped so it cannot
    split a table cell.
    """
    return (str(text).replace("&", "&amp;").replace("<", "&lt;")
            .replace("|", "\\|").replace("\n", " "))


def escape_md_code(text: object) -> str:
    """Text for inside a Markdown code span in a table: backticks and ``|`` made harmless."""
    return str(text).replace("`", "'").replace("|", "\\|").replace("\n", " ")
