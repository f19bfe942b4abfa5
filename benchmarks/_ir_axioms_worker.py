"""Time ir_axioms' full preference matrices (run by benchmarks/axioms.py, possibly under
another interpreter: ir_axioms 1.2.5 pins numpy < 2, so it usually lives in its own venv).

Reads JSON on stdin: ``{"queries": [{"query": str, "docs": [str, ...]}, ...],
"df": {term: df}, "num_docs": N, "vectors": {word: [floats]}}`` (the GloVe vectors of the
words that occur) and prints JSON timings per axiom.

ir_axioms is given its cheapest offline setting: no PyTerrier or Anserini (no Java), a
regex term tokenizer (lowercased alphanumeric runs — the same split abnirml uses, but
without stopping or stemming, so it does less work), dictionary document frequencies, and
GloVe term similarity with cached unit vectors.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

_TERM = re.compile(r"[^\W_]+", re.UNICODE)


def main() -> int:
    import numpy as np
    from injector import Binder, Module, singleton
    from ir_axioms import axiom as ax
    from ir_axioms.dependency_injection import injector
    from ir_axioms.model import Document, Query
    from ir_axioms.tools import IndexStatistics, TermSimilarity, TermTokenizer

    payload = json.load(sys.stdin)

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
    vectors = np.array([payload["vectors"][w] for w in words], dtype=np.float64)
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
    axioms = {"TFC1": ax.TFC1, "LNC1": ax.LNC1, "M-TDC": ax.M_TDC, "PROX1/TP": ax.PROX1,
              "STMC1": ax.STMC1}
    inputs = [(Query(id=str(q), text=item["query"]),
               [Document(id=f"{q}-{i}", text=t) for i, t in enumerate(item["docs"])])
              for q, item in enumerate(payload["queries"])]
    out = {}
    for name, factory in axioms.items():
        axiom = factory()
        start = time.perf_counter()
        nonzero = 0
        for query, docs in inputs:
            matrix = axiom.preferences(query, docs)
            nonzero += int((matrix != 0).sum())
        out[name] = {"seconds": time.perf_counter() - start, "nonzero": nonzero}
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
