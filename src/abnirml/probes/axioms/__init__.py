"""Axiomatic diagnostic datasets (Rennings et al. §3; Câmara & Hauff §3, §4.3).

Ten probes, ``axiom:rennings-tfc1``, ``axiom:tfc2``, ``axiom:rennings-m-tdc``,
``axiom:camara-lnc1``, ``axiom:lnc2``, ``axiom:tp`` (and ``axiom:tp-relaxed``),
``axiom:camara-stmc1``, ``axiom:camara-stmc2`` and ``axiom:stmc3`` (names both papers and
ir_axioms define carry their source, see :mod:`.names`), whose samples are instances of
the papers' extended and relaxed axioms, mined from each query's candidate documents (or
its judged documents). ``doc1`` is always the document the axiom prefers. Modules:
:mod:`.options` (the ``axiom.*`` options), :mod:`.features` (per-query term-count
matrices, proximity, embeddings), :mod:`.mining` (the vectorised definitions),
:mod:`.semantics` (term vectors and similarity), :mod:`.probe` (tables for the engine).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from abnirml.probes.axioms.probe import AxiomProbe


def available() -> list[AxiomProbe]:
    from abnirml.probes.axioms.ir_axioms_extra import ir_axioms_probes
    from abnirml.probes.axioms.probe import all_axiom_probes

    return all_axiom_probes() + ir_axioms_probes()
