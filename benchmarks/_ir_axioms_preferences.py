"""ir_axioms 1.2.5's preference matrices for given pools (run by ir_axioms_agreement.py under
the interpreter that has ir_axioms; it pins numpy < 2, so it usually has its own venv).

Reads JSON on stdin: ``{"queries": [{"query": str, "docs": [str, ...], "scores": [float]}],
"df": {term: df}, "num_docs": N, "vectors": {word: [floats]}, "axioms": [name, ...]}`` and
prints ``{axiom: ["+-0…" per query, row-major]}``. Texts arrive already analysed (terms
joined by spaces), so a whitespace/regex tokenizer gives ir_axioms exactly abnirml's terms.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

_TERM = re.compile(r"[^\W_]+", re.UNICODE)
SYMBOL = {1: "+", -1: "-", 0: "0"}


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
    inputs = []
    for q, item in enumerate(payload["queries"]):
        scores = item.get("scores") or [None] * len(item["docs"])
        docs = [Document(id=f"{q}-{i}", text=t, score=s)
                for i, (t, s) in enumerate(zip(item["docs"], scores, strict=True))]
        inputs.append((Query(id=str(q), text=item["query"]), docs))
    out: dict[str, list[str]] = {}
    for name in payload["axioms"]:
        axiom = getattr(ax, name)()
        out[name] = ["".join(SYMBOL[int(v)] for v in axiom.preferences(query, docs).ravel())
                     for query, docs in inputs]
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
