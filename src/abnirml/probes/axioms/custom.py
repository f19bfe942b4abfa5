"""A user's own axiom as an ``axiom:`` probe, in a few lines and without touching the package.

ir_axioms models an axiom as one object with a preference between two documents and an
optional precondition; that is the shape asked for here. :func:`axiom_probe` turns such a
definition into a probe of the ``axiom`` family, so it is mined from the same pools as the
built-in axioms and gets the same treatment: the per-query cap (``axiom.cap``), the pool
choice, the relevance-agreement counts and the report's axiom tables.

The two functions read one query's pool, a :class:`~.features.QueryFeatures` (documents
``0 … n−1``: ``texts``, ``docnos``, ``grades``, ``lengths`` in analysed terms, ``counts``
of each distinct query term, ``sums``, ``covered``, ``words``, ``run_scores``). Written per
pair (``preference(pool, i, j)``) they are called for every ordered pair of a pool, which
is plain Python and fine for pools of a hundred; with ``vectorised=True`` each takes the
pool and returns the whole ``n × n`` matrix at once. Every ordered pair whose precondition
holds and whose preference is positive is one instance, the preferred document being d1. The
records carry ``axiom_label``, which the report's axiom tables show.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from abnirml.errors import ConfigError, user_line
from abnirml.probes.axioms.features import AxiomData, QueryFeatures
from abnirml.probes.axioms.probe import Axiom, AxiomProbe
from abnirml.probes.base import ProbeContext, SampleTable

PairFunction = Callable[[QueryFeatures, int, int], Any]
MatrixFunction = Callable[[QueryFeatures], np.ndarray]


@dataclass(frozen=True)
class CustomAxiomProbe(AxiomProbe):
    """An ``axiom:`` probe whose definition travels with it instead of living in the
    built-in tables (``axiom`` is its suffix, ``spec`` its :class:`~.probe.Axiom`)."""

    spec: Axiom | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        assert self.spec is not None
        return self.spec.label

    @property
    def definition(self) -> Axiom:
        assert self.spec is not None
        return self.spec

    def sample_table(self, context: ProbeContext) -> SampleTable:
        """The shared axiom table, its records also carrying the axiom's label: the report's
        axiom tables name built-in axioms from their own definitions, which know no user's."""
        table = super().sample_table(context)
        table.extra["record"]["axiom_label"] = self.label
        return table


def axiom_probe(key: str, preference: PairFunction | MatrixFunction, *,
                precondition: PairFunction | MatrixFunction | None = None,
                label: str | None = None, claim: str = "S(d1) > S(d2)",
                describe: str = "", vectorised: bool = False) -> CustomAxiomProbe:
    """The probe ``axiom:<key>`` for a user's axiom; add it with
    :func:`abnirml.probes.probe_registry.register`.

    ``preference`` says which of two documents the axiom prefers (positive: the first,
    negative: the second, 0: neither); ``precondition`` (optional) whether the axiom speaks
    about the pair at all. ``describe`` is the precondition in words (run.json, examples).
    """
    if not isinstance(key, str) or not key or not all(c.isalnum() or c in "-_" for c in key):
        raise ConfigError(f"axiom key {key!r}: use letters, digits, '-' and '_'")
    for name, function in (("preference", preference), ("precondition", precondition)):
        if function is not None and not callable(function):
            raise ConfigError(f"axiom {key}: {name} must be a function, got "
                              f"{type(function).__name__}")
    matrix = _as_matrix(key, preference, vectorised)
    allowed = None if precondition is None else _as_matrix(key, precondition, vectorised)

    def find(features: QueryFeatures, _data: AxiomData, _context: ProbeContext
             ) -> tuple[np.ndarray, np.ndarray]:
        prefers = matrix(features) > 0
        if allowed is not None:
            prefers &= allowed(features).astype(bool)
        np.fill_diagonal(prefers, False)      # a document is never preferred to itself
        a, b = np.nonzero(prefers)
        return a.astype(np.int64), b.astype(np.int64)

    spec = Axiom(key, label or key.upper(), claim, describe, find)
    return CustomAxiomProbe(key, spec=spec)


def _as_matrix(key: str, function: Callable[..., Any], vectorised: bool
               ) -> Callable[[QueryFeatures], np.ndarray]:
    """``function`` as pool → n × n float matrix, its shape checked against the pool."""

    def per_pair(features: QueryFeatures) -> np.ndarray:
        n = features.size
        out = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                if i != j:
                    out[i, j] = float(function(features, i, j))
        return out

    def checked(features: QueryFeatures) -> np.ndarray:
        try:
            result = np.asarray(function(features) if vectorised else per_pair(features),
                                dtype=float)
        except ConfigError:
            raise
        except Exception as exc:  # the user's function: any error is theirs
            raise ConfigError(f"axiom {key}: {getattr(function, '__name__', 'function')} "
                              f"failed{user_line(exc)}: {type(exc).__name__}: {exc}") from None
        n = features.size
        if result.shape != (n, n):
            raise ConfigError(f"axiom {key}: {getattr(function, '__name__', 'function')} "
                              f"returned shape {result.shape} for a pool of {n} documents; "
                              f"expected ({n}, {n})")
        return result

    return checked
