"""The report's first screen: what sets each ranker apart, and what they all share.

A reader opening the report asks "how is this ranker different from the others?" before any
table. With several rankers and their per-sample scores, the first screen answers by
contrast (:mod:`abnirml.report.contrasts`): one line for the behaviours (nearly) all rankers
share, then per ranker the probes on which it behaves unlike most of the others, each tested
on the same samples. With one ranker (or a folder without scores.npz) it lists, per ranker,
the effects that are significant, large (Cohen's |d_z| ≥ 0.8), visible
in the score itself (|score| ≥ :data:`MIN_SCORE`: a large d_z over scores that are all ties
within δ says little) and measured on at least :data:`~abnirml.report.tables.SMALL_N`
samples, with an interval that excludes 0 — at most :data:`PER_FAMILY` per probe family,
so one family does not crowd out the rest — and says each in a sentence with its interval,
linking to the row of the statistics table and to example samples.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abnirml.counts import counted
from abnirml.report.alike import alike_cards, fold_same_numbers
from abnirml.report.tables import SMALL_N, anchor, signed_text
from abnirml.run_record import RunInfo, alpha_of, statistics_of

LARGE = 0.8
MIN_SCORE = 0.2
PER_RANKER = 5
PER_FAMILY = 2
#: contrasts are rarer than large effects, and a family's probes often differ for one
#: reason (word order: reversed, shuffled): one more per family before the cap
PER_FAMILY_CONTRAST = 3


@dataclass(frozen=True)
class Finding:
    """One effect of one ranker: the sentence and where its detail is."""

    ranker: str
    probe: str
    family: str
    #: plain text, no markup: "Prefers …" (the card names the ranker), or a contrast with
    #: the ranker as its subject: "Unlike bm25 and ql, biencoder prefers …"
    sentence: str
    numbers: str           # "score +0.41, 95 % CI [+0.30, +0.52]; d_z +1.20, n = 160"
    row_id: str
    examples_id: str       # "" when the page has no samples of the probe
    #: why the interval is as wide as it is, when the numbers alone would puzzle ("" if not)
    hint: str = ""
    #: further probes of this ranker whose numbers print exactly like these (folded here
    #: by :func:`abnirml.report.alike.fold_same_numbers`)
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class Screen:
    """The whole first screen: the shared line, each ranker's findings, and the criteria
    that chose them (in words, for the note above the cards)."""

    found: Mapping[str, Sequence[Finding]]
    shared: Sequence[Any] = ()          # contrasts.Shared entries
    criteria: str = ""
    by_contrast: bool = False
    #: ranker → the earlier ranker whose card it would repeat (:mod:`.alike`)
    alike: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def _phrase(record: Mapping[str, Any], labels: Sequence[str], positive_note: str,
            up: bool | None = None) -> str:
    """What the ranker does, as words: the direction of the score (or ``up``) read through
    the family (the ranker is the heading the sentence stands under)."""
    probe, family = str(record["probe"]), str(record.get("family", ""))
    up = float(record["score"]) > 0 if up is None else up
    said = _family_finding(family)
    phrase: str | None = said(probe, labels, up) if said is not None else None
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


def key_findings(records: Sequence[Mapping[str, Any]], run_info: RunInfo,
                 with_examples: Collection[str] = (), store: Any = None
                 ) -> dict[str, list[Finding]]:
    """Ranker → its findings, largest |d_z| first; every ranker of the run is a key.
    ``store`` (the run's per-sample scores) adds each probe's query count to the numbers."""
    from abnirml.report.contrasts import queries_of

    positive, labels, _ = _context(records, run_info)
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
        queries = queries_of(store, r["probe"], r["ranker"])
        numbers = (f"score {_scored(r, interval_label(r, run_info))}; "
                   f"d_z {signed_text(r['effect_size'])}, "
                   f"n = {r['n']:,}{_over(queries)}")
        mine.append(Finding(
            r["ranker"], r["probe"], str(r.get("family", "")),
            _phrase(r, labels.get(r["probe"], []), positive.get(r.get("family", ""), "")),
            numbers, anchor("row", r["probe"], r["ranker"]),
            anchor("ex", r["probe"]) if r["probe"] in with_examples else "",
            _hint(r, queries)))
    return {ranker: fold_same_numbers(entries) for ranker, entries in out.items()}


def _context(records: Sequence[Mapping[str, Any]], run_info: RunInfo
             ) -> tuple[dict[str, str], dict[str, list[str]], float]:
    """Each family's "positive" note, each probe's row labels, and the interval level."""
    from abnirml.report.tables import family_views, probe_labels

    positive = {v.key: v.positive.removeprefix("Positive scores: ").removeprefix("Positive: ")
                for v in family_views(records, run_info)}
    return positive, probe_labels(records, run_info), statistics_of(run_info)["ci"]


def _scored(record: Mapping[str, Any], label: str = "", comma: bool = True) -> str:
    """``+0.41, 95 % CI [+0.30, +0.52]`` (``label`` names the interval:
    :func:`interval_label`; ``+0.41 [+0.30, +0.52]`` without ``comma``)."""
    text = signed_text(record["score"])
    if record.get("ci_low") is not None and record.get("ci_high") is not None:
        bounds = f"[{signed_text(record['ci_low'])}, {signed_text(record['ci_high'])}]"
        text += f", {label} {bounds}" if comma else f" {bounds}"
    return text


def interval_label(record: Mapping[str, Any], run_info: RunInfo) -> str:
    """What a row's score interval is, in a few words: ``95 % CI`` for the run's ``--ci``
    bootstrap interval; with a test whose verdict is the score interval (the default
    ``clustered``) the interval is at the level the correction tested the row at — 1 − α/m
    under Bonferroni with m tests in the row's table, so ``99.97 % CI`` — and a procedure
    whose level differs per row (Holm, Benjamini–Hochberg) is named instead of a number."""
    from abnirml.evaluation.stats.corrections import find_correction
    from abnirml.evaluation.stats.stat_tests import find_test

    stats = statistics_of(run_info)
    test = find_test(stats["test"])
    if test is None or not test.score_interval:
        return f"{coverage_text(stats['ci'])} % CI"
    alpha = alpha_of(run_info)
    correction = stats["correction"]
    known = find_correction(correction)
    tests = record.get("tests_in_table")
    if known is not None and known.shared_level is not None:
        if not known.adjusts:
            return f"{coverage_text(1.0 - known.shared_level(alpha, 1))} % CI"
        if isinstance(tests, int) and tests > 0:
            return (f"{coverage_text(1.0 - known.shared_level(alpha, tests))} % CI "
                    f"(1 − {known.level_formula}, m = {tests})")
    name = correction if known is None else known.label
    return f"CI at the level the {name} procedure tested the row at"


def coverage_text(level: float) -> str:
    """A coverage in percent with the digits it needs to stay below 100: 0.95 → ``95``,
    1 − 0.01/36 → ``99.97``, 1 − 0.01/1000 → ``99.999``."""
    for digits in range(2, 9):
        text = f"{100 * level:.{digits}g}"
        if float(text) < 100.0 or level >= 1.0:
            return text
    return f"{100 * level:.9g}"


def _over(queries: int | None) -> str:
    return "" if queries is None else f" from {queries:,} quer{'y' if queries == 1 else 'ies'}"


FEW_QUERIES = SMALL_N
"""A score every sample shares, from fewer queries than this, gets a hint on its interval."""


def _hint(record: Mapping[str, Any], queries: int | None) -> str:
    """Why a perfect score has a wide interval: every sample agrees, but the interval is
    over queries, and few queries cannot rule out that others would disagree."""
    score, low, high = record.get("score"), record.get("ci_low"), record.get("ci_high")
    if score is None or low is None or high is None or abs(float(score)) < 1.0:
        return ""
    if queries is not None and queries >= FEW_QUERIES:
        return ""
    count = counted(queries, "query") if queries is not None else "few queries"
    return (f"Every sample agrees, but they come from {count}: the interval is over "
            "queries, and with so few it cannot rule out that other queries would disagree "
            "(an exact Clopper–Pearson bound on the share of queries that agree).")


def first_screen(records: Sequence[Mapping[str, Any]], run_info: RunInfo,
                 with_examples: Collection[str] = (), store: Any = None) -> Screen:
    """The first screen of the run: by contrast when there are several rankers and their
    per-sample scores (``store``), else :func:`key_findings`."""
    rankers = list(dict.fromkeys(r["ranker"] for r in records))
    if len(rankers) < 2 or store is None or set(store.ranker_names) != set(rankers):
        largest = key_findings(records, run_info, with_examples, store)
        return Screen(largest, criteria=f"Per ranker, the effects that are {CRITERIA}.",
                      alike=alike_cards(largest, _scores(records)))
    from abnirml.evaluation.analyses.compare import ranker_pairs
    from abnirml.report import contrasts

    positive, labels, _ = _context(records, run_info)
    by_key = {(r["probe"], r["ranker"]): r for r in records if r.get("subset") == "all"}

    def phrase_of(record: Mapping[str, Any], up: bool) -> str:
        return _phrase(record, labels.get(record["probe"], []),
                       positive.get(str(record.get("family", "")), ""), up)

    stats = screening_stats(store.stats)
    pairs = ranker_pairs(store, stats)
    found: dict[str, list[Finding]] = {ranker: [] for ranker in rankers}
    per_family: dict[tuple[str, str], int] = {}
    for c in contrasts.candidates(records, pairs):
        mine, slot = found[c.ranker], (c.ranker, c.family)
        if len(mine) >= PER_RANKER or per_family.get(slot, 0) >= PER_FAMILY_CONTRAST:
            continue
        per_family[slot] = per_family.get(slot, 0) + 1
        record = by_key[(c.probe, c.ranker)]
        queries = contrasts.queries_of(store, c.probe, c.ranker)
        weakest = f" from {c.weakest}" + (", the closest" if len(c.group) > 1 else "")
        numbers = (f"{_scored(record, comma=False)} vs "
                   f"{contrasts.theirs_text(c.theirs)}; difference {signed_text(c.difference)}"
                   f" [{signed_text(c.low)}, {signed_text(c.high)}]{weakest}; "
                   f"n = {record['n']:,}{_over(queries)}")
        mine.append(Finding(
            c.ranker, c.probe, c.family,
            contrasts.sentence(c, functools.partial(phrase_of, record), len(rankers) - 1),
            numbers, anchor("row", c.probe, c.ranker),
            anchor("ex", c.probe) if c.probe in with_examples else "", _hint(record, queries)))
    shared = contrasts.shared(records, _qualifies, phrase_of)
    chosen_by = contrasts.criteria(len(rankers), stats, store.stats.test)
    found = {ranker: fold_same_numbers(entries) for ranker, entries in found.items()}
    return Screen(found, shared, f"Per ranker, {chosen_by}.", by_contrast=True,
                  alike=alike_cards(found, _scores(records)))


def _scores(records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], float]:
    return {(r["probe"], r["ranker"]): float(r["score"]) for r in records
            if r.get("subset") == "all" and r.get("score") is not None}


def screening_stats(stats: Any) -> Any:
    """The statistics the first screen compares rankers with: the run's, except that a
    resampling test (the default clustered test, permutation, bootstrap) is replaced by the
    paired t-test. Every pair
    of rankers is tested on every probe — 21 pairs × 110 probes on the demo — and drawing
    enough rounds for the correction to reject would make rendering a report take many
    minutes; the query-clustered interval of the difference, which must exclude 0 as well,
    keeps the screen as cautious as the run's test."""
    import dataclasses

    from abnirml.evaluation.stats.stat_tests import get_test

    if get_test(stats.test).resamples:
        return dataclasses.replace(stats, test="ttest")
    return stats


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


def shared_text(item: Any, total: int) -> tuple[str, str]:
    """One shared behaviour in words, without markup: who and what; the range of scores."""
    who = (("both rankers" if total == 2 else f"all {total} rankers") if not item.exceptions
           else f"all but {', '.join(item.exceptions)}")
    scores = signed_text(item.low) if signed_text(item.low) == signed_text(item.high) \
        else f"{signed_text(item.low)} to {signed_text(item.high)}"
    return f"{who} {item.phrase}", scores


def alike_text(item: Any, alone: bool) -> str:
    """A card's findings that repeat an earlier card's, in words (without the probe list);
    ``alone``: the card has no other finding."""
    spread = "the same scores" if item.spread < 0.005 else \
        f"each score within {item.spread:.2f} of {item.like}'s"
    what = (f"the same {counted(len(item.probes), 'finding')}" if alone else
            f"{counted(len(item.probes), 'finding')} of {item.like}'s card")
    return f"Behaves like {item.like}: {what}, {spread}"


def _unshared(entries: Sequence[Finding], same: Any) -> list[Finding]:
    """A card's findings left once those it shares with an earlier card are named."""
    if same is None:
        return list(entries)
    shared = set(same.probes)
    return [f for f in entries if f.probe not in shared]


def findings_html(found: Mapping[str, Sequence[Finding]], shared: Sequence[Any] = (),
                  criteria: str = "", alike: Mapping[str, Any] | None = None) -> str:
    """The first screen's block (escaped HTML): the shared line, then a card per ranker, a
    numbered list each; every finding names its probe in code, linked to its row (a card
    that would repeat an earlier one says so in one line: ``alike``)."""
    from abnirml.report.html import esc

    if not found:
        return ""
    criteria = criteria or f"Per ranker, the effects that are {CRITERIA}."
    parts = ['<section id="findings" class="findings"><h2>Key findings</h2>']
    if shared:
        items = []
        for item in shared:
            words, scores = shared_text(item, len(found))
            items.append(f'{esc(words)} (<a href="#{esc(item.row_id)}"><code>'
                         f"{esc(item.probe)}</code></a>, {esc(scores)})")
        parts.append(f'<p class="shared"><b>Shared:</b> {"; ".join(items)}.</p>')
    parts.append(f'<p class="note">{esc(criteria)} Every probe and ranker is in the '
                 "sections below.</p><div class=\"cards\">")
    for ranker, entries in found.items():
        parts.append(f'<div class="card" data-ranker="{esc(ranker)}"><h3>{esc(ranker)}</h3>')
        same = (alike or {}).get(ranker)
        entries = _unshared(entries, same)
        if same is not None:
            links = ", ".join(_probe_link(p, ranker) for p in same.probes)
            parts.append(f'<p class="alike">{esc(alike_text(same, not entries))} '
                         f"({links}).</p>")
            if not entries:
                parts.append("</div>")
                continue
        if not entries:
            parts.append('<p class="note">No effect meets these criteria; see '
                         '<a href="#statistics">Statistics</a>.</p></div>')
            continue
        parts.append("<ol>")
        for f in entries:
            probe = (f'<a href="#{esc(f.row_id)}" class="probe" title="its row in the '
                     f'statistics table"><code>{esc(f.probe)}</code></a>')
            links = f' · <a href="#{esc(f.examples_id)}">samples</a>' if f.examples_id else ""
            numbers = esc(f.numbers).replace(" = ", "&nbsp;=&nbsp;").replace(" %", "&nbsp;%")
            hint = (f' <abbr class="hint" title="{esc(f.hint)}">why so wide?</abbr>'
                    if f.hint else "")
            if f.also:
                probe += "; the same numbers on " + ", ".join(
                    _probe_link(p, ranker) for p in f.also)
            parts.append(f'<li data-probe="{esc(f.probe)}">{esc(f.sentence)} ({probe})<br>'
                         f'<span class="num">{numbers}</span>{hint}'
                         f'<span class="links">{links}</span></li>')
        parts.append("</ol></div>")
    parts.append("</div></section>")
    return "\n".join(parts)


def _probe_link(probe: str, ranker: str) -> str:
    from abnirml.report.html import esc

    return (f'<a href="#{esc(anchor("row", probe, ranker))}" class="probe"><code>'
            f"{esc(probe)}</code></a>")


def findings_markdown(found: Mapping[str, Sequence[Finding]], shared: Sequence[Any] = (),
                      criteria: str = "", alike: Mapping[str, Any] | None = None
                      ) -> list[str]:
    """report.md's "Key findings" lines (after the title)."""
    from abnirml.markup import escape_md, escape_md_code

    if not found:
        return []
    criteria = criteria or f"Per ranker, the effects that are {CRITERIA}."
    lines = ["## Key findings", ""]
    if shared:
        items = []
        for item in shared:
            words, scores = shared_text(item, len(found))
            items.append(f"{escape_md(words)} (`{escape_md_code(item.probe)}`, {scores})")
        lines += [f"**Shared:** {'; '.join(items)}.", ""]
    lines.append(f"{escape_md(criteria)} Intervals and effect sizes of every probe: "
                 "[Intervals and effect sizes](#intervals-and-effect-sizes).")
    hints = False
    for ranker, entries in found.items():
        lines += ["", f"**{escape_md(ranker)}**", ""]
        same = (alike or {}).get(ranker)
        entries = _unshared(entries, same)
        if same is not None:
            probes = ", ".join(f"`{escape_md_code(p)}`" for p in same.probes)
            lines.append(f"{escape_md(alike_text(same, not entries))} ({probes}).")
            if not entries:
                continue
            lines.append("")
        if not entries:
            lines.append("No effect meets these criteria.")
        for i, f in enumerate(entries, 1):                       # ranked
            mark = " ‡" if f.hint else ""
            hints = hints or bool(f.hint)
            also = "".join(f"; the same numbers on `{escape_md_code(p)}`" for p in f.also)
            lines.append(f"{i}. {escape_md(f.sentence)} (`{escape_md_code(f.probe)}`{also}): "
                         f"{escape_md(f.numbers)}{mark}.")
    if hints:
        lines += ["", f"‡ {WIDE_NOTE}"]
    return lines


WIDE_NOTE = ("A perfect score over few queries keeps a wide interval: every sample agrees, "
             "but the interval is over queries, and a handful cannot rule out that other "
             "queries would disagree (an exact Clopper–Pearson bound on the share of queries "
             "that agree).")
