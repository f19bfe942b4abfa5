"""The report's first screen: per ranker, its few significant, large effects in plain words.

A reader opening the report asks "what does this ranker do?" before any table. This module
picks, per ranker, the effects that are significant, large (Cohen's |d_z| ≥ 0.8), visible
in the score itself (|score| ≥ :data:`MIN_SCORE`: a large d_z over scores that are all ties
within δ says little) and measured on at least :data:`~abnirml.report.tables.SMALL_N`
samples, with an interval that excludes 0 — at most :data:`PER_FAMILY` per probe family,
so one family does not crowd out the rest — and says each in a sentence with its interval,
linking to the row of the statistics table and to example samples.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abnirml.report.tables import SMALL_N, anchor, signed_text

LARGE = 0.8
MIN_SCORE = 0.2
PER_RANKER = 5
PER_FAMILY = 2

@dataclass(frozen=True)
class Finding:
    """One effect of one ranker: the sentence and where its detail is."""

    ranker: str
    probe: str
    family: str
    sentence: str          # plain text, no markup, without the ranker: "Prefers …"
    numbers: str           # "score +0.41, 95 % CI [+0.30, +0.52]; d_z +1.20, n = 160"
    row_id: str
    examples_id: str       # "" when the page has no samples of the probe


def _phrase(record: Mapping[str, Any], labels: Sequence[str], positive_note: str) -> str:
    """What the ranker does, as words: the direction of the score read through the family
    (the ranker is the heading the sentence stands under)."""
    probe, family = str(record["probe"]), str(record.get("family", ""))
    up = float(record["score"]) > 0
    said = _family_finding(family)
    phrase = said(probe, labels, up) if said is not None else None
    if phrase is not None:
        return phrase
    side = "d1" if up else "d2"
    note = f" ({positive_note.rstrip('.')})" if positive_note else ""
    return f"Prefers {side} on {probe}{note}"


def _family_finding(key: str) -> Any:
    """The registered family's way of saying an effect (None: unknown here, or it has none,
    so the generic sentence is used)."""
    from abnirml.probes.family_registry import family_keys, get_family

    return get_family(key).finding if key in family_keys() else None


def key_findings(records: Sequence[Mapping[str, Any]], run_info: Mapping[str, Any],
                 with_examples: Collection[str] = ()) -> dict[str, list[Finding]]:
    """Ranker → its findings, largest |d_z| first; every ranker of the run is a key."""
    from abnirml.report.tables import family_views, probe_labels

    positive = {v.key: v.positive.removeprefix("Positive scores: ").removeprefix("Positive: ")
                for v in family_views(records, run_info)}
    labels = probe_labels(records, run_info)
    level = float((run_info.get("statistics") or {}).get("ci", 0.95))
    rankers = list(dict.fromkeys(r["ranker"] for r in records))
    chosen = sorted((r for r in records if _qualifies(r)),
                    key=lambda r: (-abs(r["effect_size"]), r["probe"], r["ranker"]))
    out: dict[str, list[Finding]] = {ranker: [] for ranker in rankers}
    per_family: dict[tuple[str, str], int] = {}
    for r in chosen:
        mine, slot = out[r["ranker"]], (r["ranker"], str(r.get("family", "")))
        if len(mine) >= PER_RANKER or per_family.get(slot, 0) >= PER_FAMILY:
            continue
        per_family[slot] = per_family.get(slot, 0) + 1
        interval = ""
        if r.get("ci_low") is not None and r.get("ci_high") is not None:
            interval = (f", {100 * level:g} % CI [{signed_text(r['ci_low'])}, "
                        f"{signed_text(r['ci_high'])}]")
        numbers = (f"score {signed_text(r['score'])}{interval}; d_z "
                   f"{signed_text(r['effect_size'])}, n = {r['n']:,}")
        mine.append(Finding(
            r["ranker"], r["probe"], str(r.get("family", "")),
            _phrase(r, labels.get(r["probe"], []), positive.get(r.get("family", ""), "")),
            numbers, anchor("row", r["probe"], r["ranker"]),
            anchor("ex", r["probe"]) if r["probe"] in with_examples else ""))
    return out


def _qualifies(record: Mapping[str, Any]) -> bool:
    effect, score = record.get("effect_size"), record.get("score")
    return (record.get("subset") == "all" and bool(record.get("significant"))
            and effect is not None and abs(effect) >= LARGE
            and score is not None and abs(score) >= MIN_SCORE
            and int(record.get("n") or 0) >= SMALL_N and not record.get("symmetric")
            and _interval_excludes_zero(record))


def _interval_excludes_zero(record: Mapping[str, Any]) -> bool:
    """The score's query-clustered interval lies on one side of 0 (true when the run has
    no intervals): a test can be significant over samples while a few queries drive it."""
    low, high = record.get("ci_low"), record.get("ci_high")
    return low is None or high is None or low > 0 or high < 0


CRITERIA = (f"significant, large (|d_z| ≥ {LARGE}), a score of at least ±{MIN_SCORE} whose "
            f"interval excludes 0, and at least {SMALL_N} samples; at most {PER_RANKER} per "
            f"ranker and {PER_FAMILY} per probe family, largest d_z first")


def findings_html(found: Mapping[str, Sequence[Finding]]) -> str:
    """The first screen's block (escaped HTML): a card per ranker, a numbered list each."""
    from abnirml.report.html import esc

    if not found:
        return ""
    parts = ['<section id="findings" class="findings"><h2>Key findings</h2>',
             f'<p class="note">Per ranker, the effects that are {esc(CRITERIA)}. Every probe '
             'and ranker is in the sections below.</p><div class="cards">']
    for ranker, items in found.items():
        parts.append(f'<div class="card"><h3>{esc(ranker)}</h3>')
        if not items:
            parts.append('<p class="note">No effect meets these criteria; see '
                         '<a href="#statistics">Statistics</a>.</p></div>')
            continue
        parts.append("<ol>")
        for f in items:
            links = f'<a href="#{esc(f.row_id)}">detail</a>'
            if f.examples_id:
                links += f' · <a href="#{esc(f.examples_id)}">samples</a>'
            numbers = esc(f.numbers).replace(" = ", "&nbsp;=&nbsp;").replace(" %", "&nbsp;%")
            parts.append(f'<li>{esc(f.sentence)}<br><span class="num">{numbers}</span>'
                         f' <span class="links">· {links}</span></li>')
        parts.append("</ol></div>")
    parts.append("</div></section>")
    return "\n".join(parts)


def findings_markdown(found: Mapping[str, Sequence[Finding]]) -> list[str]:
    """report.md's "Key findings" lines (after the title)."""
    from abnirml.markup import escape_md

    if not found:
        return []
    lines = ["## Key findings", "", f"Per ranker, the effects that are {CRITERIA}. Intervals "
             "and effect sizes of every probe: [Intervals and effect sizes]"
             "(#intervals-and-effect-sizes)."]
    for ranker, items in found.items():
        lines += ["", f"**{escape_md(ranker)}**", ""]
        if not items:
            lines.append("No effect meets these criteria.")
        lines += [f"{i}. {escape_md(f.sentence)}: {escape_md(f.numbers)}."     # ranked
                  for i, f in enumerate(items, 1)]
    return lines
