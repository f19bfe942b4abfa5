"""Rendering and reading the files of an experiment's output directory (RunFolder writes).

``results.jsonl``  one JSON object per probe × ranker × subset (the public schema);
``report.md``      the tables in the papers' layout;
``run.json``       what was run: collection, rankers with δ, options, counts;
``calibration.json`` every ranker's calibration gaps (for δ sweeps without rescoring);
``examples.jsonl`` a few samples per probe with both scores, for the HTML report.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from abnirml.counts import counted_or_unknown
from abnirml.errors import ConfigError, InputError
from abnirml.report.axiom_tables import axiom_sections
from abnirml.report.tables import (
    MARK_SIGNIFICANT,
    escape_md,
    escape_md_code,
    family_table,
    family_views,
    probe_labels,
    report_mark,
    score_legend,
    to_markdown,
)
from abnirml.result_fields import ResultRow, row_problem
from abnirml.run_record import RunInfo, field_line, located_problem, run_info_problem


def dumps(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=False, allow_nan=False)


def jsonl_text(records: Iterable[Mapping[str, Any]]) -> str:
    """JSON lines, one record each (results.jsonl, examples.jsonl)."""
    return "".join(dumps(record) + "\n" for record in records)


def json_text(value: Any) -> str:
    """Indented JSON (run.json, calibration.json)."""
    return json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    from abnirml.data.trec import iter_json_objects

    return [record for _, record in iter_json_objects(path)]


def results_text(rows: Iterable[Mapping[str, Any]], row_type: Any = ResultRow) -> str:
    """``results.jsonl``'s text, every row first checked against ``row_type`` (the schema
    the reference page lists), so a run never writes a row its own documentation does not
    describe. Each row keeps its own key order: the order the engine computed the fields."""
    rows = list(rows)
    for row in rows:
        problem = row_problem(row, row_type)
        if problem is not None:
            where = " × ".join(str(row.get(k, "?")) for k in ("probe", "ranker", "subset"))
            raise ConfigError(f"result row {where}: {problem}")
    return jsonl_text(rows)


def read_results(path: Path, row_type: Any = ResultRow) -> list[ResultRow]:
    """``results.jsonl``'s rows, each checked against ``row_type``: a missing required
    field, a value of another type, or a number JSON does not have (``NaN``,
    ``Infinity``, which Python's reader accepts and the writer never writes) is one error
    naming the file and line; a file with no row is refused too, since every run writes
    one per probe and ranker and a frame or report of nothing would look like a result."""
    from abnirml.data.trec import iter_json_objects

    rows: list[ResultRow] = []
    for number, record in iter_json_objects(path):
        problem = row_problem(record, row_type) or _non_finite(record)
        if problem is not None:
            raise InputError(problem, path=path, line=number)
        rows.append(record)  # type: ignore[arg-type]   # checked just above
    if not rows:
        raise InputError("holds no result records (an 'abnirml run' writes one per probe "
                         "and ranker)", path=path)
    return rows


def _non_finite(record: Mapping[str, Any]) -> str | None:
    """Which field holds NaN or an infinity (at any depth), in one sentence; None if none."""
    import math

    def bad(value: Any) -> float | None:
        if isinstance(value, float) and not math.isfinite(value):
            return value
        values = value.values() if isinstance(value, dict) else \
            value if isinstance(value, list) else ()
        return next((b for b in map(bad, values) if b is not None), None)

    for key, value in record.items():
        found = bad(value)
        if found is not None:
            word = "NaN" if math.isnan(found) else ("Infinity" if found > 0 else "-Infinity")
            return (f"field {key!r} holds {word}, which results.jsonl never holds (a missing "
                    "value is null)")
    return None


def run_info_text(run_info: RunInfo) -> str:
    """``run.json``'s text, first checked against :class:`~abnirml.run_record.RunInfo` (the
    declaration the reference page lists), so a run never writes a record its reader
    would refuse."""
    problem = run_info_problem(run_info)
    if problem is not None:
        raise ConfigError(f"run.json: {problem}")
    return json_text(run_info)


def read_run_info(path: Path) -> RunInfo:
    """``run.json`` as a :class:`~abnirml.run_record.RunInfo` ({} when absent): the one
    reader of the file. Malformed JSON, a folder of that name, or a record that does not
    fit the declaration (a section that is not an object, a ranker without its δ, a
    number written as text …) is one error naming the file and the field, rather than a
    report silently rendered without it or a traceback half way through one."""
    if path.is_dir():
        raise InputError("is a folder; expected the JSON file 'abnirml run' writes",
                         path=path)
    if not path.is_file():
        return {}
    from abnirml.data.trec import parse_json_line

    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read it ({exc})", path=path) from None
    try:                                # the line a syntax error is on (run.json is indented)
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg})", path=path, line=exc.lineno) from None
    except (ValueError, RecursionError):
        pass                            # parse_json_line words these
    info = parse_json_line(text, path, 1) if text.strip() else None
    if not isinstance(info, dict):
        raise InputError("expected a JSON object (written by 'abnirml run')", path=path)
    found = located_problem(info)
    if found is not None:
        problem, where = found
        raise InputError(f"{problem} (expected the record 'abnirml run' writes; see the "
                         "run.json reference)", path=path, line=field_line(text, where))
    return cast(RunInfo, info)



def source_text(collection: Mapping[str, Any]) -> str:
    """Where the collection came from, as the report shows it: the path or dataset id run.json
    records, except that the demo shipped inside the package is "the demo shipped with
    abnirml" — its path names only the machine it was installed on."""
    source = str(collection.get("source", ""))
    packaged = Path(source).parts[-3:] == ("abnirml", "data", "demo")
    return "the demo shipped with abnirml" if collection.get("name") == "demo" and packaged \
        else source

def markdown_report(records: list[Mapping[str, Any]], run_info: RunInfo,
                    screen: Any = None) -> str:
    """report.md's text; ``screen`` is the first screen the page shows
    (:func:`~abnirml.report.findings.first_screen`), else the per-ranker key findings."""
    parts = ["# abnirml report", ""]
    collection = run_info.get("collection", {})
    if collection:
        parts.append(f"Collection: **{escape_md(collection.get('name'))}** "
                     f"({escape_md(source_text(collection))}); "
                     f"{counted_or_unknown(collection.get('queries'), 'query')}, "
                     f"{counted_or_unknown(collection.get('documents'), 'document')} with text.")
    from abnirml.report.caveats import family_caveats, run_caveats
    from abnirml.report.findings import findings_markdown, first_screen

    if screen is None:
        screen = first_screen(records, run_info)
    findings = findings_markdown(screen.found, screen.shared, screen.criteria,
                                 screen.alike)  # answer first
    if findings:
        parts += ["", *findings, "", "## The run"]

    caveats = [c for c in run_caveats(run_info) if c.kind != "omitted"]
    if caveats:
        parts += ["", "Caveats:", ""] + [f"- {c.text}" for c in caveats]
    parts += [line for c in run_caveats(run_info) if c.kind == "omitted"
              for line in ("", c.in_markdown)]
    rankers = run_info.get("rankers", [])
    if rankers:
        parts += ["", "| Ranker | δ | δ source | Fingerprint |", "|---|---|---|---|"]
        for r in rankers:
            shown = r["name"] + (f" ({r['spec']})" if r.get("spec") else "")
            parts.append(f"| {escape_md(shown)} | {r['delta']:.6g} | "
                         f"{escape_md(r['delta_source'])} | `{escape_md_code(r['fingerprint'])}` |")
    from abnirml.report.listwise_section import usage_table

    usage = usage_table(run_info)
    if usage is not None:            # what the served rankers cost, beside the rankers
        parts += ["", usage.note, "", to_markdown(usage)]
    counts = run_info.get("counts", {})
    if counts:
        parts.append("")
        parts.append(f"Samples: {counts.get('samples', 0):,}; pair slots: "
                     f"{counts.get('pair_slots', 0):,}; {pairs_sentence(run_info)}")
    options = run_info.get("options", {})
    if options:
        parts.append("")
        parts.append("Options: " + ", ".join(f"{escape_md(k)} = {escape_md(v)}"
                                             for k, v in options.items()) + ".")
    parts.append("")
    from abnirml.report.intervals import significance_phrase

    mark = report_mark(run_info)
    star = ("`*` after a score marks it significant" if mark == MARK_SIGNIFICANT
            else "`*` before a score marks it not significant (ABNIRML's convention)")
    parts.append(f"Cells: probe score in [−1, 1]; {star} "
                 f"({significance_phrase(run_info)}). {score_legend(mark)}")
    labels = probe_labels(records, run_info)
    axiom_lines: list[str] = []
    for view in family_views(records, run_info):
        if view.report_layout.transfer_table:
            from abnirml.report.transfer_table import transfer_section

            section = transfer_section(records, run_info, view)
            if section:
                parts += ["", *section]
            continue
        table = family_table(records, view, labels)
        if table is None:
            continue
        table = dataclasses.replace(table, mark=mark)
        family = view.key
        if view.report_layout.axiom_instances:
            axiom_lines += axiom_sections([r for r in records if r["family"] == family])
        parts += ["", f"## {table.title}", ""]
        if table.note:
            parts += [table.note, ""]
        parts.append(to_markdown(table))
        parts += [line for c in family_caveats(records, run_info, family)
                  for line in ("", c.text)]
    parts += axiom_lines
    return "\n".join(parts) + "\n"


def pairs_sentence(run_info: RunInfo) -> str:
    """How much scoring the run took: the unique pairs once, the scores over all rankers.

    The scored and cached counts are totals over the rankers (each ranker scores every
    unique pair), so they are named as such rather than set beside a per-ranker figure."""
    counts = run_info.get("counts") or {}
    rankers = len(run_info.get("rankers") or []) or None
    over = f"{rankers} ranker{'s' if rankers != 1 else ''}" if rankers else "the rankers"
    windows = "windows_ranked" in counts
    if windows and not counts.get("scored") and not counts.get("from_cache"):
        # listwise rankers only: they rank windows of the pairs, scoring none of them
        return (f"unique (query, document) pairs: {counts.get('unique_pairs', 0):,}, ranked "
                f"in listwise windows: {counts['windows_ranked']:,} ranked, "
                f"{counts.get('windows_from_cache', 0):,} read from the cache.")
    sentence = (f"unique (query, document) pairs: {counts.get('unique_pairs', 0):,}, each "
                f"scored by every ranker; scores over {over}: {counts.get('scored', 0):,} "
                f"computed, {counts.get('from_cache', 0):,} read from the cache.")
    if windows:
        sentence += (f" Listwise windows: {counts['windows_ranked']:,} ranked, "
                     f"{counts.get('windows_from_cache', 0):,} read from the cache.")
    return sentence


def heading_anchor(heading: str) -> str:
    """The anchor GitHub and most markdown renderers give a heading: lowercase, punctuation
    dropped, spaces as hyphens."""
    import re

    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def with_contents(markdown: str) -> str:
    """``markdown`` with a "Contents" list of its ``##`` headings after the title line."""
    lines = markdown.split("\n")
    headings = [line[3:].strip() for line in lines if line.startswith("## ")]
    if len(headings) < 2 or not lines or not lines[0].startswith("# "):
        return markdown
    contents = ["", "Contents: " + " · ".join(
        f"[{h}](#{heading_anchor(h)})" for h in headings)]
    return "\n".join([lines[0], *contents, *lines[1:]])
