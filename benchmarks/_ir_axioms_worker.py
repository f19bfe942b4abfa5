"""Time ir_axioms' full preference matrices (run by benchmarks/axioms.py, possibly under
another interpreter: ir_axioms 1.2.5 pins numpy < 2, so it usually lives in its own venv).

Reads JSON on stdin: ``{"queries": [{"query": str, "docs": [str, ...]}, ...],
"df": {term: df}, "num_docs": N, "vectors": {word: [floats]}}`` (the GloVe vectors of the
words that occur) and prints JSON timings per axiom.

ir_axioms is given its cheapest offline setting (``_ir_axioms_offline.py``): its regex
tokenizer is abnirml's split without stopping or stemming, so it does less work.
"""

from __future__ import annotations

import json
import sys
import time

from _ir_axioms_offline import install_offline_bindings


def main() -> int:
    from ir_axioms import axiom as ax
    from ir_axioms.model import Document, Query

    payload = json.load(sys.stdin)
    install_offline_bindings(payload)
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
