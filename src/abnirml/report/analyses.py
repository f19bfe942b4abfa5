"""Everything beyond the main tables, assembled from an output directory alone.

``write_reports(DIR)`` reads what ``abnirml run`` left there — ``results.jsonl``, ``run.json``,
``examples.jsonl``, ``scores.npz`` (per-sample scores), ``reranked/*.run`` (each ranker's
re-ranking of the candidates) and, when present, ``rank_origin.csv`` from
``abnirml rank-origin --out DIR`` — and renders ``report.md``, ``report.html`` and
``tables/*.csv|tex`` as text (:func:`render_reports`); :class:`abnirml.run_folder.RunFolder`
names and writes them. Nothing is rescored, so the report can be rebuilt at any time.

Sections: rankers and δ with the run's caveats; effectiveness and its correlation with
axiom fulfilment; one table per probe family with its caveats (plus axiom instance counts
and Câmara & Hauff's Tables 2 and 3); statistics; one rank-origin figure; δ sensitivity
curves; seed / checkpoint variance; example samples.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from abnirml.counts import counted_or_unknown
from abnirml.files.run_names import (
    CANDIDATE_RUN,
    DELTA_SWEEP,
    EXAMPLES,
    PER_QUERY,
    RANK_ORIGIN_CSV,
    RANK_ORIGIN_JSON,
    REPORT_HTML,
    REPORT_MD,
    RERANKED_DIR,
    RESULTS,
    RUN_INFO,
    SCORES,
    table_file,
)
from abnirml.markup import escape_md
from abnirml.rankers.base import file_label
from abnirml.report.html import Figure, Section, esc, examples_html, page
from abnirml.report.tables import (
    FamilyView,
    Table,
    all_samples_grid,
    family_table,
    family_views,
    mark_words,
    probe_labels,
    report_mark,
    signed_text,
    to_markdown,
)
from abnirml.run_record import RunInfo

# -- tables -------------------------------------------------------------------------------

RANKERS_TITLE = "Rankers and δ"
EFFECTIVENESS_TITLE = "Effectiveness (re-ranking the candidates)"


def rankers_table(run_info: RunInfo) -> Table | None:
    rankers = run_info.get("rankers") or []
    if not rankers:
        return None
    rows = [[str(r.get("name", "")), f"{float(r.get('delta', 0.0)):.6g}",
             str(r.get("delta_source", "")), str(r.get("calibration_queries", "")),
             str(r.get("fingerprint", ""))] for r in rankers]
    return Table(RANKERS_TITLE, ["Ranker", "δ", "δ source", "Calibration queries",
                                   "Fingerprint"], rows,
                 "δ: the median gap between adjacent top-10 scores of each ranker's re-ranking "
                 "of the candidates; score differences within ±δ count as ties.")


def axiom_counts_table(records: Sequence[Mapping[str, Any]]) -> Table | None:
    """Satisfied / violated / ties per probe and ranker, from the records of one axiom-layout
    family (the caller picks them)."""
    grid = all_samples_grid(records, "satisfied")
    if grid is None:
        return None
    rankers, cells = grid
    rows = []
    for probe, by_ranker in cells.items():
        row = [probe]
        for ranker in rankers:
            found = by_ranker.get(ranker)
            row.append("–" if found is None else
                       f"{found['satisfied']:,} / {found['violated']:,} / {found['ties']:,}")
        rows.append(row)
    return Table("Axiom instances: satisfied / violated / ties (raw scores, no δ)",
                 ["Probe", *rankers], rows,
                 "Rennings et al. count an instance satisfied when the favoured document "
                 "scores strictly higher.", parts=("satisfied", "violated", "ties"))


def effectiveness_tables(run_info: RunInfo, records: Sequence[Mapping[str, Any]]
                         ) -> tuple[Table | None, Table | None]:
    from abnirml.evaluation.analyses.effectiveness import axiom_fulfilment

    info = run_info.get("effectiveness") or {}
    values: Mapping[str, Mapping[str, float]] = info.get("rankers") or {}
    if not values:
        return None, None
    measures = list(info.get("measures") or next(iter(values.values())).keys())
    from abnirml.report.tables import layout_keys

    axiomatic = layout_keys(records, run_info, lambda layout: layout.axiom_instances)
    fulfilment = axiom_fulfilment(records, families=axiomatic)
    header = ["Ranker", *measures]          # ir_measures' names, in the CSV too
    if fulfilment:
        header.append("Axiom fulfilment")
    rows = []
    reference = info.get("candidate_run")
    if reference:
        rows.append([f"candidates ({info.get('candidates', 'first stage')})",
                     *[f"{reference[m]:.4f}" for m in measures]]
                    + (["–"] if fulfilment else []))
    for ranker, by_measure in values.items():
        rows.append([ranker, *[f"{by_measure[m]:.4f}" for m in measures]]
                    + ([f"{fulfilment[ranker]:.4f}" if ranker in fulfilment else "–"]
                       if fulfilment else []))
    effectiveness = Table(EFFECTIVENESS_TITLE, header, rows,
                          f"Measured with ir_measures over {info.get('queries', '?')} judged "
                          "queries, each measure under ir_measures' name: AP(rel=2) is MAP and "
                          "RR(rel=2) is MRR counting grade ≥ 2 as relevant. Per query: "
                          f"tables/{PER_QUERY_EFFECTIVENESS}.csv.")
    correlation = None
    if fulfilment:
        crow = []
        for m in measures:
            c = _correlation(fulfilment, values, m)
            crow.append([m, str(len(c.rankers)), _opt(c.kendall_tau),
                         _opt(c.kendall_p), _opt(c.pearson_r), _opt(c.pearson_p), c.note])
        correlation = Table("Axiom fulfilment vs effectiveness across rankers",
                            ["Measure", "Rankers", "Kendall τ", "p", "Pearson r", "p", "Note"],
                            crow, "Fulfilment: mean over axiom probes of the fraction of "
                                  "instances a ranker satisfies (Rennings et al.). p: "
                                  "two-sided tests of τ = 0 (tau-b) and r = 0 with one "
                                  "point per ranker, not corrected across the measures.")
    return effectiveness, correlation


PER_QUERY_EFFECTIVENESS = "per-query-effectiveness"
PER_QUERY_EFFECTIVENESS_FIELDS = ("run", "query_id", "measure", "value")


def per_query_effectiveness_csv(run_info: RunInfo) -> str | None:
    """tables/per-query-effectiveness.csv: one row per run × query × measure, as
    ``ir_measures.iter_calc`` yields them (``run`` is a ranker or ``candidates``); None
    when run.json holds no per-query values."""
    per_query = (run_info.get("effectiveness") or {}).get("per_query")
    if not per_query:
        return None
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(PER_QUERY_EFFECTIVENESS_FIELDS)
    for run_name, by_query in per_query.items():
        for qid, by_measure in by_query.items():
            for measure, value in by_measure.items():
                writer.writerow([run_name, qid, measure, format(float(value), ".10g")])
    return buffer.getvalue()


def _correlation(fulfilment: Mapping[str, float], values: Mapping[str, Mapping[str, float]],
                 measure: str) -> Any:
    """:func:`~abnirml.evaluation.analyses.effectiveness.correlate`, kept in the report value cache:
    its p-values need ``scipy.stats``, whose import costs a warm rerun more than the rest
    of the section. The key is the exact inputs, in order, and SciPy's version."""
    from abnirml.evaluation.analyses.effectiveness import Correlation, correlate
    from abnirml.report.plots import cached_json, package_version

    def compute() -> list[Any]:
        c = correlate(fulfilment, values, measure)
        return [list(c.rankers), c.kendall_tau, c.kendall_p, c.pearson_r, c.pearson_p, c.note]

    names, tau, tau_p, r, r_p, note = cached_json(
        "correlation", compute, list(fulfilment.items()),
        [(k, list(v.items())) for k, v in values.items()], measure, package_version("scipy"))
    return Correlation(measure, tuple(names), tau, tau_p, r, r_p, note)


def _opt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def variance_tables(records: Sequence[Mapping[str, Any]], groups: Mapping[str, Sequence[str]]
                    ) -> tuple[Table | None, Table | None]:
    from abnirml.evaluation.stats.variance import family_variance, probe_variance

    if not groups:
        return None, None
    variances = [v for v in probe_variance(records, groups) if v.subset == "all"]
    if not variances:
        return None, None
    names = list(groups)
    cells: dict[str, dict[str, Any]] = {}
    for v in variances:
        cells.setdefault(v.probe, {})[v.group] = v
    rows = []
    for probe, by_group in cells.items():
        row = [probe]
        for g in names:
            variance = by_group.get(g)
            if variance is None or variance.mean is None:
                row.append("–")
            else:
                row.append(f"{signed_text(variance.mean)} ± {variance.std:.2f}"
                           if variance.std is not None else signed_text(variance.mean))
        rows.append(row)
    per_probe = Table("Seed / checkpoint variance per probe (mean ± standard deviation)",
                      ["Probe", *names], rows,
                      "Groups: " + "; ".join(f"{g} = {', '.join(m)}" for g, m in groups.items())
                      + ". Sample standard deviation over the variants.")
    families = family_variance(variances)
    fam_cells = {(f.group, f.family): f for f in families}
    order = list(dict.fromkeys(k[1] for k in fam_cells))
    frows = [[family, *[("–" if (g, family) not in fam_cells
                         or fam_cells[(g, family)].mean_std is None
                         else f"{fam_cells[(g, family)].mean_std:.3f}") for g in names]]
             for family in order]
    per_family = Table("Average standard deviation per probe family (journal Table 4 layout)",
                       ["Family", *names], frows)
    return per_probe, per_family


# -- sections -----------------------------------------------------------------------------


def _load_json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8")) if path.is_file() else None


def _reranked_runs(directory: Path, run_info: RunInfo) -> tuple[Any, dict[str, Any]]:
    """The candidate run and each ranker's re-ranking of it, read from ``reranked/``."""
    from abnirml.data.trec import read_run

    info = run_info.get("effectiveness") or {}
    files: Mapping[str, str] = info.get("run_files") or {}
    reference_path = directory / RERANKED_DIR / CANDIDATE_RUN
    if not files or not reference_path.is_file():
        return None, {}
    runs = {ranker: read_run(directory / RERANKED_DIR / name) for ranker, name in files.items()
            if (directory / RERANKED_DIR / name).is_file()}
    return read_run(reference_path), runs


def _family_section(records: Sequence[Mapping[str, Any]], run_info: RunInfo,
                    view: Any, labels: Mapping[str, Sequence[str]]) -> Section | None:
    """A family's table (the transfer layout with its Discarded column for ``dtp``), its
    caveats, and for axioms the instance counts and Câmara & Hauff's Tables 2 and 3."""
    from abnirml.report.caveats import family_caveats
    from abnirml.report.intervals import significance_phrase

    family = view.key
    if view.report_layout.transfer_table:
        from abnirml.report.transfer_table import transfer_table

        table = transfer_table(records, view, labels)
    else:
        table = family_table(records, view, labels)
    caveats = [c.text for c in family_caveats(records, run_info, family)]
    if table is None and not caveats:
        return None
    mark = report_mark(run_info)
    section = Section(f"family-{family}", view.title,
                      f"Cells: probe score; {mark_words(mark)} "
                      f"({significance_phrase(run_info)}). Samples: per-row "
                      "sample count. Intervals and effect sizes: section Statistics.",
                      notes=caveats)
    if table is not None:
        section.tables.append((family, dataclasses.replace(table, title="", mark=mark)))
    if view.report_layout.axiom_instances:
        own = [r for r in records if r["family"] == family]
        counts_table = axiom_counts_table(own)
        if counts_table is not None:
            section.tables.append(("axiom-counts", counts_table))
        from abnirml.report.axiom_tables import axiom_report_tables

        for noted in axiom_report_tables(own):
            note = " ".join(x for x in (noted.table.note, noted.intro) if x)
            section.tables.append((noted.slug, dataclasses.replace(noted.table, note=note)))
    return section


def _origin_section(directory: Path, run_info: RunInfo) -> Section | None:
    """Rank origin of the re-rankings and of a rank_origin.csv: tables and one figure."""
    from abnirml.report import rank_origin_report as ro

    comparisons: list[ro.Comparison] = []
    skipped: list[str] = []
    reference, reranked = _reranked_runs(directory, run_info)
    if reference is not None:
        for ranker, fractions in ro.comparisons_from_runs(reference, reranked):
            if ro.is_self_comparison(fractions):
                skipped.append(ranker)
            else:
                comparisons.append(ro.Comparison(f"rank-origin-{file_label(ranker)}",
                                                 f"{ranker} vs the candidate run", fractions))
    origin_csv = directory / RANK_ORIGIN_CSV
    if origin_csv.is_file():
        from abnirml.evaluation.analyses.rank_origin import read_csv

        fractions_by_subset = read_csv(origin_csv)
        meta = _load_json(directory / RANK_ORIGIN_JSON) or {}
        label = f"{meta.get('run', 'run')} vs {meta.get('reference', 'reference')}"
        for subset, fractions in fractions_by_subset.items():
            title = f"{label} ({subset})"
            if ro.is_self_comparison(fractions):
                skipped.append(title)
            else:
                comparisons.append(ro.Comparison(f"rank-origin-file-{_slug(subset)}", title,
                                                 fractions))
    if not comparisons and not skipped:
        return None
    section = Section("rank-origin", "Rank origin",
                      "Rau & Kamps, figure 1: for each rank range of a ranking, the share of "
                      "its documents that came from each rank range of the reference ranking. "
                      "Reference ranges no document came from are left out.")
    note = ro.section_note(skipped)
    if note:
        section.notes.append(note)
    columns = ro.shown_columns(comparisons)
    for comparison in comparisons:
        section.tables.append((comparison.slug, ro.origin_table(comparison, columns)))
    if comparisons:
        _add_figure(section, lambda: Figure(
            "Rank origin", ro.origin_figure_png(comparisons, columns),
            "Rank origin: " + "; ".join(c.title for c in comparisons)))
    return section


@dataclass
class ReportInputs:
    """What every section builder reads: the run folder's records, run.json, examples and
    per-sample scores, the family views and row labels; ``data_files`` collects the data
    files the sections produce (relative path → text)."""

    directory: Path
    records: Sequence[Mapping[str, Any]]
    run_info: RunInfo
    examples: Sequence[Mapping[str, Any]]
    store: Any
    views: list[FamilyView]
    labels: dict[str, list[str]]
    data_files: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class SectionBuilder:
    """One part of the page: ``build`` makes its sections (none when the run has nothing
    for it). ``in_markdown``: report.md repeats the sections' notes and tables after its
    own text; the summary and the family tables are already in it
    (:func:`~abnirml.report.run_outputs.markdown_report`)."""

    key: str
    build: Callable[[ReportInputs], list[Section]]
    in_markdown: bool = True


def _summary(inputs: ReportInputs) -> list[Section]:
    """The rankers with δ and fingerprints, what served rankers cost, the run's caveats."""
    from abnirml.report.caveats import run_caveats
    from abnirml.report.listwise_section import usage_table
    from abnirml.report.run_outputs import pairs_sentence

    run_info = inputs.run_info
    summary = Section("summary", RANKERS_TITLE, notes=[c.text for c in run_caveats(run_info)])
    table = rankers_table(run_info)
    if table is not None:
        summary.tables.append(("rankers", table))
    usage = usage_table(run_info)
    if usage is not None:
        summary.tables.append(("usage", usage))
    counts = run_info.get("counts", {})
    if counts:
        summary.intro = f"Samples: {counts.get('samples', 0):,}; {pairs_sentence(run_info)}"
    return [summary]


def _effectiveness(inputs: ReportInputs) -> list[Section]:
    """nDCG@10, AP and RR of every ranker; per query as a data file."""
    from abnirml.report.caveats import run_caveats

    effectiveness, correlation = effectiveness_tables(inputs.run_info, inputs.records)
    per_query_effectiveness = per_query_effectiveness_csv(inputs.run_info)
    if per_query_effectiveness is not None:
        inputs.data_files[table_file(PER_QUERY_EFFECTIVENESS, "csv")] = per_query_effectiveness
    if effectiveness is None:
        return []
    section = Section("effectiveness", EFFECTIVENESS_TITLE)
    section.notes += [c.text for c in run_caveats(inputs.run_info) if c.kind == "lexical"]
    section.tables.append(("effectiveness", effectiveness))
    if correlation is not None:
        section.tables.append(("axiom-effectiveness", correlation))
    return [section]


def _families(inputs: ReportInputs) -> list[Section]:
    """One section per probe family, in the layout its view names."""
    built = (_family_section(inputs.records, inputs.run_info, view, inputs.labels)
             for view in inputs.views)
    return [section for section in built if section is not None]


def _statistics(inputs: ReportInputs) -> list[Section]:
    """Intervals, effect sizes and the queries behind each effect; per query as a data file."""
    from abnirml.report.intervals import statistics_section

    with_examples = {str(e.get("probe", "")) for e in inputs.examples}
    stats = statistics_section(inputs.store, inputs.records, inputs.run_info, with_examples)
    if stats is None:
        return []
    section, per_query = stats
    if per_query is not None:
        inputs.data_files[table_file(PER_QUERY, "csv")] = per_query
    return [section]


def _biases(inputs: ReportInputs) -> list[Section]:
    from abnirml.report.foil_section import foil_section

    section = foil_section(inputs.records, inputs.run_info)
    return [] if section is None else [section]


def _listwise(inputs: ReportInputs) -> list[Section]:
    from abnirml.report.listwise_section import listwise_section

    section, draw_curve = listwise_section(inputs.records, inputs.run_info)
    if section is None:
        return []
    if draw_curve is not None:
        _add_figure(section, draw_curve)
    return [section]


def _rank_origin(inputs: ReportInputs) -> list[Section]:
    section = _origin_section(inputs.directory, inputs.run_info)
    return [] if section is None else [section]


def _patching(inputs: ReportInputs) -> list[Section]:
    from abnirml.report.patching import patching_section

    section = patching_section(inputs.directory)
    return [] if section is None else [section]


def _delta_sweep(inputs: ReportInputs) -> list[Section]:
    """How the scores move with δ; needs the per-sample scores (scores.npz)."""
    from abnirml.report import plots

    if inputs.store is None:
        return []
    section, sweep_csv = _sweep_section(inputs.store, plots, [v.key for v in inputs.views])
    inputs.data_files[table_file(DELTA_SWEEP, "csv")] = sweep_csv
    return [section]


def _variance(inputs: ReportInputs) -> list[Section]:
    """Seed or checkpoint variance across the rankers of each ``--variant-group``."""
    per_probe, per_family = variance_tables(inputs.records,
                                            inputs.run_info.get("variant_groups", {}))
    if per_probe is None:
        return []
    section = Section("variance", "Seed / checkpoint variance")
    if per_family is not None:
        section.tables.append(("variance-families", per_family))
    section.tables.append(("variance-probes", per_probe))
    return [section]


def _examples_section(inputs: ReportInputs) -> list[Section]:
    if not inputs.examples:
        return []
    return [Section(
        "examples", "Example samples",
        "A few samples per probe: the query, both texts (words that differ are "
        "highlighted) and every ranker's scores. The statistics table links each "
        "probe × ranker row to its probe's samples.", blocks=[examples_html(inputs.examples)])]


#: The page's parts, in the order it shows them.
SECTION_BUILDERS: tuple[SectionBuilder, ...] = (
    SectionBuilder("summary", _summary, in_markdown=False),
    SectionBuilder("effectiveness", _effectiveness),
    SectionBuilder("families", _families, in_markdown=False),
    SectionBuilder("statistics", _statistics),
    SectionBuilder("biases", _biases),
    SectionBuilder("listwise", _listwise),
    SectionBuilder("rank-origin", _rank_origin),
    SectionBuilder("patching", _patching),
    SectionBuilder("delta-sweep", _delta_sweep),
    SectionBuilder("variance", _variance),
    SectionBuilder("examples", _examples_section),
)


def build_sections(directory: Path, records: Sequence[Mapping[str, Any]],
                   run_info: RunInfo,
                   examples: Sequence[Mapping[str, Any]] | None = None,
                   store: Any = None) -> tuple[list[Section], list[str], dict[str, str]]:
    """The page's sections (:data:`SECTION_BUILDERS`, in order), the markdown blocks that
    extend report.md, and the data files the sections produce (relative path → text);
    ``examples`` defaults to the folder's, ``store`` (per-sample scores) to its
    scores.npz."""
    inputs = ReportInputs(
        directory, records, run_info,
        _examples(directory) if examples is None else examples,
        _store(directory) if store is None else store,
        family_views(records, run_info), probe_labels(records, run_info))
    sections: list[Section] = []
    markdown: list[str] = []
    for builder in SECTION_BUILDERS:
        built = builder.build(inputs)
        sections += built
        if builder.in_markdown:
            markdown += _markdown_blocks(built, run_info)
    return sections, markdown, inputs.data_files


def _markdown_blocks(sections: Sequence[Section], run_info: RunInfo) -> list[str]:
    """report.md's copy of ``sections``: the notes not already at its top, then each table
    under its title, in the Markdown the family tables use."""
    from abnirml.report.caveats import run_caveats

    top = {c.text for c in run_caveats(run_info)}
    markdown: list[str] = []
    for section in sections:
        notes = [n for n in section.notes if n not in top]     # report.md: at the top
        if notes:
            markdown += (["", f"## {escape_md(section.title)}"]
                         + [line for n in notes for line in ("", n)])
        for _, table in section.tables:
            # Titles can hold user text (a ranker spec, a run's name): inert, like table cells.
            title = table.title or section.title
            markdown += ["", f"## {escape_md(title)}", ""]
            if table.note:
                markdown += [table.note, ""]
            markdown.append(to_markdown(table))
    return markdown


def _store(directory: Path) -> Any:
    """The folder's per-sample scores (scores.npz); None when the run wrote none."""
    path = directory / SCORES
    if not path.is_file():
        return None
    from abnirml.evaluation.execution.score_file import load_scores

    return load_scores(path)


def _examples(directory: Path) -> list[dict[str, Any]]:
    """examples.jsonl's samples; none when the run wrote no such file."""
    from abnirml.report.run_outputs import read_jsonl

    path = directory / EXAMPLES
    return read_jsonl(path) if path.is_file() else []


def _add_figure(section: Section, draw: Callable[..., Figure]) -> None:  # called bare
    """Draw a figure into ``section``; without matplotlib say so once instead of failing."""
    try:
        section.figures.append(draw())
    except ImportError:
        from abnirml.errors import install_hint

        note = f" (Figures need matplotlib: {install_hint('report', located=False)}.)"
        if note not in section.intro:
            section.intro += note


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "x"


SWEEP_FIELDS = ("probe", "family", "ranker", "subset", "percentile", "delta", "score", "n")


def _sweep_section(store: Any, plots: ModuleType, families: Sequence[str]
                   ) -> tuple[Section, str]:
    """The δ-sensitivity section and the text of tables/delta-sweep.csv."""
    from abnirml.evaluation.stats.sweep import sweep, sweep_rows

    section = Section("delta-sweep", "δ sensitivity",
                      "Probe scores with δ set to each percentile of the ranker's adjacent "
                      "top-10 score gaps (journal ABNIRML §4.1); the dashed line is the "
                      "operating point, the median. Each ranker keeps one look in every panel; "
                      "where curves coincide they are drawn over each other and the panel "
                      "notes it (a = b). Data: tables/delta-sweep.csv.")
    every = sweep(store)
    points = [p for p in every if p.subset == "all"]     # = sweep(store, subsets=["all"])
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(SWEEP_FIELDS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(sweep_rows(every))
    if not points:
        section.intro += " No ranker has calibration gaps (every δ was given), so no curves."
        return section, buffer.getvalue()
    symmetric = {p.name: p.symmetric for p in store.probes}
    for family in families:
        chosen = [p for p in points if p.family == family]
        if chosen and plots.curve_groups(chosen):
            _add_figure(section, lambda c=chosen, f=family: Figure(
                f"δ sweep: {f}",
                plots.delta_curves(c, f"{f.upper()}: score vs δ percentile",
                                   symmetric=symmetric),
                f"{f}: probe score against δ percentile"))
    return section, buffer.getvalue()


# -- rendering ----------------------------------------------------------------------------

def render_reports(directory: Path, records: Sequence[Mapping[str, Any]] | None = None,
                   run_info: RunInfo | None = None) -> dict[str, str]:
    """report.md, report.html and tables/* of the run in ``directory`` as relative path →
    text. Only renders: :meth:`abnirml.run_folder.RunFolder.write_reports` writes them."""
    from abnirml.report.export import to_csv, to_latex
    from abnirml.report.run_outputs import (
        markdown_report,
        read_results,
        read_run_info,
        with_contents,
    )

    if records is None:
        records = read_results(directory / RESULTS)
    if run_info is None:
        run_info = read_run_info(directory / RUN_INFO)
    examples = _examples(directory)
    store = _store(directory)
    sections, extra_markdown, data_files = build_sections(directory, records, run_info,
                                                          examples, store)
    from abnirml.report.findings import findings_html, first_screen
    from abnirml.report.run_outputs import source_text

    screen = first_screen(records, run_info, {str(e.get("probe", "")) for e in examples},
                          store)
    files: dict[str, str] = {}
    for section in sections:
        for slug, table in section.tables:
            titled = table if table.title else dataclasses.replace(table, title=section.title)
            files[table_file(slug, "csv")] = to_csv(titled)
            files[table_file(slug, "tex")] = to_latex(titled, label=f"tab:{slug}")
    files.update(data_files)
    markdown = markdown_report(list(records), run_info, screen)
    if extra_markdown:
        markdown += "\n".join(extra_markdown) + "\n"
    files[REPORT_MD] = with_contents(markdown)
    collection: Mapping[str, Any] = run_info.get("collection", {})
    preface = (f'<p class="note">Collection: <b>{esc(collection.get("name", "?"))}</b> '
               f'({esc(source_text(collection))}); '
               f'{esc(counted_or_unknown(collection.get("queries"), "query"))}, '
               f'{esc(counted_or_unknown(collection.get("documents"), "document"))}. '
               "Built from the "
               "files in this directory; <code>abnirml report DIR</code> rebuilds it.</p>")
    files[REPORT_HTML] = page("abnirml report", sections, preface,
                              findings_html(screen.found, screen.shared, screen.criteria,
                                            screen.alike))
    return files
