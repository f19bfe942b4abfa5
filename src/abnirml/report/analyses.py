"""Everything beyond the main tables, assembled from an output directory alone.

``write_reports(DIR)`` reads what ``abnirml run`` left there — ``results.jsonl``, ``run.json``,
``examples.jsonl``, ``scores.npz`` (per-sample scores), ``reranked/*.run`` (each ranker's
re-ranking of the candidates) and, when present, ``rank_origin.csv`` from
``abnirml rank-origin --out DIR`` — and writes ``report.md``, ``report.html`` and
``tables/*.csv|tex``. Nothing is rescored, so the report can be rebuilt at any time.

Sections: rankers and δ; effectiveness and its correlation with axiom fulfilment; one table
per probe family (plus axiom instance counts); rank origin heatmaps; δ sensitivity curves;
seed / checkpoint variance; example samples.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from abnirml.rankers.base import file_label
from abnirml.report.html import Figure, Section, esc, examples_html, page
from abnirml.report.tables import Table, family_table, family_views, probe_labels, to_markdown
from abnirml.run_files import CANDIDATE_RUN, RERANKED_DIR

# -- tables -------------------------------------------------------------------------------

def rankers_table(run_info: Mapping[str, Any]) -> Table | None:
    rankers = run_info.get("rankers") or []
    if not rankers:
        return None
    rows = [[str(r.get("name", "")), f"{float(r.get('delta', 0.0)):.6g}",
             str(r.get("delta_source", "")), str(r.get("calibration_queries", "")),
             str(r.get("fingerprint", ""))] for r in rankers]
    return Table("Rankers and δ", ["Ranker", "δ", "δ source", "Calibration queries",
                                   "Fingerprint"], rows,
                 "δ: the median gap between adjacent top-10 scores of each ranker's re-ranking "
                 "of the candidates; score differences within ±δ count as ties.")


def axiom_counts_table(records: Sequence[Mapping[str, Any]]) -> Table | None:
    chosen = [r for r in records if r.get("family") == "axiom" and "satisfied" in r
              and r.get("subset") == "all"]
    if not chosen:
        return None
    rankers = list(dict.fromkeys(r["ranker"] for r in chosen))
    cells: dict[str, dict[str, Mapping[str, Any]]] = {}
    for r in chosen:
        cells.setdefault(r["probe"], {})[r["ranker"]] = r
    rows = []
    for probe, by_ranker in cells.items():
        row = [probe]
        for ranker in rankers:
            r = by_ranker.get(ranker)
            row.append("–" if r is None else
                       f"{r['satisfied']:,} / {r['violated']:,} / {r['ties']:,}")
        rows.append(row)
    return Table("Axiom instances: satisfied / violated / ties (raw scores, no δ)",
                 ["Probe", *rankers], rows,
                 "Rennings et al. count an instance satisfied when the favoured document "
                 "scores strictly higher.")


def effectiveness_tables(run_info: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
                         ) -> tuple[Table | None, Table | None]:
    from abnirml.evaluation.effectiveness import LABELS, axiom_fulfilment, correlate

    info = run_info.get("effectiveness") or {}
    values: Mapping[str, Mapping[str, float]] = info.get("rankers") or {}
    if not values:
        return None, None
    measures = list(info.get("measures") or next(iter(values.values())).keys())
    fulfilment = axiom_fulfilment(records)
    header = ["Ranker", *[LABELS.get(m, m) for m in measures]]
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
    effectiveness = Table("Effectiveness (re-ranking the candidates)", header, rows,
                          f"Measured with ir_measures over {info.get('queries', '?')} judged "
                          "queries; MAP and MRR count grade ≥ 2 as relevant.")
    correlation = None
    if fulfilment:
        crow = []
        for m in measures:
            c = correlate(fulfilment, values, m)
            crow.append([LABELS.get(m, m), str(len(c.rankers)), _opt(c.kendall_tau),
                         _opt(c.kendall_p), _opt(c.pearson_r), _opt(c.pearson_p), c.note])
        correlation = Table("Axiom fulfilment vs effectiveness across rankers",
                            ["Measure", "Rankers", "Kendall τ", "p", "Pearson r", "p", "Note"],
                            crow, "Fulfilment: mean over axiom probes of the fraction of "
                                  "instances a ranker satisfies (Rennings et al.).")
    return effectiveness, correlation


def _opt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def variance_tables(records: Sequence[Mapping[str, Any]], groups: Mapping[str, Sequence[str]]
                    ) -> tuple[Table | None, Table | None]:
    from abnirml.evaluation.variance import family_variance, probe_variance

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
            v = by_group.get(g)
            if v is None or v.mean is None:
                row.append("–")
            else:
                row.append(f"{v.mean:+.2f} ± {v.std:.2f}" if v.std is not None
                           else f"{v.mean:+.2f}")
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


def rank_origin_table(fractions: Mapping[str, Mapping[str, Mapping[str, float]]], subset: str,
                      title: str) -> Table:
    rows_map = fractions[subset]
    columns = list(dict.fromkeys(c for row in rows_map.values() for c in row))
    rows = [[row, *[f"{100 * values.get(c, 0.0):.1f}%" for c in columns]]
            for row, values in rows_map.items()]
    return Table(title, ["Run rank", *columns], rows,
                 "Each row: where the documents at these ranks came from in the reference run "
                 "(row sums to 100%).")


# -- sections -----------------------------------------------------------------------------

def _load_json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8")) if path.is_file() else None


def _origin_from_runs(directory: Path, run_info: Mapping[str, Any]
                      ) -> list[tuple[str, dict[str, dict[str, dict[str, float]]]]]:
    """Rank origin of each ranker's re-ranking against the candidate run (from files)."""
    from abnirml.data.trec import read_run
    from abnirml.evaluation.rank_origin import DEFAULT_RANGES, rank_origin

    info = run_info.get("effectiveness") or {}
    files: Mapping[str, str] = info.get("run_files") or {}
    reference_path = directory / RERANKED_DIR / CANDIDATE_RUN
    if not files or not reference_path.is_file():
        return []
    reference = read_run(reference_path)
    depth = max((len(v) for v in reference.values()), default=0)
    ranges = tuple(r for r in DEFAULT_RANGES if r.lo <= max(depth, 1))
    out = []
    for ranker, name in files.items():
        path = directory / RERANKED_DIR / name
        if not path.is_file():
            continue
        origin = rank_origin(reference, read_run(path), None, ranges)
        fractions = {"all": {row: {c: origin.fraction("all", row, c) for c in origin.columns}
                             for row in origin.rows("all")}}
        out.append((ranker, fractions))
    return out


def build_sections(directory: Path, records: Sequence[Mapping[str, Any]],
                   run_info: Mapping[str, Any]) -> tuple[list[Section], list[str]]:
    """The page's sections and the markdown blocks that extend report.md."""
    from abnirml.report import plots

    sections: list[Section] = []
    markdown: list[str] = []

    summary = Section("summary", "Rankers and δ")
    table = rankers_table(run_info)
    if table is not None:
        summary.tables.append(("rankers", table))
    counts = run_info.get("counts") or {}
    if counts:
        summary.intro = (f"Samples: {counts.get('samples', 0):,}; unique (query, document) pairs "
                         f"per ranker: {counts.get('unique_pairs', 0):,}.")
    sections.append(summary)

    effectiveness, correlation = effectiveness_tables(run_info, records)
    if effectiveness is not None:
        section = Section("effectiveness", "Effectiveness")
        section.tables.append(("effectiveness", effectiveness))
        if correlation is not None:
            section.tables.append(("axiom-effectiveness", correlation))
        sections.append(section)

    from abnirml.report.intervals import significance_phrase, statistics_section

    labels = probe_labels(records, run_info)
    views = family_views(records, run_info)
    for view in views:
        family = view.key
        table = family_table(records, view, labels)
        if table is None:
            continue
        section = Section(f"family-{family}", table.title,
                          "Cells: probe score; a leading * marks a score that is not "
                          f"significant ({significance_phrase(run_info)}). Samples: per-row "
                          "sample count. Intervals and effect sizes: section Statistics.")
        section.tables.append((family, dataclasses.replace(table, title="")))
        section.tinted.add(family)
        if view.layout == "axiom":
            counts_table = axiom_counts_table(records)
            if counts_table is not None:
                section.tables.append(("axiom-counts", counts_table))
        sections.append(section)

    stats_section = statistics_section(directory, records, run_info)
    if stats_section is not None:
        sections.append(stats_section)

    origin_section = Section("rank-origin", "Rank origin",
                             "Rau & Kamps, figure 1: for each rank range of a ranking, the "
                             "share of its documents that came from each rank range of the "
                             "reference ranking.")
    for ranker, fractions in _origin_from_runs(directory, run_info):
        title = f"{ranker} vs the candidate run"
        t = rank_origin_table(fractions, "all", title)
        origin_section.tables.append((f"rank-origin-{file_label(ranker)}", t))
        _add_figure(origin_section, lambda f=fractions, t=title: _origin_figure(plots, f, "all", t))
    origin_csv = directory / "rank_origin.csv"
    if origin_csv.is_file():
        from abnirml.evaluation.rank_origin import read_csv

        fractions = read_csv(origin_csv)
        meta = _load_json(directory / "rank_origin.json") or {}
        label = f"{meta.get('run', 'run')} vs {meta.get('reference', 'reference')}"
        for subset in fractions:
            title = f"{label} ({subset})"
            origin_section.tables.append((f"rank-origin-file-{_slug(subset)}",
                                          rank_origin_table(fractions, subset, title)))
            _add_figure(origin_section,
                        lambda s=subset, t=title: _origin_figure(plots, fractions, s, t))
    if origin_section.tables:
        sections.append(origin_section)

    store_path = directory / "scores.npz"
    if store_path.is_file():
        sections.append(_sweep_section(directory, store_path, plots,
                                       [v.key for v in views]))

    groups = run_info.get("variant_groups") or {}
    per_probe, per_family = variance_tables(records, groups)
    if per_probe is not None:
        section = Section("variance", "Seed / checkpoint variance")
        if per_family is not None:
            section.tables.append(("variance-families", per_family))
        section.tables.append(("variance-probes", per_probe))
        sections.append(section)

    examples_path = directory / "examples.jsonl"
    if examples_path.is_file():
        from abnirml.report.files import read_jsonl

        examples = read_jsonl(examples_path)
        if examples:
            sections.append(Section(
                "examples", "Example samples",
                "A few samples per probe: the query, both texts (words that differ are "
                "highlighted) and every ranker's scores.", blocks=[examples_html(examples)]))

    for section in sections:
        if section.key.startswith("family-") or section.key == "summary":
            continue
        for _, table in section.tables:
            markdown += ["", f"## {table.title}", ""]
            if table.note:
                markdown += [table.note, ""]
            markdown.append(to_markdown(table))
    return sections, markdown


def _add_figure(section: Section, draw) -> None:
    """Draw a figure into ``section``; without matplotlib say so once instead of failing."""
    try:
        section.figures.append(draw())
    except ImportError:
        note = " (Figures need matplotlib: pip install 'abnirml[report]'.)"
        if note not in section.intro:
            section.intro += note


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "x"


def _origin_figure(plots, fractions, subset: str, title: str) -> Figure:
    rows_map = fractions[subset]
    rows = list(rows_map)
    columns = list(dict.fromkeys(c for row in rows_map.values() for c in row))
    matrix = [[rows_map[r].get(c, 0.0) for c in columns] for r in rows]
    png = plots.heatmap(matrix, rows, columns, title, "reference rank", "run rank")
    return Figure(f"Rank origin: {title}", png, f"Rank origin: {title}")


def _sweep_section(directory: Path, store_path: Path, plots, families: Sequence[str]
                   ) -> Section:
    from abnirml.evaluation.score_file import load_scores
    from abnirml.evaluation.sweep import sweep, sweep_rows

    store = load_scores(store_path)
    section = Section("delta-sweep", "δ sensitivity",
                      "Probe scores with δ set to each percentile of the ranker's adjacent "
                      "top-10 score gaps (journal ABNIRML §4.1); the dashed line is the "
                      "operating point, the median. Data: tables/delta-sweep.csv.")
    points = sweep(store, subsets=["all"])
    rows = sweep_rows(sweep(store))
    tables_dir = directory / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["probe", "family", "ranker", "subset",
                                                "percentile", "delta", "score", "n"],
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (tables_dir / "delta-sweep.csv").write_text(buffer.getvalue(), encoding="utf-8")
    if not points:
        section.intro += " No ranker has calibration gaps (every δ was given), so no curves."
        return section
    symmetric = {p.name: p.symmetric for p in store.probes}
    for family in families:
        chosen = [p for p in points if p.family == family]
        if chosen:
            _add_figure(section, lambda c=chosen, f=family: Figure(
                f"δ sweep: {f}",
                plots.delta_curves(c, f"{f.upper()}: score vs δ percentile",
                                   symmetric=symmetric),
                f"{f}: probe score against δ percentile"))
    return section


# -- writing ------------------------------------------------------------------------------

def write_reports(directory: Path, records: Sequence[Mapping[str, Any]] | None = None,
                  run_info: Mapping[str, Any] | None = None) -> list[Path]:
    """(Re)write report.md, report.html and tables/* of ``directory``; returns the paths."""
    from abnirml.report.export import write_table
    from abnirml.report.files import markdown_report, read_results

    if records is None:
        records = read_results(directory / "results.jsonl")
    if run_info is None:
        run_info = _load_json(directory / "run.json") or {}
    sections, extra_markdown = build_sections(directory, records, run_info)
    written: list[Path] = []
    tables_dir = directory / "tables"
    for section in sections:
        for slug, table in section.tables:
            titled = table if table.title else dataclasses.replace(table, title=section.title)
            written += write_table(tables_dir, slug, titled)
    markdown = markdown_report(list(records), run_info)
    if extra_markdown:
        markdown += "\n".join(extra_markdown) + "\n"
    (directory / "report.md").write_text(markdown, encoding="utf-8")
    collection = (run_info.get("collection") or {})
    preface = (f'<p class="note">Collection: <b>{esc(collection.get("name", "?"))}</b> '
               f'({esc(collection.get("source", ""))}); {esc(collection.get("queries", "?"))} '
               f'queries, {esc(collection.get("documents", "?"))} documents. Built from the '
               "files in this directory; <code>abnirml report DIR</code> rebuilds it.</p>")
    (directory / "report.html").write_text(page("abnirml report", sections, preface),
                                           encoding="utf-8")
    written += [directory / "report.md", directory / "report.html"]
    return written
