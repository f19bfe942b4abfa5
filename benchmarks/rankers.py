"""Ranker benchmarks on TREC DL 2019 (``../shared/data/trec-dl-2019``).

1. The packaged bi-encoder (all-MiniLM-L6-v2) on the unique (query, passage) pairs of the
   DL19 measure-and-match battery plus δ calibration (what ``abnirml run --probe 'mmp:*'``
   scores): pairs per second through the engine, and the engine's wall time divided by the
   pure model time on the same unique pairs — sentence-transformers encoding each distinct
   text once and taking dot products, nothing else (framework overhead; target ≤ 1.10).
   Like for like: both start from nothing (the engine's query and document memos and its
   score cache empty, checked, and every distinct text counted through the model once);
   the engine's run also includes hashing, the cache's lookups and commits, and its
   fixed-shape forward calls (dummy rows fill each length bucket's last call, more of
   them in a small sample). Wall and CPU seconds are both printed: on shared cores CPU
   time is the steadier comparison.
2. KNRM, Conv-KNRM and LightGBM trained on DL19 with 5 query folds re-rank the BM25 run's top
   100: nDCG@10 against random order of the same candidates (mean of 20 shuffles) and the
   BM25 order itself.

Run: ``python benchmarks/rankers.py [--data DIR] [--skip-biencoder] [--skip-learned]
[--max-pairs N]`` (default: a seeded sample of 1,000 battery pairs; 0 for all of them).
Prints small tables; timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import engine_positions, plain_positions

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("ABNIRML_SHARED_DATA", ROOT.parent / "shared" / "data")
                    ) / "trec-dl-2019"


class _Recorder:
    """A ranker that only records which pairs the engine asks for."""

    name = "recorder"
    fingerprint = "recorder"

    def __init__(self) -> None:
        from abnirml.rankers.base import RankerHints

        self.hints = RankerHints(batch_size=10**9)
        self.pairs: list[tuple[str, str]] = []

    def score(self, pairs):
        self.pairs.extend(pairs)
        return np.arange(len(pairs), dtype=np.float64)


def battery_pairs(data: Path) -> list[tuple[str, str]]:
    """The unique pairs the engine scores for ``--probe 'mmp:*'`` on ``data``."""
    from abnirml.data.collection import load_collection
    from abnirml.evaluation.execution.candidates import resolve_candidates
    from abnirml.evaluation.execution.experiment import ExperimentConfig, run_experiment
    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.probes.base import ProbeContext
    from abnirml.probes.probe_registry import select_probes
    from abnirml.rankers.support.cache import ScoreCache

    collection = load_collection(str(data))
    candidates = resolve_candidates(collection, None, 100)
    recorder = _Recorder()
    context = ProbeContext(collection=collection, candidates=lambda: candidates.ranking)
    run_experiment(select_probes(["mmp:*"]), [recorder], context,
                   Scorer(ScoreCache(None), progress=False), ExperimentConfig(), candidates)
    return recorder.pairs


def forget_embeddings(ranker: Any) -> None:
    """Empty the bi-encoder's query and document memos, so a timed run encodes every text."""
    ranker._query_memo.clear()
    ranker._doc_memo.clear()


def timed_engine_run(ranker: Any, pairs: list[tuple[str, str]], cache: Any
                     ) -> tuple[float, int]:
    """Seconds the engine takes to score ``pairs`` into the empty ``cache``, and how many
    texts the model encoded meanwhile (counted at :meth:`BiEncoderRanker.encode`).

    Refuses to time a run that starts with anything memoised (an embedding kept from an
    earlier run, a score already in the cache): such a run measures lookups, not scoring.
    """
    from abnirml.evaluation.execution.scoring import Scorer

    memoised = len(ranker._query_memo) + len(ranker._doc_memo)
    if memoised:
        raise RuntimeError(f"timed engine run would start with {memoised} memoised embeddings")
    if cache.count():
        raise RuntimeError("timed engine run would start with scores in its cache")
    encoded = [0]
    original = ranker.encode

    def counting(texts):
        encoded[0] += len(texts)
        return original(texts)

    ranker.encode = counting
    try:
        start = time.perf_counter()
        Scorer(cache, progress=False).score(ranker, pairs)
        seconds = time.perf_counter() - start
    finally:
        del ranker.encode
    return seconds, encoded[0]


def biencoder_figures(data: Path, max_pairs: int | None) -> list[tuple[str, str]]:
    import torch

    from abnirml.rankers.registry import RankerEnv, build_ranker
    from abnirml.rankers.support.cache import ScoreCache

    all_pairs = battery_pairs(data)
    pairs = all_pairs
    if max_pairs and max_pairs < len(all_pairs):
        keep = np.sort(np.random.default_rng(0).choice(len(all_pairs), max_pairs, replace=False))
        pairs = [all_pairs[i] for i in keep]
    ranker = build_ranker("biencoder", RankerEnv())
    model = ranker.model
    ranker.encode(["warm up the model", "and its tokenizer"])

    def pure() -> tuple[float, float]:
        start, cpu_start = time.perf_counter(), time.process_time()
        queries = list(dict.fromkeys(q for q, _ in pairs))
        docs = list(dict.fromkeys(d for _, d in pairs))
        with torch.inference_mode():
            q = model.encode(queries, batch_size=ranker.batch_size, convert_to_tensor=True,
                             normalize_embeddings=True)
            d = model.encode(docs, batch_size=ranker.batch_size, convert_to_tensor=True,
                             normalize_embeddings=True)
            qi = {t: i for i, t in enumerate(queries)}
            di = {t: i for i, t in enumerate(docs)}
            (q[[qi[a] for a, _ in pairs]] * d[[di[b] for _, b in pairs]]).sum(-1).cpu()
        return time.perf_counter() - start, time.process_time() - cpu_start

    def engine() -> tuple[float, float]:
        forget_embeddings(ranker)
        cpu_start = time.process_time()
        with tempfile.TemporaryDirectory() as tmp, ScoreCache(Path(tmp) / "s.sqlite") as cache:
            seconds, encoded = timed_engine_run(ranker, pairs, cache)
        cpu = time.process_time() - cpu_start
        # proof that the timed run did the work: every distinct text went through the model
        expected = len({q for q, _ in pairs}) + len({d for _, d in pairs})
        if encoded != expected:
            raise SystemExit(f"engine run encoded {encoded} texts, expected {expected}: "
                             "something was memoised before the timed run")
        return seconds, cpu

    pure_times, engine_times = [], []
    for _ in range(2):                      # interleaved, best of two: load on shared cores
        pure_times.append(pure())
        engine_times.append(engine())
    best_pure, best_engine = min(pure_times), min(engine_times)
    pure_cpu, engine_cpu = min(c for _, c in pure_times), min(c for _, c in engine_times)
    load = os.getloadavg()[0]
    # the work each way computes: the engine pads each text to a multiple of 8 tokens in
    # fixed-shape calls, the plain loop pads each batch to its longest text
    distinct = (list(dict.fromkeys(q for q, _ in pairs)), list(dict.fromkeys(d for _, d in pairs)))
    engine_work = sum(engine_positions(model, texts, ranker.tokens_per_forward)
                      for texts in distinct)
    pure_work = sum(plain_positions(model, texts, ranker.batch_size) for texts in distinct)
    return [
        ("unique pairs (mmp:* battery + calibration)", f"{len(all_pairs):,}"),
        ("pairs timed (seeded sample; --max-pairs 0: all)", f"{len(pairs):,}"),
        ("distinct queries / passages", f"{len({q for q, _ in pairs})} / "
                                        f"{len({d for _, d in pairs}):,}"),
        ("device / torch threads / cores / load average",
         f"{ranker.device} / {torch.get_num_threads()} / {os.cpu_count()} / {load:.1f}"),
        ("engine wall time (s; every text encoded, nothing memoised)", f"{best_engine[0]:.2f}"),
        ("pure model wall time (s)", f"{best_pure[0]:.2f}"),
        ("engine / pure model CPU seconds", f"{engine_cpu:.2f} / {pure_cpu:.2f}"),
        ("pairs / second (engine)", f"{len(pairs) / best_engine[0]:,.0f}"),
        ("engine / pure model, wall (target ≤ 1.10)", f"{best_engine[0] / best_pure[0]:.3f}"),
        ("engine / pure model, CPU time (robust to load)", f"{engine_cpu / pure_cpu:.3f}"),
        ("token positions computed: engine / pure model (padding included)",
         f"{engine_work:,} / {pure_work:,}"),
        ("engine / pure model, CPU time per token position (like for like)",
         f"{(engine_cpu / engine_work) / (pure_cpu / pure_work):.3f}"),
    ]


def ndcg10(run: dict[str, dict[str, float]], qrels) -> float:
    import ir_measures
    from ir_measures import nDCG

    return float(ir_measures.calc_aggregate([nDCG @ 10], qrels, run)[nDCG @ 10])


def learned_figures(data: Path, seed: int) -> list[tuple[str, str, str]]:
    from abnirml.data.collection import load_collection
    from abnirml.rankers.registry import RankerEnv, build_ranker

    collection = load_collection(str(data))
    bm25 = collection.runs["bm25"]()
    candidates = {qid: [d for d, _ in ranking[:100] if d in collection.docs]
                  for qid, ranking in bm25.items() if qid in collection.qrels}
    qrels = {q: dict(j) for q, j in collection.qrels.items()}
    bm25_order = {q: {d: float(-i) for i, d in enumerate(ds)} for q, ds in candidates.items()}
    rows = [("BM25 run order", f"{ndcg10(bm25_order, qrels):.3f}", "")]
    rng = np.random.default_rng(seed)
    shuffles = []
    for _ in range(20):
        shuffles.append(ndcg10({q: {d: float(s) for d, s in zip(ds, rng.permutation(len(ds)),
                                                                   strict=True)}
                                for q, ds in candidates.items()}, qrels))
    rows.append(("random order (mean of 20)", f"{np.mean(shuffles):.3f}",
                 f"± {np.std(shuffles):.3f}"))
    env = RankerEnv(collection=collection, seed=seed)
    for spec in ("knrm", "cknrm", "lgbm"):
        start = time.perf_counter()
        ranker = build_ranker(spec, env)
        trained = time.perf_counter() - start
        run = {}
        for qid, docs in candidates.items():
            scores = ranker.score([(collection.queries[qid], collection.docs[d]) for d in docs])
            run[qid] = {d: float(s) for d, s in zip(docs, scores, strict=True)}
        routed = {ranker.model_for(collection.queries[q]) for q in candidates}
        rows.append((f"{spec} (5 query folds, seed {seed})", f"{ndcg10(run, qrels):.3f}",
                     f"trained/loaded in {trained:.0f}s; models used: {len(routed)}"))
    return rows


def print_table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-pairs", type=int, default=1000,
                        help="time a seeded sample of this many battery pairs (0: all; a CPU "
                             "core encodes roughly 30 passages a second)")
    parser.add_argument("--skip-biencoder", action="store_true")
    parser.add_argument("--skip-learned", action="store_true")
    args = parser.parse_args(argv)
    if not (args.data / "queries.tsv").is_file():
        print(f"skipped: TREC DL 2019 not found at {args.data}")
        return 0
    os.environ.setdefault("ABNIRML_MODELS", str(Path(tempfile.gettempdir()) /
                                                 "abnirml-bench-models"))
    if not args.skip_biencoder:
        print_table("Packaged bi-encoder on DL19 battery pairs", ("figure", "value"),
                    biencoder_figures(args.data, args.max_pairs))
    if not args.skip_learned:
        print_table("Learned rankers re-ranking the DL19 BM25 top 100 (nDCG@10)",
                    ("ranking", "nDCG@10", "note"), learned_figures(args.data, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
