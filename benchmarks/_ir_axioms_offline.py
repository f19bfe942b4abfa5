"""ir_axioms 1.2.5 set up offline, shared by the two scripts that run under its interpreter
(``_ir_axioms_worker.py`` times it, ``_ir_axioms_preferences.py`` compares its matrices).

Both give ir_axioms the same cheapest setting, so the figures of one stay comparable with
the other: no PyTerrier or Anserini (no Java), a regex term tokenizer (lowercased
alphanumeric runs, abnirml's split), document frequencies from a dictionary and GloVe term
similarity over cached unit vectors. It is imported by file name (the scripts run as
``python benchmarks/<script>.py``, so their folder is on ``sys.path``), never by abnirml.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_TERM = re.compile(r"[^\W_]+", re.UNICODE)


def install_offline_bindings(payload: Mapping[str, Any]) -> None:
    """Bind ir_axioms' tokenizer, index statistics and term similarity to the payload's
    ``df`` (term → document frequency), ``num_docs`` and ``vectors`` (word → floats)."""
    import numpy as np
    from injector import Binder, Module, singleton
    from ir_axioms.dependency_injection import injector
    from ir_axioms.tools import IndexStatistics, TermSimilarity, TermTokenizer

    class RegexTokenizer(TermTokenizer):
        def terms(self, text: str) -> Sequence[str]:
            return _TERM.findall(text.lower())

    @dataclass(frozen=True)
    class DictIndexStatistics(IndexStatistics):
        df: Mapping[str, int]
        count: int

        @property
        def document_count(self) -> int:
            return self.count

        def document_frequency(self, term: str) -> int:
            return self.df.get(term, 0)

        def document_frequencies(self, terms: Iterable[str]) -> Mapping[str, int]:
            return {t: self.df.get(t, 0) for t in terms}

    words = list(payload["vectors"])
    vectors = np.array([payload["vectors"][w] for w in words], dtype=np.float64).reshape(
        len(words), -1)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    row = {w: i for i, w in enumerate(words)}

    class GloveSimilarity(TermSimilarity):
        def similarity(self, term1: str, term2: str) -> float:
            a, b = row.get(term1), row.get(term2)
            if a is None or b is None:
                return 0.0
            return float(vectors[a] @ vectors[b])

    stats = DictIndexStatistics(payload["df"], payload["num_docs"])

    class Bindings(Module):
        def configure(self, binder: Binder) -> None:
            binder.bind(TermTokenizer, to=RegexTokenizer, scope=singleton)
            binder.bind(IndexStatistics, to=stats)
            binder.bind(TermSimilarity, to=GloveSimilarity, scope=singleton)

    injector.binder.install(Bindings())
