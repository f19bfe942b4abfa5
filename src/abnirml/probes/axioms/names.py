"""Axiom names that two sources define differently, and where each probe's definition is from.

TFC1, M-TDC, LNC1, STMC1 and STMC2 are defined both by the diagnostic-dataset papers
(Rennings et al.; Câmara & Hauff) and by ir_axioms, with different conditions. Neither
definition owns the bare name: each probe carries its source as a prefix (``rennings-``,
``camara-``, ``ir-``), and the bare name is refused with both spellings, so a user who
knows the axiom from one tool never silently measures the other's.
"""

from __future__ import annotations

RENNINGS = "Rennings et al."
CAMARA = "Câmara & Hauff"
IR_AXIOMS = "ir_axioms"

#: bare axiom name → (diagnostic-dataset probe suffix, its source, ir_axioms probe suffix)
SHARED_NAMES: dict[str, tuple[str, str, str]] = {
    "tfc1": ("rennings-tfc1", RENNINGS, "ir-tfc1"),
    "m-tdc": ("rennings-m-tdc", RENNINGS, "ir-m-tdc"),
    "lnc1": ("camara-lnc1", CAMARA, "ir-lnc1"),
    "stmc1": ("camara-stmc1", CAMARA, "ir-stmc1"),
    "stmc2": ("camara-stmc2", CAMARA, "ir-stmc2"),
}

#: the diagnostic-dataset axioms' sources
DATASET_SOURCES: dict[str, str] = {
    "rennings-tfc1": RENNINGS, "tfc2": RENNINGS, "rennings-m-tdc": RENNINGS,
    "lnc2": RENNINGS, "camara-lnc1": CAMARA, "tp": CAMARA, "tp-relaxed": CAMARA,
    "camara-stmc1": CAMARA, "camara-stmc2": CAMARA, "stmc3": CAMARA,
}


def source_of(probe: str) -> str | None:
    """Whose definition an ``axiom:`` probe measures (None for other probes)."""
    family, _, suffix = probe.partition(":")
    if family != "axiom" or not suffix:
        return None
    if suffix in DATASET_SOURCES:
        return DATASET_SOURCES[suffix]
    from abnirml.probes.axioms.ir_axioms_mining import DEFINITIONS

    return IR_AXIOMS if suffix in DEFINITIONS else None      # None: a user's axiom


def ambiguity(pattern: str) -> str | None:
    """The one-line refusal of a bare shared name (``axiom:tfc1``), naming both probes;
    None for any other pattern."""
    family, _, suffix = pattern.strip().lower().partition(":")
    if family != "axiom" or suffix not in SHARED_NAMES:
        return None
    dataset, source, ir = SHARED_NAMES[suffix]
    return (f"probe {pattern.strip()!r} is ambiguous: did you mean axiom:{dataset} "
            f"({source}'s {suffix.upper()}) or axiom:{ir} ({IR_AXIOMS}' {suffix.upper()})?")


def side_by_side() -> list[str]:
    """One line per shared name: both probes and their sources (``abnirml probes``)."""
    return [f"{bare.upper()}\taxiom:{dataset} ({source})\taxiom:{ir} ({IR_AXIOMS})"
            for bare, (dataset, source, ir) in SHARED_NAMES.items()]
