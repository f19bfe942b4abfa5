"""The small value types every module shares.

They are frozen dataclasses so they can be hashed, shared between threads and never change
under a probe's feet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Sample:
    """One pair test ⟨q, d1, d2⟩.

    ``meta`` carries what breakdowns and reports need. Conventional keys: ``qid``,
    ``docno1``, ``docno2``, ``grade1``, ``grade2`` and ``grade`` (the relevance grade used to
    place the sample in the relevant / non-relevant subsets; absent when not meaningful).
    """

    query: str
    doc1: str
    doc2: str
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Skip:
    """A sample a probe could not build, with the reason (counted in the results).

    Conventional reasons: ``not-applicable`` (the manipulation does not apply),
    ``unchanged`` (the manipulation left the text identical), ``missing-text``,
    ``no-query`` (a transfer pair without a usable query).
    """

    reason: str
    meta: Mapping[str, Any] = field(default_factory=dict)
