"""ir_axioms 1.2.5's preference matrices for given pools (run by ir_axioms_agreement.py under
the interpreter that has ir_axioms; it pins numpy < 2, so it usually has its own venv).

Reads JSON on stdin: ``{"queries": [{"query": str, "docs": [str, ...], "scores": [float]}],
"df": {term: df}, "num_docs": N, "vectors": {word: [floats]}, "axioms": [name, ...]}`` and
prints ``{axiom: ["+-0…" per query, row-major]}``. Texts arrive already analysed (terms
joined by spaces), so a whitespace/regex tokenizer gives ir_axioms exactly abnirml's terms.
"""

from __future__ import annotations

import json
import sys

from _ir_axioms_offline import install_offline_bindings

SYMBOL = {1: "+", -1: "-", 0: "0"}


def main() -> int:
    from ir_axioms import axiom as ax
    from ir_axioms.model import Document, Query

    payload = json.load(sys.stdin)
    install_offline_bindings(payload)
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
