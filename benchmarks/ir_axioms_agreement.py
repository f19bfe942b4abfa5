"""Agreement of abnirml's ir_axioms-style axioms with ir_axioms 1.2.5, cell by cell.

For every DL19 query, both tools compute the full preference matrix (1 / −1 / 0 for each
ordered pair) of each axiom over the BM25 top-100 candidates; the table prints, per
axiom, the fraction of ordered pairs on which they agree, and how many pairs either tool
prefers. Both see the same terms: abnirml analyses the texts (stopwords removed, no
stemming, so GloVe finds the words) and ir_axioms reads those analysed terms joined by
spaces, with abnirml's document frequencies, the candidate run's own scores (LB1, as the
``axiom:lb1`` probe reads them) and GloVe vectors.

ir_axioms 1.2.5 pins numpy < 2, so it runs in its own interpreter (``make .venv-irax/
.installed``; ``--ir-axioms-python`` or ``$IR_AXIOMS_PYTHON``); without one, the script
says so and exits 0.

    PYTHONPATH=src python benchmarks/ir_axioms_agreement.py [--queries N] [--depth 100]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import dl19_probe_context, ir_axioms_python, require_dl19

#: abnirml probe suffix → ir_axioms 1.2.5 object name.
COMPARED = {
    "tfc3": "TFC3", "ir-m-tdc": "M_TDC", "len-m-tdc": "LEN_M_TDC", "tf-lnc": "TF_LNC",
    "lb1": "LB1", "prox1": "PROX1", "prox2": "PROX2", "prox3": "PROX3", "prox4": "PROX4",
    "prox5": "PROX5", "reg": "REG", "anti-reg": "ANTI_REG", "aspect-reg": "ASPECT_REG",
    "and": "AND", "len-and": "LEN_AND", "m-and": "M_AND", "len-m-and": "LEN_M_AND",
    "div": "DIV", "len-div": "LEN_DIV", "ir-stmc1": "STMC1", "ir-stmc2": "STMC2",
    "ir-tfc1": "TFC1", "ir-lnc1": "LNC1", "orig": "ORIG",
}
VALUE = {"+": 1, "-": -1, "0": 0}
#: Axioms whose LEN precondition ir_axioms 1.2.5 declares but never applies (the class
#: body's own ``preferences`` overrides the precondition mixin's); abnirml applies it, so
#: their agreement is also reported with LEN applied to ir_axioms' matrix.
LEN_NOT_APPLIED_BY_IR_AXIOMS = ("tfc3", "reg", "anti-reg", "ir-tfc1")


def agreement_context(dl19: Path, depth: int, queries: int | None):
    """DL19's BM25 top ``depth``, analysed without stemming so GloVe finds the words."""
    return dl19_probe_context(depth, queries, {"axiom.stem": "0", "axiom.depth": depth}, dl19)


def abnirml_side(context) -> tuple[dict, dict[str, list[np.ndarray]]]:
    """The payload for ir_axioms and abnirml's own matrices (per axiom, per query)."""
    from abnirml.probes.axioms.features import axiom_data
    from abnirml.probes.axioms.ir_axioms_extra import irax_query
    from abnirml.probes.axioms.ir_axioms_mining import DEFINITIONS
    from abnirml.probes.axioms.options import axiom_settings
    from abnirml.probes.axioms.semantics import glove_6b_50d

    data = axiom_data(context, axiom_settings(context))
    glove = glove_6b_50d()
    store = data.store
    queries = []
    ours: dict[str, list[np.ndarray]] = {a: [] for a in COMPARED}
    words: set[str] = set()
    needed: set[str] = set()
    for f in data.queries:
        view = irax_query(f, data, glove)
        scores = view.scores
        text_of = [" ".join(store.term(int(t)) for t in seq) for seq in view.sequences]
        query_text = " ".join(store.term(int(t)) for t in view.query_sequence)
        queries.append({"query": query_text, "docs": text_of, "scores": scores.tolist()})
        words.update(query_text.split())
        for text in text_of:
            words.update(text.split())
        needed.update(f.terms)
        for axiom in COMPARED:
            ours[axiom].append(DEFINITIONS[axiom][2](view))
    stats = data.stats()
    ordered = sorted(words)
    ids = glove.ids(ordered)
    vectors = {w: glove.vectors[i].tolist() for w, i in zip(ordered, ids, strict=True)
               if i >= 0}
    payload = {"queries": queries, "df": {t: stats.df.get(t, 0) for t in needed},
               "num_docs": stats.num_docs, "vectors": vectors,
               "axioms": list(COMPARED.values())}
    return payload, ours


def theirs(python: str, payload: dict) -> dict[str, list[np.ndarray]]:
    done = subprocess.run([python, str(Path(__file__).with_name("_ir_axioms_preferences.py"))],
                          input=json.dumps(payload), capture_output=True, text=True,
                          timeout=7200)
    if done.returncode != 0:
        raise RuntimeError("ir_axioms failed: " + done.stderr.strip()[-2000:])
    raw = json.loads(done.stdout)
    out: dict[str, list[np.ndarray]] = {}
    for axiom, name in COMPARED.items():
        out[axiom] = [np.array([VALUE[c] for c in cells], dtype=np.int8)
                      .reshape(len(q["docs"]), len(q["docs"]))
                      for cells, q in zip(raw[name], payload["queries"], strict=True)]
    return out


def length_masks(payload: dict) -> list[np.ndarray]:
    """LEN per query: the two documents' term counts within 10 % (as ir_axioms' LEN)."""
    from abnirml.probes.axioms.ir_axioms_mining import close

    out = []
    for item in payload["queries"]:
        lengths = np.array([len(t.split()) for t in item["docs"]], dtype=float)
        out.append(close(lengths[:, None], lengths[None, :]))
    return out


def agreement(ours: dict[str, list[np.ndarray]], other: dict[str, list[np.ndarray]],
              masks: list[np.ndarray] | None = None) -> dict[str, dict[str, float]]:
    """Per axiom: fraction of ordered pairs (i ≠ j) with the same preference, and counts;
    for the axioms ir_axioms runs without their LEN precondition, also the agreement with
    LEN applied to ir_axioms' matrix (``agreement_len``), when ``masks`` are given."""
    out = {}
    for axiom in ours:
        same = same_len = total = mine = theirs_ = 0
        for q, (a, b) in enumerate(zip(ours[axiom], other[axiom], strict=True)):
            off = ~np.eye(a.shape[0], dtype=bool)
            same += int((a == b)[off].sum())
            if masks is not None:
                same_len += int((a == np.where(masks[q], b, 0))[off].sum())
            total += int(off.sum())
            mine += int((a[off] != 0).sum())
            theirs_ += int((b[off] != 0).sum())
        row = {"agreement": same / total if total else 1.0, "pairs": total,
               "abnirml_nonzero": mine, "ir_axioms_nonzero": theirs_}
        if masks is not None and axiom in LEN_NOT_APPLIED_BY_IR_AXIOMS:
            row["agreement_len"] = same_len / total if total else 1.0
        out[axiom] = row
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=None, help="first N queries only")
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--ir-axioms-python")
    args = parser.parse_args(argv)
    dl19 = require_dl19()
    if dl19 is None:
        return 0
    python = ir_axioms_python(args.ir_axioms_python)
    if python is None:
        print("skipped: no interpreter can import ir_axioms (make .venv-irax/.installed)")
        return 0
    context = agreement_context(dl19, args.depth, args.queries)
    start = time.perf_counter()
    payload, ours = abnirml_side(context)
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    other = theirs(python, payload)
    theirs_s = time.perf_counter() - start
    rows = agreement(ours, other, length_masks(payload))
    print(f"## abnirml vs ir_axioms 1.2.5: {len(payload['queries'])} DL19 queries, BM25 top "
          f"{args.depth}\n")
    print("| axiom | ordered pairs | agreement | with ir_axioms under LEN | abnirml prefers "
          "| ir_axioms prefers |")
    print("|---|---:|---:|---:|---:|---:|")
    for axiom, row in rows.items():
        masked = f"{row['agreement_len']:.4%}" if "agreement_len" in row else "–"
        print(f"| {axiom} ({COMPARED[axiom]}) | {row['pairs']:,} | {row['agreement']:.4%} | "
              f"{masked} | {row['abnirml_nonzero']:,} | {row['ir_axioms_nonzero']:,} |")
    print(f"\nabnirml: {ours_s:.1f} s for all matrices (features included); "
          f"ir_axioms: {theirs_s:.1f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
