"""The six built-in probe families (ABNIRML's MMP, TMP, DTP, the axiomatic datasets,
Penha et al.'s query variations and the ranking-bias probes of Fayyaz et al. and Alaofi et
al.).

Each is an ordinary :class:`~abnirml.probes.family.Family`, registered the way a user's
family would be; nothing elsewhere names them. Probe modules are imported only when a
family's probes are listed.
"""

from __future__ import annotations

from typing import Any

from abnirml.probes.axioms.options import AxiomOptions
from abnirml.probes.bias.probes import BiasOptions
from abnirml.probes.family import AXIOM_LAYOUT, SPACY, TRANSFER_LAYOUT, Family
from abnirml.probes.manipulation.probes import ManipulationOptions
from abnirml.probes.measure_match import MeasureMatchOptions
from abnirml.probes.query_variation.probes import QueryVariationOptions
from abnirml.probes.transfer.pairs import TransferOptions


def _mmp_probes() -> list[Any]:
    from abnirml.probes.measure_match import available

    return list(available())


def _tmp_probes() -> list[Any]:
    from abnirml.probes.manipulation.probes import available

    return list(available())


def _dtp_probes() -> list[Any]:
    from abnirml.probes.transfer.probes import available

    return list(available())


def _axiom_probes() -> list[Any]:
    from abnirml.probes.axioms import available

    return list(available())


def _qvp_probes() -> list[Any]:
    from abnirml.probes.query_variation.probes import available

    return list(available())


def _bias_probes() -> list[Any]:
    from abnirml.probes.bias.probes import available

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


#: the measure-and-match variables in words (probe names use the short keys)
_MMP_WORDS = {"relevance": "relevance grade", "length": "length",
              "tf": "query-term frequency (TF)", "sumtf": "summed query-term frequency",
              "overlap": "query-term overlap"}


def _mmp_finding(probe: str, labels: Any, up: bool) -> str | None:
    if probe.count(":") != 2:
        return None
    _, variable, control = probe.split(":")
    v, c = _MMP_WORDS.get(variable, variable), _MMP_WORDS.get(control, control)
    return f"Prefers the document with {'higher' if up else 'lower'} {v} when {c} is held equal"


def _tmp_finding(probe: str, labels: Any, up: bool) -> str:
    change = probe.split(":", 1)[-1]
    return (f"Prefers the document changed by “{change}” over the original" if up
            else f"Prefers the original over the document changed by “{change}”")


def _dtp_finding(probe: str, labels: Any, up: bool) -> str | None:
    if len(labels) != 2 or not labels[0]:
        return None
    dataset = f" ({labels[1]} pairs)" if labels[1] else ""
    return f"Prefers the text {'higher' if up else 'lower'} in {labels[0].lower()}{dataset}"


def _axiom_finding(probe: str, labels: Any, up: bool) -> str:
    name = probe.split(":", 1)[-1].upper()
    return (f"Agrees with axiom {name} (prefers the document it favours)" if up
            else f"Goes against axiom {name} (prefers the document it does not favour)")


def _qvp_finding(probe: str, labels: Any, up: bool) -> str:
    variation = probe.split(":", 1)[-1]
    return (f"Scores a document {'higher' if up else 'lower'} under the “{variation}” query "
            "variation than under the original query")


def _bias_finding(probe: str, labels: Any, up: bool) -> str | None:
    from abnirml.probes.bias.probes import BY_KEY

    spec = BY_KEY.get(probe.split(":", 1)[-1])
    if spec is None:              # a user's probe registered into the family
        return None
    return spec.up if up else spec.down


def _qvp_annotate(result: Any) -> None:
    from abnirml.probes.query_variation.probes import attach_ndcg_change

    attach_ndcg_change(result)


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
    row_label=_mmp_label, finding=_mmp_finding)
MANIPULATION = Family(
    key="tmp", title="Textual-manipulation probes",
    positive="Positive scores: the ranker prefers the manipulated document (d2 is the "
             "original).",
    options=ManipulationOptions, probes=_tmp_probes, finding=_tmp_finding)
TRANSFER = Family(
    key="dtp", title="Dataset-transfer probes",
    positive="Positive scores: the ranker prefers d1 (e.g. the fluent, formal or simpler "
             "text). Symmetric probes (paraphrase) are unsigned, in [0, 1].",
    options=TransferOptions, probes=_dtp_probes, requires=(SPACY,),
    row_header=("Characteristic", "Dataset"), row_label=_dtp_label, layout=TRANSFER_LAYOUT,
    finding=_dtp_finding)
AXIOMS = Family(
    key="axiom", title="Axiomatic diagnostic datasets (probe scores)",
    positive="Positive scores: the ranker prefers the document the axiom favours.",
    options=AxiomOptions, probes=_axiom_probes, record_fields=_axiom_counts,
    layout=AXIOM_LAYOUT, finding=_axiom_finding)

QUERY_VARIATION = Family(
    key="qvp", title="Query-variation probes",
    positive="Positive scores: the ranker scores the same document higher under the varied "
             "query than under the original (d1 = varied query, d2 = original).",
    options=QueryVariationOptions, probes=_qvp_probes, skips_counted="queries",
    finding=_qvp_finding, annotate=_qvp_annotate)

BIASES = Family(
    key="bias", title="Ranking-bias probes",
    positive="Positive scores: the ranker prefers d1, the edited passage or the foil (d2 is "
             "the original or a judged-relevant passage); the bias each source paper reports "
             "shows as a positive score except on literal-match and brevity.",
    options=BiasOptions, probes=_bias_probes, finding=_bias_finding)

BUILTIN_FAMILIES: tuple[Family, ...] = (MEASURE_MATCH, MANIPULATION, TRANSFER, AXIOMS,
                                        QUERY_VARIATION, BIASES)
