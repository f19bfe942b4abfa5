"""The dataset-transfer table in the layout of the papers' Table 3, with discard counts.

Rows are (characteristic, dataset), columns the rankers, then the sample count and the
discards by reason. Symmetric probes (paraphrase) print unsigned scores. Probes whose data
was not found are not rows: one line lists them with the location that was searched, so a
run without ``--transfer-data`` stays readable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from abnirml.report.tables import (
    FamilyView,
    Table,
    family_views,
    format_score,
    to_markdown,
)
from abnirml.report.tables import probe_labels as all_probe_labels
from abnirml.run_record import RunInfo

#: skip reasons that are sampling choices rather than unusable pairs
SAMPLING = ("sub-sampled", "capped")
NO_DATA = "no-data"


def probe_labels(name: str, given: Mapping[str, Sequence[str]] | None,
                 family: str) -> tuple[str, str]:
    """(characteristic, dataset) for a probe name: run.json's labels, the catalogue's, else
    parsed from ``<family>:<characteristic>-<dataset>``."""
    cells = (given or {}).get(name)
    if cells is not None and len(cells) == 2:
        return str(cells[0]), str(cells[1])
    known = _catalogue().get(name)
    if known is not None:
        return known[0], known[1]
    label = name.removeprefix(f"{family}:")
    characteristic, _, dataset = label.partition("-")
    return characteristic.capitalize(), dataset


def expected_location(name: str, transfer_data: str | None) -> str:
    known = _catalogue().get(name)
    folder = known[2] if known is not None else ""
    if not transfer_data:
        return "no --transfer-data given"
    return str(Path(transfer_data) / folder) if folder else str(transfer_data)


def _catalogue() -> dict[str, tuple[str, str, str]]:
    """name → (characteristic, dataset, data folder) of the probes of the registered
    transfer-layout families that declare them."""
    from abnirml.probes.family_registry import keys_with_layout

    return _catalogue_of(tuple(sorted(keys_with_layout(lambda layout: layout.transfer_table))))


@lru_cache(maxsize=4)
def _catalogue_of(keys: tuple[str, ...]) -> dict[str, tuple[str, str, str]]:
    from abnirml.probes.family_registry import get_family

    out = {}
    for key in keys:
        for probe in get_family(key).probes():
            if hasattr(probe, "characteristic"):
                out[probe.name] = (str(probe.characteristic), str(getattr(probe, "dataset", "")),
                                   str(getattr(probe, "data_folder", "")))
    return out


def discard_text(skipped: Mapping[str, int]) -> str:
    parts = [f"{reason} {count:,}" for reason, count in sorted(skipped.items())
             if reason != NO_DATA and count]
    return ", ".join(parts) if parts else "0"


def transfer_table(records: Sequence[Mapping[str, Any]], view: FamilyView | None = None,
                   labels: Mapping[str, Sequence[str]] | None = None) -> Table | None:
    """The table of the family ``view`` names (by default the first registered family with
    the transfer layout): any family registered with ``layout="transfer"`` gets this layout
    for its own records."""
    view = view or _view([], {}, _default_key())
    chosen = [r for r in records if r["family"] == view.key and r["subset"] == "all"]
    by_probe: dict[str, dict[str, Mapping[str, Any]]] = {}
    for record in chosen:
        if _no_data(record):
            continue
        by_probe.setdefault(record["probe"], {})[record["ranker"]] = record
    if not by_probe:
        return None
    rankers = list(dict.fromkeys(r["ranker"] for r in chosen))
    header = ["Characteristic", "Dataset", *rankers, "Samples", "Discarded"]
    rows: list[list[str]] = []
    previous = None
    for probe, per_ranker in by_probe.items():
        characteristic, dataset = probe_labels(probe, labels, view.key)
        any_record = next(iter(per_ranker.values()))
        shown = "" if characteristic == previous else characteristic
        previous = characteristic
        cells = [format_score(per_ranker[r]) if r in per_ranker else "–" for r in rankers]
        counts = sorted({r["n"] for r in per_ranker.values()})
        rows.append([shown, dataset or probe, *cells, "/".join(f"{c:,}" for c in counts),
                     discard_text(any_record.get("skipped") or {})])
    note = view.positive + (" Discarded: pairs dropped before scoring, by reason "
                            "(sub-sampled and capped are sampling choices).")
    return Table(view.title, header, rows, note, scored=tuple(range(2, 2 + len(rankers))),
                 tallied=(len(header) - 1,))


def _default_key() -> str:
    """The first registered family rendered with the transfer layout (built-ins come first)."""
    from abnirml.probes.family_registry import families
    from abnirml.probes.layouts import get_layout

    return next(family.key for family in families()
                if get_layout(family.layout).transfer_table)


def _view(records: Sequence[Mapping[str, Any]], run_info: RunInfo,
          key: str) -> FamilyView:
    found = [v for v in family_views([*records, {"family": key}], run_info) if v.key == key]
    return found[0]


def _no_data(record: Mapping[str, Any]) -> bool:
    return record["n"] == 0 and NO_DATA in (record.get("skipped") or {})


def missing_data_lines(records: Sequence[Mapping[str, Any]],
                       run_info: RunInfo, family: str) -> list[str]:
    """One line per searched location: the probes of ``family`` that found no data there
    (``FAMILY.data``, or the flat ``transfer_data`` of folders written before options had
    family names)."""
    # a family's options are not declared in run.json's record: read them as plain JSON
    options: Mapping[str, Any] = run_info.get("options", {})
    transfer_data = options.get(f"{family}.data", options.get("transfer_data"))
    where: dict[str, list[str]] = {}
    for record in records:
        if record["family"] == family and record["subset"] == "all" and _no_data(record):
            names = where.setdefault(expected_location(record["probe"], transfer_data), [])
            if record["probe"] not in names:
                names.append(record["probe"])
    return [f"data not found: {location} — {', '.join(names)}"
            for location, names in where.items()]


def transfer_section(records: Sequence[Mapping[str, Any]], run_info: RunInfo,
                     view: FamilyView | None = None) -> list[str]:
    """Markdown lines of a transfer-layout family's section (by default the first
    registered one's); empty when none of its probes ran."""
    key = view.key if view is not None else _default_key()
    mine = [r for r in records if r["family"] == key]
    if not mine:
        return []
    view = view or _view(records, run_info, key)
    lines = [f"## {view.title}", ""]
    table = transfer_table(records, view, all_probe_labels(mine, run_info))
    if table is not None:
        from dataclasses import replace

        from abnirml.report.tables import report_mark

        lines += [table.note, "", to_markdown(replace(table, mark=report_mark(run_info)))]
    missing = missing_data_lines(records, run_info, key)
    if missing:
        lines += ["", "Not run (skipped as no-data):", ""]
        lines += [f"- {line}" for line in missing]
    return lines
