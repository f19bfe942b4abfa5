"""The five built-in probe families (ABNIRML's MMP, TMP, DTP, the axiomatic datasets and
Penha et al.'s query variations).

Each is an ordinary :class:`~abnirml.probes.family.Family`, registered the way a user's
family would be; nothing elsewhere names them. Probe modules are imported only when a
family's probes are listed.
"""

from __future__ import annotations

from typing import Any

from abnirml.probes.axioms.options import AxiomFamilyOptions
from abnirml.probes.family import SPACY, Family
from abnirml.probes.manipulation import ManipulationOptions
from abnirml.probes.measure_match import MeasureMatchOptions
from abnirml.probes.query_variation import QueryVariationOptions
from abnirml.probes.transfer_pairs import TransferOptions


def _mmp_probes() -> list[Any]:
    from abnirml.probes.measure_match import available

    return list(available())


def _tmp_probes() -> list[Any]:
    from abnirml.probes.manipulation import available

    return list(available())


def _dtp_probes() -> list[Any]:
    from abnirml.probes.transfer import available

    return list(available())


def _axiom_probes() -> list[Any]:
    from abnirml.probes.axioms import available

    return list(available())


def _qvp_probes() -> list[Any]:
    from abnirml.probes.query_variation import available

    return list(available())


def _mmp_label(probe: Any) -> list[str]:
    from abnirml.probes.measure_match import LABELS

    parts = probe.name.split(":")
    if len(parts) != 3:            # a user's mmp probe named otherwise
        return [probe.name, ""]
    _, variable, control = parts
    return [LABELS.get(variable, variable), LABELS.get(control, control)]


def _dtp_label(probe: Any) -> list[str]:
    """(characteristic, dataset); a user's pairs probe without them: parsed from its name."""
    characteristic = getattr(probe, "characteristic", None)
    if characteristic:
        return [str(characteristic), str(getattr(probe, "dataset", "") or "")]
    head, _, dataset = probe.name.removeprefix("dtp:").partition("-")
    return [head.capitalize(), dataset]


def _axiom_counts(score1: Any, score2: Any, summary: Any) -> dict[str, int]:
    """Rennings et al.'s counts: strict order without δ, and the same with δ."""
    diff = score1 - score2
    return {"satisfied": int((diff > 0).sum()), "violated": int((diff < 0).sum()),
            "ties": int((diff == 0).sum()), "satisfied_delta": summary.pos,
            "violated_delta": summary.neg, "ties_delta": summary.neutral}


MEASURE_MATCH = Family(
    key="mmp", title="Measure-and-Match probes",
    positive="Positive scores: the ranker prefers the document with the higher variable.",
    options=MeasureMatchOptions, probes=_mmp_probes, row_header=("Variable", "Control"),
    row_label=_mmp_label)
MANIPULATION = Family(
    key="tmp", title="Textual-manipulation probes",
    positive="Positive scores: the ranker prefers the manipulated document (d2 is the "
             "original).",
    options=ManipulationOptions, probes=_tmp_probes)
TRANSFER = Family(
    key="dtp", title="Dataset-transfer probes",
    positive="Positive scores: the ranker prefers d1 (e.g. the fluent, formal or simpler "
             "text). Symmetric probes (paraphrase) are unsigned, in [0, 1].",
    options=TransferOptions, probes=_dtp_probes, requires=(SPACY,),
    row_header=("Characteristic", "Dataset"), row_label=_dtp_label, layout="transfer")
AXIOMS = Family(
    key="axiom", title="Axiomatic diagnostic datasets (probe scores)",
    positive="Positive scores: the ranker prefers the document the axiom favours.",
    options=AxiomFamilyOptions, probes=_axiom_probes, record_fields=_axiom_counts,
    layout="axiom")

QUERY_VARIATION = Family(
    key="qvp", title="Query-variation probes",
    positive="Positive scores: the ranker scores the same document higher under the varied "
             "query than under the original (d1 = varied query, d2 = original).",
    options=QueryVariationOptions, probes=_qvp_probes, skips_counted="queries")

BUILTIN_FAMILIES: tuple[Family, ...] = (MEASURE_MATCH, MANIPULATION, TRANSFER, AXIOMS,
                                        QUERY_VARIATION)
