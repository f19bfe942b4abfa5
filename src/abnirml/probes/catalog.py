"""The four built-in probe families (ABNIRML's MMP, TMP, DTP and the axiomatic datasets).

Each is an ordinary :class:`~abnirml.probes.family.Family`, registered the way a user's
family would be; nothing elsewhere names them. Probe modules are imported only when a
family's probes are listed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from abnirml.errors import ConfigError
from abnirml.probes.family import Family, Requirement
from abnirml.probes.options import setting

SPACY = Requirement("spacy", "nlp", "spaCy parses")
CODESPELL = Requirement("codespell_lib", "typos", "codespell's misspelling list")


def _tolerance(value: Any, key: str) -> Any:
    """A number ≥ 0, or a mapping control → number ≥ 0."""
    items = value.items() if isinstance(value, Mapping) else [(None, value)]
    for control, raw in items:
        where = key if control is None else f"{key}[{control}]"
        try:
            number = float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: {raw!r} is not a number") from None
        if not math.isfinite(number) or number < 0:
            raise ConfigError(f"{where} must be a finite number ≥ 0, got {raw!r}")
    return value


def _duplication_factors(value: Any, key: str) -> Any:
    parts = value.split(",") if isinstance(value, str) else (
        list(value) if isinstance(value, (list, tuple)) else [value])
    for part in parts:
        try:
            number = float(part)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}: {part!r} is not a whole number") from None
        if not math.isfinite(number) or not number.is_integer() or number < 2:
            raise ConfigError(f"{key}: every duplication factor must be a whole number ≥ 2, "
                              f"got {part!r}")
    return value


@dataclass(frozen=True)
class MeasureMatchOptions:
    tolerance: Any = setting(0, legacy="mmp_tolerance", check=_tolerance,
                             help="how far the controlled measure may differ (number, or a "
                                  "mapping control → number; default 0, exact match)")


@dataclass(frozen=True)
class ManipulationOptions:
    sample: int | None = setting(None, minimum=1, legacy="tmp_sample",
                                 help="use N judged pairs drawn at random (seeded)")
    typo_rate: float = setting(0.1, minimum=0.0, maximum=1.0, legacy="typo_rate",
                               help="probability that a word with a known misspelling is "
                                    "misspelt")
    mask_token: str = setting("[MASK]", legacy="mask_token",
                              help="the token Only-Q / Drop-Q put in place of terms")
    doct5query_file: str | None = setting(None, legacy="doct5query_file",
                                          help="DocT5Query expansions file")
    doct5query_source: Any = setting(None, legacy="doct5query_source",
                                     help="a ranker spec or object that writes expansions")


@dataclass(frozen=True)
class TransferOptions:
    data: str | None = setting(None, legacy="transfer_data",
                               help="the folder holding the transfer corpora")
    online: bool = setting(False, legacy="transfer_online",
                           help="download corpora from the Hugging Face hub when absent")
    max_pairs: int | None = setting(None, minimum=0, legacy="dtp_max_pairs",
                                    help="keep at most N pairs per probe (seeded)")
    sample_rate: float | None = setting(None, above=0.0, maximum=1.0,
                                        legacy="dtp_sample_rate",
                                        help="fraction of pairs kept by sub-sampling probes")


@dataclass(frozen=True)
class AxiomFamilyOptions:
    pool: str = setting("candidates", choices=("candidates", "judged"), legacy="axiom_pool",
                        help="each query's candidates or its judged documents")
    depth: int = setting(100, minimum=1, legacy="axiom_depth",
                         help="candidates per query")
    length_tolerance: float = setting(10.0, minimum=0.0, allow_inf=True,
                                      words={"any": math.inf, "inf": math.inf,
                                             "none": math.inf},
                                      legacy="axiom_length_tolerance",
                                      help="δ_len in analysed tokens, or 'any'")
    cap: int | None = setting(5000, minimum=0, legacy="axiom_cap",
                              help="instances kept per query and axiom (0 or none: all)")
    lnc2_k: Any = setting("2,3,4", legacy="axiom_lnc2_k", check=_duplication_factors,
                          help="duplication factors for LNC2")
    lnc2_max_length: int | None = setting(None, minimum=1, legacy="axiom_lnc2_max_length",
                                          help="largest duplicated document, in words")
    stmc2_threshold: float = setting(0.2, minimum=-1.0, maximum=1.0,
                                     legacy="axiom_stmc2_threshold",
                                     help="STMC2's minimum similarity of the non-query parts")
    relevant_grade: int | None = setting(None, legacy="axiom_relevant_grade",
                                         help="lowest grade counted as relevant")
    stem: bool | None = setting(None, legacy="axiom_stem", help="Porter-stem terms")
    embeddings: Any = setting(None, legacy="axiom_embeddings",
                              help="term vectors (glove-6b-50d or an object)")
    similarity: Any = setting(None, legacy="axiom_similarity",
                              help="'cosine' or a callable (A, B) -> similarities")


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

BUILTIN_FAMILIES: tuple[Family, ...] = (MEASURE_MATCH, MANIPULATION, TRANSFER, AXIOMS)
