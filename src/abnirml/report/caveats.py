"""Every caveat of a run, built once from its data and rendered by report.md and report.html.

A caveat is anything a reader needs to judge the numbers that no table cell shows: judged
documents the collection has no text for, samples a probe skipped, transfer data that was
not found, and where lexical rankers take their statistics from. Both reports render this
one list (:func:`run_caveats` for the run, :func:`family_caveats` per probe family), so the
page can never hide what the markdown says, and a test checks every caveat appears in both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abnirml.counts import counted
from abnirml.markup import escape_md, escape_md_code
from abnirml.run_record import RunInfo, statistics_of

#: fingerprint prefixes of the rankers that compute their statistics over the collection
LEXICAL_FINGERPRINTS = ("BM25[", "QueryLikelihood[", "TFIDF[")
#: the measure the lexical-statistics caveat quotes
MEASURE = "nDCG@10"


@dataclass(frozen=True)
class Caveat:
    """One caveat: ``family`` is the probe family it concerns (None: the whole run);
    ``kind`` says what it is about and so where it is shown (``note``, ``lexical``: also
    beside the effectiveness table, ``skipped``, ``no-data``)."""

    text: str
    family: str | None = None
    kind: str = "note"
    #: the caveat as report.md words it, when that differs from ``text`` (code spans)
    markdown: str = ""

    @property
    def in_markdown(self) -> str:
        return self.markdown or self.text


def run_caveats(run_info: RunInfo) -> list[Caveat]:
    """Caveats about the whole run: documents without text, lexical statistics."""
    out: list[Caveat] = []
    skipped = run_info.get("skipped") or {}
    judged_missing = int(skipped.get("judged_without_text") or 0)
    candidates_missing = int(skipped.get("candidates_without_text") or 0)
    if judged_missing:
        judgments = run_info.get("collection", {}).get("judgments")
        of = f" of {judgments:,}" if isinstance(judgments, int) else ""
        out.append(Caveat(
            f"Judged documents without text: {judged_missing:,}{of} judgments name a document "
            "the collection has no text for; every probe built from judgments leaves them "
            "out (run.json: skipped.judged_without_text)."))
    if candidates_missing:
        out.append(Caveat(
            f"Candidates without text: {counted(candidates_missing, 'document')} of the "
            "candidate run have no text and are neither re-ranked nor used for δ calibration "
            "(run.json: skipped.candidates_without_text)."))
    others = {k: v for k, v in sorted(skipped.items())
              if v and k not in ("judged_without_text", "candidates_without_text")}
    if others:
        out.append(Caveat("Also skipped and counted: " + ", ".join(
            f"{k} = {v:,}" for k, v in others.items()) + "."))
    for omitted in run_info.get("omitted_probes") or []:
        probe, reason = str(omitted.get("probe", "")), str(omitted.get("reason", ""))
        out.append(Caveat(f"Left out: {probe}: {reason}.", kind="omitted",
                          markdown=f"Left out: `{escape_md_code(probe)}`: "
                                   f"{escape_md(reason)}."))
    lexical = _lexical_statistics(run_info)
    if lexical is not None:
        out.append(Caveat(lexical, kind="lexical"))
    return out


def _lexical_statistics(run_info: RunInfo) -> str | None:
    """Where BM25, QL and TF-IDF take N, df, cf and lengths from, and what that costs."""
    names = [str(r.get("name")) for r in run_info.get("rankers") or []
             if str(r.get("fingerprint", "")).startswith(LEXICAL_FINGERPRINTS)]
    if not names:
        return None
    documents = run_info.get("collection", {}).get("documents")
    count = f"{documents:,} " if isinstance(documents, int) else ""
    verb = "takes" if len(names) == 1 else "take"
    text = (f"Lexical statistics: {', '.join(names)} {verb} N, document frequencies and "
            f"lengths from the collection's own {count}documents with text, not from the "
            "full corpus a first-stage run was retrieved from")
    effectiveness = run_info.get("effectiveness") or {}
    reference = (effectiveness.get("candidate_run") or {}).get(MEASURE)
    scores = effectiveness.get("rankers") or {}
    shown = [f"{scores[name][MEASURE]:.3f} ({name})" for name in names
             if MEASURE in (scores.get(name) or {})]
    if reference is None or not shown:
        return text + "."
    candidates = effectiveness.get("candidates") or "the candidate run"
    return (text + f": re-ranking the candidates ({candidates}) gives {MEASURE} "
            + ", ".join(shown) + f" against {reference:.3f} for the candidate run's own order.")


def family_caveats(records: Sequence[Mapping[str, Any]], run_info: RunInfo,
                   family: str) -> list[Caveat]:
    """Caveats of one probe family: significance the query-clustered interval does not
    back, its skipped samples, transfer data not found."""
    out: list[Caveat] = []
    unbacked = unbacked_significance(records, run_info, family)
    if unbacked is not None:
        out.append(unbacked)
    from abnirml.report.tables import family_views

    view = next((v for v in family_views(records, run_info) if v.key == family), None)
    if view is not None and view.report_layout.transfer_table:
        from abnirml.report.transfer_table import missing_data_lines

        out += [Caveat(line, family, "no-data")
                for line in missing_data_lines(records, run_info, family)]
        return out       # the transfer table's Discarded column holds its skip counts
    skips = skip_lines(records, family)
    if skips:
        unit = view.skips_counted if view is not None else "samples"
        out.append(Caveat(f"Skipped {unit}: " + "; ".join(skips) + ".", family, "skipped"))
    return out


def unbacked_significance(records: Sequence[Mapping[str, Any]], run_info: RunInfo,
                          family: str, shown: int = 3) -> Caveat | None:
    """Significant results whose query-clustered interval of the mean difference contains 0.

    The t-test, Wilcoxon and permutation tests treat every sample as independent, but the
    samples of one query share documents and a query; when the interval that resamples
    queries still contains 0, the significance rests on that independence. The bootstrap
    test resamples queries itself, so it gets no such caveat.
    """
    from abnirml.evaluation.stats.stat_tests import find_test

    statistics = statistics_of(run_info)
    test = find_test(statistics["test"])
    if test is not None and test.queries_as_unit:
        return None
    chosen = [r for r in records if r["family"] == family and r.get("significant")]
    unbacked = [r for r in chosen if r.get("mean_diff_ci_low") is not None
                and r.get("mean_diff_ci_high") is not None
                and r["mean_diff_ci_low"] <= 0.0 <= r["mean_diff_ci_high"]]
    if not unbacked:
        return None
    level = statistics["ci"]
    examples = ", ".join(f"{r['probe']} {r['ranker']} ({r['subset']})"
                         for r in unbacked[:shown])
    more = f" and {len(unbacked) - shown:,} more" if len(unbacked) > shown else ""
    return Caveat(
        f"{len(unbacked):,} of {len(chosen):,} significant results have a "
        f"{100 * level:g} % query-clustered interval of the mean difference that contains "
        f"0: {examples}{more}. Their test treats samples of one query as independent; "
        "the default --test clustered tests with queries as the unit.", family, "note")


def all_caveats(records: Sequence[Mapping[str, Any]], run_info: RunInfo
                ) -> list[Caveat]:
    """Every caveat of the run, run-wide ones first, then per family in run order."""
    families = list(dict.fromkeys(r["family"] for r in records))
    return run_caveats(run_info) + [c for f in families
                                    for c in family_caveats(records, run_info, f)]


def skip_lines(records: Iterable[Mapping[str, Any]], family: str) -> list[str]:
    """One entry per distinct set of skip counts, naming the probes that share it."""
    records = list(records)
    seen: dict[str, dict[str, int]] = {}
    for r in records:
        if r["family"] == family and r.get("skipped"):
            seen.setdefault(r["probe"], r["skipped"])
    groups: dict[str, list[str]] = {}
    for probe, counts in seen.items():
        text = ", ".join(f"{k} {v:,}" for k, v in counts.items())
        groups.setdefault(text, []).append(probe)
    family_size = len({r["probe"] for r in records if r["family"] == family})
    return [(f"every probe: {text}" if len(probes) == family_size and family_size > 1
             else f"{', '.join(probes)}: {text}") for text, probes in groups.items()]
