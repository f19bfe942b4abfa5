"""Axiom mining throughput, and preference matrices against ir_axioms 1.2.5.

Prints three small tables:

1. instances mined per second per axiom on TREC DL 2019 (BM25 run, top 100 per query);
2. the same on a synthetic collection (default 5,000 queries × 100 candidates drawn from
   20,000 Zipfian documents over GloVe words), with the peak resident memory;
3. the time to compute the full 100 × 100 preference matrix of every DL19 query for TFC1,
   LNC1, M-TDC, TP (ir_axioms: PROX1) and STMC1, abnirml (features from raw text included)
   vs ir_axioms, when ir_axioms can run (``--ir-axioms-python`` or ``$IR_AXIOMS_PYTHON``
   names an interpreter that has it; it pins numpy < 2, so it usually has its own venv).

The axioms' definitions differ between the two libraries (ir_axioms uses 10 % margins and
its own preconditions), so the comparison is of cost, not of the matrices' contents.

    PYTHONPATH=src python benchmarks/axioms.py [--queries 5000] [--ir-axioms-python PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import DL19, dl19_probe_context, ir_axioms_python, peak_rss_mib

COMPARED = {"tfc1": "TFC1", "lnc1": "LNC1", "m-tdc": "M-TDC", "tp": "PROX1/TP",
            "stmc1": "STMC1"}


def synthetic_context(queries: int, docs: int, seed: int = 0):
    """Zipfian documents over GloVe words; each query's 100 candidates share a query term."""
    from abnirml.data.collection import Collection
    from abnirml.probes.axioms.semantics import glove_6b_50d
    from abnirml.probes.base import ProbeContext
    from abnirml.text.stopwords import load_stopwords

    rng = np.random.default_rng(seed)
    stops = load_stopwords()
    vocab = [w for w in list(glove_6b_50d()._row)[200:40_000]
             if w.isalpha() and w not in stops][:10_000]
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    lengths = rng.integers(20, 81, size=docs)
    words = rng.choice(len(vocab), size=int(lengths.sum()), p=weights)
    bounds = np.r_[0, np.cumsum(lengths)]
    texts = {f"d{i}": " ".join(vocab[w] for w in words[bounds[i]:bounds[i + 1]])
             for i in range(docs)}
    owner = np.repeat(np.arange(docs), lengths)
    order = np.argsort(words, kind="stable")
    starts = np.searchsorted(words[order], np.arange(len(vocab) + 1))
    query_texts: dict[str, str] = {}
    ranking: dict[str, list[str]] = {}
    for q in range(queries):
        terms = rng.choice(np.arange(50, 3000), size=rng.integers(2, 6), replace=False)
        query_texts[f"q{q}"] = " ".join(vocab[t] for t in terms)
        hits = np.unique(np.concatenate([owner[order[starts[t]:starts[t + 1]]] for t in terms]))
        chosen = rng.choice(hits, size=min(100, hits.size), replace=False)
        ranking[f"q{q}"] = [f"d{i}" for i in chosen]
    collection = Collection(name="synthetic", queries=query_texts, docs=texts, qrels={})
    return ProbeContext(collection=collection, candidates=lambda: ranking)


def mining_table(context, title: str) -> list[str]:
    """Time features, then each axiom's miner over every query (uncapped)."""
    from abnirml.probes.axioms.features import axiom_data
    from abnirml.probes.axioms.options import AxiomOptions
    from abnirml.probes.axioms.probe import all_axiom_probes
    from abnirml.probes.axioms.semantics import glove_6b_50d

    lines = [f"## {title}", "", "| stage / axiom | instances | seconds | instances/s |",
             "|---|---:|---:|---:|"]
    start = time.perf_counter()
    glove_6b_50d()
    lines.append(f"| load GloVe vectors | | {time.perf_counter() - start:.2f} | |")
    start = time.perf_counter()
    data = axiom_data(context, AxiomOptions())
    lines.append(f"| features ({len(data.queries):,} queries) | | "
                 f"{time.perf_counter() - start:.2f} | |")
    start = time.perf_counter()
    data.stats()
    lines.append(f"| collection statistics (M-TDC idf) | | {time.perf_counter() - start:.2f} | |")
    total = 0.0
    for probe in all_axiom_probes():
        start = time.perf_counter()
        found = sum(int(probe.mine(f, data, context)[0].shape[0]) for f in data.queries)
        seconds = time.perf_counter() - start
        total += seconds
        lines.append(f"| {probe.label} | {found:,} | {seconds:.2f} | "
                     f"{found / max(seconds, 1e-9):,.0f} |")
    lines += [f"| all nine axioms | | {total:.2f} | |", "",
              f"Peak resident memory so far: {peak_rss_mib():,.0f} MiB.", ""]
    return lines


def our_matrices(context, axiom: str) -> tuple[float, float]:
    """Seconds to build every query's full preference matrix: cold (from raw text: analysis
    and features included) and warm (features already built, as when several axioms or
    runs share them)."""
    from abnirml.probes.axioms.features import axiom_data
    from abnirml.probes.axioms.options import AxiomOptions
    from abnirml.probes.axioms.probe import AxiomProbe

    probe = AxiomProbe(axiom)

    def matrices(data) -> None:
        for f in data.queries:
            i, j = probe.mine(f, data, context)[:2]
            matrix = np.zeros((f.size, f.size), dtype=np.int8)
            matrix[i, j] = 1
            matrix[j, i] = -1

    context._memo.clear()                          # cold: analyse every text again
    start = time.perf_counter()
    data = axiom_data(context, AxiomOptions())
    matrices(data)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    matrices(data)
    return cold, time.perf_counter() - start


def comparison_table(context, python: str | None) -> list[str]:
    from abnirml.probes.axioms.semantics import glove_6b_50d
    from abnirml.text.tokenize import terms

    lines = ["## Full preference matrices of the 43 DL19 queries (100 × 100 each)", ""]
    context.ranker_env.collection_stats()
    glove_6b_50d()
    our_matrices(context, "tfc1")                  # warm-up: imports, stemmer, page cache
    ours = {axiom: our_matrices(context, axiom) for axiom in COMPARED}
    theirs: dict[str, dict] = {}
    note = ""
    if python is None:
        note = ("ir_axioms is not importable here (pass --ir-axioms-python or set "
                "IR_AXIOMS_PYTHON): its column is empty.")
    else:
        collection = context.collection
        ranking = context.candidate_docnos()
        queries = [{"query": collection.queries[q], "docs": [collection.docs[d] for d in docs]}
                   for q, docs in sorted(ranking.items())]
        df: Counter[str] = Counter()
        for text in collection.doc_texts():
            df.update(set(terms(text)))
        needed = {t for item in queries for t in terms(item["query"])}
        words = {t for item in queries for text in [item["query"], *item["docs"]]
                 for t in terms(text)}
        glove = glove_6b_50d()
        ids = glove.ids(sorted(words))
        vectors = {w: glove.vectors[i].tolist() for w, i in zip(sorted(words), ids, strict=True)
                   if i >= 0}
        payload = {"queries": queries, "df": {t: df[t] for t in needed},
                   "num_docs": len(collection.docs), "vectors": vectors}
        done = subprocess.run([python, str(Path(__file__).with_name("_ir_axioms_worker.py"))],
                              input=json.dumps(payload), capture_output=True, text=True,
                              timeout=3600)
        if done.returncode != 0:
            note = "ir_axioms failed: " + done.stderr.strip().splitlines()[-1]
        else:
            theirs = json.loads(done.stdout)
    lines += ["| axiom | abnirml cold s | abnirml warm s | ir_axioms s | speed-up cold | "
              "speed-up warm |", "|---|---:|---:|---:|---:|---:|"]
    for axiom, label in COMPARED.items():
        cold, warm = ours[axiom]
        other = theirs.get(label, {}).get("seconds")
        if other is None:
            lines.append(f"| {label} | {cold:.3f} | {warm:.4f} | – | – | – |")
        else:
            lines.append(f"| {label} | {cold:.3f} | {warm:.4f} | {other:.3f} | "
                         f"{other / cold:,.1f}× | {other / max(warm, 1e-9):,.0f}× |")
    lines += ["", "Cold: abnirml analyses every text (stopping, Porter stemming) and builds the "
              "features inside the timing; warm: features already built (shared by all "
              "axioms of a run). ir_axioms gets a bare regex tokenizer (no stopping or "
              "stemming) and prebuilt document frequencies and GloVe vectors.", ""]
    if note:
        lines += [note, ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=5000, help="synthetic queries")
    parser.add_argument("--docs", type=int, default=20_000, help="synthetic documents")
    parser.add_argument("--ir-axioms-python", help="interpreter that can import ir_axioms")
    parser.add_argument("--skip-comparison", action="store_true")
    args = parser.parse_args(argv)
    lines = ["# Axiom mining benchmark", ""]
    if DL19.is_dir():
        lines += mining_table(dl19_probe_context(), "TREC DL 2019, BM25 top 100")
    else:
        lines += [f"(TREC DL 2019 not found at {DL19}: skipped)", ""]
    start = time.perf_counter()
    context = synthetic_context(args.queries, args.docs)
    lines += [f"Synthetic collection built in {time.perf_counter() - start:.1f} s.", ""]
    lines += mining_table(context, f"Synthetic: {args.queries:,} queries × 100 documents")
    del context
    if DL19.is_dir() and not args.skip_comparison:
        lines += comparison_table(dl19_probe_context(), ir_axioms_python(args.ir_axioms_python))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
