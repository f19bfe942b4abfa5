"""Report layouts as records, in one registry: what ``Family.layout`` may name.

A layout names how the report renders a family and which analyses read its records; it
names renderers, not families, so a user's family with the axiom layout gets the axiom
tables. The engine and the report ask the layout's record what it does — whether its table
is the dataset-transfer table, whether its records count axiom instances — never its name.
A family's layout travels in ``run.json`` by name, so a report renders from the folder
alone; a name this process does not know renders as a plain table (:func:`layout_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from abnirml.errors import ConfigError
from abnirml.registry import Registry

TABLE_LAYOUT = "table"
TRANSFER_LAYOUT = "transfer"
AXIOM_LAYOUT = "axiom"


@dataclass(frozen=True)
class ReportLayout:
    """One report layout.

    ``transfer_table``: the family's table is the dataset-transfer table (the papers'
    Table 3): rows by characteristic and dataset, a Discarded column holding the skip
    counts, and source data not found noted instead of skip lines. ``axiom_instances``:
    the family's records count satisfied, violated and tied axiom instances, so the report
    adds their counts and Câmara & Hauff's tables, and the axiom fulfilment and
    effectiveness analyses read them.
    """

    name: str
    description: str
    transfer_table: bool = False
    axiom_instances: bool = False


BUILT_IN_LAYOUTS = (
    ReportLayout(TABLE_LAYOUT, "one row per probe, one column per ranker (the default)"),
    ReportLayout(TRANSFER_LAYOUT, "the dataset-transfer table: rows by characteristic and "
                 "dataset, with the samples each discarded", transfer_table=True),
    ReportLayout(AXIOM_LAYOUT, "the probe table, the satisfied / violated / tied instance "
                 "counts and the axiom fulfilment tables", axiom_instances=True),
)

_LAYOUTS: Registry[ReportLayout] = Registry(
    "report layout", built_ins=lambda: [(layout.name, layout) for layout in BUILT_IN_LAYOUTS],
    called="name", describe=lambda layout: layout.description)


def register_layout(layout: ReportLayout) -> None:
    """Make ``layout`` a value of ``Family.layout``."""
    _LAYOUTS.add(layout.name, layout)


def layout_names() -> list[str]:
    """Every layout's name, built-ins first."""
    return _LAYOUTS.keys()


def registered_layouts() -> Mapping[str, ReportLayout]:
    return _LAYOUTS.mapping()


def get_layout(name: str) -> ReportLayout:
    """The layout called ``name``; an unknown name is one ConfigError line listing the
    known ones."""
    found = _LAYOUTS.find(name)
    if found is None:
        raise ConfigError(f"unknown report layout {name!r}: use one of "
                          f"{', '.join(layout_names())}")
    return found


def layout_of(name: str) -> ReportLayout:
    """The layout a report renders ``name`` with: a name read back from a run that this
    process does not know (a plugin's, not loaded now) renders as a plain table."""
    return _LAYOUTS.find(name) or get_layout(TABLE_LAYOUT)


LayoutTest = Callable[[ReportLayout], bool]
