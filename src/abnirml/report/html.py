"""One self-contained HTML page: tables, figures and example samples, nothing fetched.

Everything the page shows is inline — styles in a ``<style>`` element, figures as
``data:image/png`` URIs, one script (:mod:`abnirml.report.page_script`) — and a
Content-Security-Policy forbids any request and every script but that one, pinned by its
hash, so the page opens offline, e-mails well, and a document text holding ``<script>`` or
markup is displayed as text: every user-supplied string (queries, documents, probe and
ranker names, metadata) goes through :func:`esc` before it reaches the page.

The layout answers first and details on demand: the key findings, then one folded
``<details>`` per section, with a table of contents that stays beside the page; wide
tables scroll inside their own box, so the page itself never scrolls sideways.
"""

from __future__ import annotations

import base64
import difflib
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from abnirml.report.page_script import CSP, SCRIPT
from abnirml.report.tables import SMALL_N, Table, anchor

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d1d1f;
display:grid;grid-template-columns:15em minmax(0,1fr)}
body>nav{position:sticky;top:0;height:100vh;overflow-y:auto;box-sizing:border-box;
padding:1em .8em;background:#f7f7f8;border-right:1px solid #e2e2e2;font-size:.9em}
body>nav ol{padding-left:1.2em;margin:.4em 0}body>nav li{margin:.25em 0}
body>nav a{color:#1d4f91;text-decoration:none}body>nav a:hover{text-decoration:underline}
main{min-width:0;max-width:1200px;padding:1em 1.5em 3em}
@media (max-width:800px){body{display:block}body>nav{position:static;height:auto}}
h1{font-size:1.6em;margin:.3em 0}
h2{font-size:1.25em;margin:0;display:inline}
section{margin:.5em 0}
section>details{border:1px solid #dcdcdc;border-radius:5px;padding:.4em .8em}
section>details>summary{cursor:pointer;padding:.2em 0}
section>details[open]>summary{border-bottom:1px solid #e4e4e4;margin-bottom:.5em}
.findings{background:#f4f8fc;border:1px solid #cfe0f1;border-radius:5px;padding:.2em 1em .6em}
.findings h2{display:block;margin:.5em 0 .2em}.findings h3{margin:.2em 0 .3em}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(23em,1fr));gap:.8em}
.card{background:#fff;border:1px solid #dde6f0;border-radius:5px;padding:.5em .8em}
.findings ol{margin:.2em 0;padding-left:1.4em}.findings li{margin:.35em 0}
.num{font-variant-numeric:tabular-nums;color:#555;font-size:.88em}
.links{font-size:.88em}abbr.hint{font-size:.85em;color:#a15c00;cursor:help;margin-left:.3em}
.findings p.shared{margin:.3em 0 .5em}
h3{font-size:1.05em;margin-top:1.4em}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.6em 0;font-variant-numeric:tabular-nums}
tr.small td.label{font-style:italic}td.inherited{color:#777}td:not(.label){white-space:nowrap}
.smalln{font-size:.8em;color:#a15c00;font-style:normal;margin-left:.3em}
th.sortable{cursor:pointer}th[aria-sort=descending]::after{content:" \\25BE"}
th[aria-sort=ascending]::after{content:" \\25B4"}
tr.target td,div.target{outline:2px solid #e69f00}
.controls{display:flex;gap:.5em;align-items:center;flex-wrap:wrap;margin:.6em 0 0}
.controls .count{color:#555;font-size:.9em}
th,td{border:1px solid #d0d0d0;padding:.25em .6em;text-align:right;vertical-align:top}
th{background:#f3f3f3}td.label,th.label{text-align:left}
td.ns{color:#767676}td.sig{font-weight:600}
.legend{color:#555;font-size:.85em;margin-top:0}
.caveat{background:#fff8e1;border-left:3px solid #e69f00;padding:.3em .6em;font-size:.92em}
.note{color:#555;font-size:.92em}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#555;font-size:.9em}
details{margin:.4em 0;border:1px solid #e4e4e4;border-radius:4px;padding:.3em .6em}
summary{cursor:pointer;font-weight:600}
.sample{margin:.6em 0 1em;padding-top:.4em;border-top:1px dashed #ddd}
.docs{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1em}
.doc{white-space:pre-wrap;background:#fafafa;border:1px solid #eee;padding:.5em;
overflow-wrap:anywhere}
mark.del{background:#ffd6d6}mark.ins{background:#c9f2d0}mark.mov{background:#fff0b3}
code{font-size:.9em}
"""


def esc(value: Any) -> str:
    """HTML-escape anything for text and attribute positions."""
    return html.escape(str(value), quote=True)


@dataclass(frozen=True)
class Figure:
    title: str
    png: bytes
    caption: str = ""

    def html(self) -> str:
        data = base64.b64encode(self.png).decode("ascii")
        caption = f"<figcaption>{esc(self.caption)}</figcaption>" if self.caption else ""
        return (f'<figure><img src="data:image/png;base64,{data}" alt="{esc(self.title)}">'
                f"{caption}</figure>")


@dataclass
class Section:
    """A titled part of the page: text, tables (with export slugs), figures, raw blocks."""

    key: str
    title: str
    intro: str = ""
    tables: list[tuple[str, Table]] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)   # already-escaped HTML
    notes: list[str] = field(default_factory=list)    # caveats, shown before the tables

    def html(self) -> str:
        """The section folded under its title: the reader opens what they came for."""
        parts = [f'<section id="{esc(self.key)}"><details><summary><h2>{esc(self.title)}'
                 "</h2></summary>"]
        if self.intro:
            parts.append(f'<p class="note">{esc(self.intro)}</p>')
        parts += [f'<p class="caveat">{esc(note)}</p>' for note in self.notes]
        for slug, table in self.tables:     # a table named like its section: no 2nd heading
            parts.append(table_html(table, slug, title=table.title != self.title))
        parts += [f.html() for f in self.figures]
        parts += self.blocks
        parts.append("</details></section>")
        return "\n".join(parts)


_SCORE = re.compile(r"^(\* )?([+\-−]?)(\d+\.\d+)(†?)$")

#: Okabe & Ito's colour-blind-safe blue and vermillion: significant scores by sign
POSITIVE_RGB = (0, 114, 178)
NEGATIVE_RGB = (213, 94, 0)
#: the text colour of scores that are not significant
NOT_SIGNIFICANT = "#767676"
def colour_legend(mark: str) -> str:
    """The legend of colours and of the significance mark under every score table."""
    from abnirml.report.tables import MARK_SIGNIFICANT

    star = ("a * after a score marks it significant" if mark == MARK_SIGNIFICANT
            else "a * before a score marks it not significant (ABNIRML's convention)")
    return ("Colour: a significant score, blue when positive, vermillion when negative, "
            f"deeper for larger scores; grey text: not significant; {star}.")


COLOUR_LEGEND = colour_legend("significant")


def _cell(text: str, label: bool, scored: bool, mark: str = "significant") -> str:
    from abnirml.report.tables import shown_score

    if label:
        return f'<td class="label">{esc(text)}</td>'
    match = _SCORE.match(text.strip()) if scored else None
    if match is None:
        return f"<td>{esc(text)}</td>"
    star, sign, number, _zero = match.groups()
    shown = esc(shown_score(text, mark))
    if star:
        return f'<td class="ns">{shown}</td>'
    value = float(number) * (-1 if sign in ("-", "−") else 1)
    if value == 0.0:
        return f'<td class="sig">{shown}</td>'
    red, green, blue = POSITIVE_RGB if value > 0 else NEGATIVE_RGB
    alpha = 0.15 + 0.4 * min(1.0, abs(value))
    kind = "pos" if value > 0 else "neg"
    return (f'<td class="sig {kind}" style="background:rgba({red},{green},{blue},'
            f'{alpha:.2f})">{shown}</td>')


def table_html(table: Table, slug: str = "", title: bool = True) -> str:
    """A table in the page's one style: text columns (labels, fingerprints, notes)
    left-aligned, numbers right-aligned in tabular figures; score columns (``table.scored``)
    coloured by sign when significant and greyed when not, with the legend under the table.
    Rows from fewer than SMALL_N samples (by the ``Samples`` column) are marked ``small``;
    rows with example samples (``table.row_examples``) link to them; the table scrolls
    inside its own box when wider than the page."""
    from abnirml.report.export import text_columns
    from abnirml.report.tables import ZERO_MARK, score_legend

    text = text_columns(table)
    scored = set(table.scored)
    samples = table.header.index("Samples") if "Samples" in table.header else None
    subset_at = table.header.index("Subset") if "Subset" in table.header else 0
    linked = any(table.row_examples)
    head = "".join(f'<th class="label">{esc(h)}</th>' if j in text
                   else f"<th>{esc(h)}</th>" for j, h in enumerate(table.header))
    if linked:
        head += '<th class="label">Examples</th>'
    body_rows = []
    for i, row in enumerate(table.rows):
        small = samples is not None and samples < len(row) and _is_small(row[samples])
        small_at = samples if samples is not None else 0
        cells = [_cell(c, j in text, j in scored, table.mark) for j, c in enumerate(row)]
        if small:
            cells[small_at] = cells[small_at].replace(
                "</td>", f'<span class="smalln" title="fewer than {SMALL_N} samples">'
                         f"n &lt; {SMALL_N}</span></td>")
        if linked:
            target = table.row_examples[i] if i < len(table.row_examples) else ""
            cells.append(f'<td class="label"><a href="#{esc(target)}">samples</a></td>'
                         if target else "<td></td>")
        row_id = table.row_ids[i] if i < len(table.row_ids) else ""
        # a subset row (every label before "Subset" blank) belongs to the probe row above:
        # the page's script sorts and filters the two together
        continues = i > 0 and subset_at > 0 and not any(c.strip() for c in row[:subset_at])
        attributes = (f' id="{esc(row_id)}"' if row_id else "") + (
            ' class="small"' if small else "") + (' data-cont="1"' if continues else "")
        body_rows.append(f"<tr{attributes}>" + "".join(cells) + "</tr>")
    body = "\n".join(body_rows)
    heading = f"<h3>{esc(table.title)}</h3>" if table.title and title else ""
    note = f'<p class="note">{esc(table.note)}</p>' if table.note else ""
    legend = ""
    if scored:
        zero = any(ZERO_MARK in row[j] or _rounds_small(row[j])
                   for row in table.rows for j in scored if j < len(row))
        legend = (f'<p class="legend">{esc(colour_legend(table.mark))}'
                  + (f" {esc(score_legend(table.mark))}" if zero else "") + "</p>")
    exports = (f'<p class="note">Exports: <code>tables/{esc(slug)}.csv</code>, '
               f"<code>tables/{esc(slug)}.tex</code></p>") if slug else ""
    return (f"{heading}{note}<div class=\"scroll\"><table data-table=\"{esc(slug)}\"><thead>"
            f"<tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table></div>{legend}{exports}")


def _is_small(count: str) -> bool:
    """A Samples cell (``2``, ``36/39``, ``1,204``) whose smallest count is under SMALL_N."""
    numbers = [int(part.replace(",", "")) for part in count.split("/")
               if part.strip().replace(",", "").isdigit()]
    return bool(numbers) and min(numbers) < SMALL_N


def _rounds_small(text: str) -> bool:
    """A significant score printed with more than two decimals (it rounds to 0.00)."""
    match = _SCORE.match(text.strip())
    return bool(match and not match[1] and len(match[3].split(".")[1]) > 2)


_TOKEN = re.compile(r"\s+|[^\s]+")
DIFF_WORDS = 2000
"""Words of each text compared for highlighting. The word diff is quadratic in the worst
case (a shuffled 32k-word pair took seconds, three 1M-character passages minutes), so
longer texts are highlighted over their first ``DIFF_WORDS`` words and the page says so."""


REORDER_BAG = 0.8
"""Texts sharing at least this share of their words (as multisets) but far less of their
word order are one text reordered (a shuffle, a reversal): their moved words are marked."""

EDIT, REORDER = "edit", "reorder"


def word_diff(a: str, b: str, min_ratio: float = 0.3) -> tuple[str, str, str]:
    """Escaped HTML of both texts with the words that differ marked, and what kind of
    difference it is: :data:`EDIT` (words deleted, inserted, replaced), :data:`REORDER`
    (mostly the same words in another order: words outside the longest in-order alignment
    are marked as moved, words only one text has as deleted or inserted), or "" (unrelated).

    Texts sharing less than ``min_ratio`` of their words in order, and not one text
    reordered, are different documents (as in measure-and-match probes): marking everything
    would say nothing, so they stay plain. Only the first :data:`DIFF_WORDS` words are
    compared (see there).
    """
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    wa = [t for t in ta if not t.isspace()]
    wb = [t for t in tb if not t.isspace()]
    cut = len(wa) > DIFF_WORDS or len(wb) > DIFF_WORDS
    wa, wb = wa[:DIFF_WORDS], wb[:DIFF_WORDS]
    matcher = difflib.SequenceMatcher(a=wa, b=wb, autojunk=False)
    ratio = matcher.ratio()
    bag = _bag_share(wa, wb)
    kind = REORDER if bag >= REORDER_BAG and ratio < bag - 0.2 else EDIT
    if kind == EDIT and ratio < min_ratio:
        return esc(a), esc(b), ""
    note = (f' <span class="note">[highlighting covers the first {DIFF_WORDS:,} words '
            "only]</span>") if cut else ""
    if kind == REORDER:
        in_order_a: set[int] = set()
        in_order_b: set[int] = set()
        for block in matcher.get_matching_blocks():
            in_order_a.update(range(block.a, block.a + block.size))
            in_order_b.update(range(block.b, block.b + block.size))
        marks_a = _moved(wa, in_order_a, wb, in_order_b, "del")
        marks_b = _moved(wb, in_order_b, wa, in_order_a, "ins")
        return _marked(ta, marks_a) + note, _marked(tb, marks_b) + note, REORDER
    changed_a: dict[int, str] = {}
    changed_b: dict[int, str] = {}
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "equal":
            changed_a.update(dict.fromkeys(range(i1, i2), "del"))
            changed_b.update(dict.fromkeys(range(j1, j2), "ins"))
    return _marked(ta, changed_a) + note, _marked(tb, changed_b) + note, EDIT


def _bag_share(wa: Sequence[str], wb: Sequence[str]) -> float:
    """The share of words the two texts have in common, order ignored (multisets)."""
    from collections import Counter

    longest = max(len(wa), len(wb))
    return sum((Counter(wa) & Counter(wb)).values()) / longest if longest else 1.0


def _moved(words: Sequence[str], in_order: set[int], other: Sequence[str],
           other_in_order: set[int], missing: str) -> dict[int, str]:
    """Word index → mark for a reordered text: ``mov`` for a word the other text has out of
    this order, ``missing`` (del / ins) for a word it does not have."""
    from collections import Counter

    spare = Counter(w for j, w in enumerate(other) if j not in other_in_order)
    marks: dict[int, str] = {}
    for i, word in enumerate(words):
        if i in in_order:
            continue
        if spare[word] > 0:
            spare[word] -= 1
            marks[i] = "mov"
        else:
            marks[i] = missing
    return marks


def _marked(tokens: Sequence[str], marks: Mapping[int, str]) -> str:
    """The tokens as escaped HTML, word ``i`` wrapped in ``<mark class=marks[i]>``."""
    out: list[str] = []
    word = 0
    for token in tokens:
        if token.isspace():
            out.append(esc(token))
            continue
        text = esc(token)
        css = marks.get(word)
        out.append(f'<mark class="{css}">{text}</mark>' if css else text)
        word += 1
    return "".join(out)


HINTS = {
    "": "Two different documents: no word-level highlighting.",
    REORDER: "The same words in another order: words moved out of the longest in-order "
             "alignment are marked yellow; words only one text has are red (d1) or green "
             "(d2).",
}


def examples_html(examples: Sequence[Mapping[str, Any]]) -> str:
    """For each probe a collapsible block of samples: query, both texts diffed, all scores."""
    by_probe: dict[str, list[Mapping[str, Any]]] = {}
    for example in examples:
        by_probe.setdefault(str(example.get("probe", "")), []).append(example)
    blocks: list[str] = []
    for probe, items in by_probe.items():
        parts = [f'<details id="{esc(anchor("ex", probe))}"><summary>{esc(probe)} '
                 f"({len(items)} sample{'s' if len(items) != 1 else ''})</summary>"]
        for item in items:
            doc1, doc2, related = word_diff(str(item.get("doc1", "")), str(item.get("doc2", "")))
            scores = item.get("scores") or {}
            rows = "".join(
                f'<tr><td class="label">{esc(r)}</td><td>{_num(v[0])}</td><td>{_num(v[1])}</td>'
                f"<td>{_num(_diff(v))}</td></tr>"
                for r, v in scores.items())
            meta = item.get("meta") or {}
            meta_text = ", ".join(f"{k} = {v}" for k, v in meta.items())
            hint = (f'<p class="note">{esc(HINTS[related])}</p>' if related in HINTS
                    else "")
            parts.append(
                f'<div class="sample"><p><b>Query:</b> {esc(item.get("query", ""))}</p>{hint}'
                f'<div class="docs"><div><b>d1</b><div class="doc">{doc1}</div></div>'
                f'<div><b>d2</b><div class="doc">{doc2}</div></div></div>'
                f'<table data-table="example"><thead><tr><th class="label">Ranker</th>'
                f"<th>R(q, d1)</th><th>R(q, d2)</th><th>difference</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>"
                + (f'<p class="note">{esc(meta_text)}</p>' if meta_text else "") + "</div>")
        parts.append("</details>")
        blocks.append("".join(parts))
    return "\n".join(blocks)


def _diff(pair: Sequence[Any]) -> float | None:
    try:
        return float(pair[0]) - float(pair[1])
    except (TypeError, ValueError, IndexError):
        return None


def _num(value: Any) -> str:
    if value is None:
        return "–"
    try:
        return esc(f"{float(value):.4g}")
    except (TypeError, ValueError):
        return esc(value)


def page(title: str, sections: Sequence[Section], preface: str = "", lead: str = "") -> str:
    """The whole document: a table of contents beside the page, the title, ``preface`` and
    ``lead`` (already-escaped HTML: the collection line, the key findings) open, then every
    section folded."""
    entries = [("findings", "Key findings")] if 'id="findings"' in lead else []
    entries += [(s.key, s.title) for s in sections]
    nav = "".join(f'<li><a href="#{esc(key)}">{esc(name)}</a></li>' for key, name in entries)
    body = "\n".join(s.html() for s in sections)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
        f'<nav aria-label="Contents"><b>Contents</b><ol>{nav}</ol></nav>'
        f"<main><h1>{esc(title)}</h1>{preface}{lead}\n{body}\n</main>"
        f"<script>{SCRIPT}</script></body></html>\n")
