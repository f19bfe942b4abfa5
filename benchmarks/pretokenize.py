"""Would tokenizing each probe table's pairs while the next table is built save time?

Today the engine learns the unique pairs only after every probe table is built, then scores
them with tokenization running one chunk ahead of the model in a background thread. The
alternative (#13) tokenizes each table's new pairs in the background *during* sample
building. On the DL19 battery (the GPU benchmark's), with a cross-encoder of the test
models' size (``--shape micro``; real bert-base-uncased vocabulary, so tokenizing costs what
it costs with a real model) on ``--threads`` torch threads, in one process, it measures:

* **B** — sample building alone; **B′** — sample building while a background thread makes
  the engine's own tokenizer calls (1,024-pair chunks) for every unique pair: what
  pre-tokenizing would cost the building phase (both compete for the same cores);
* **T** — those tokenizer calls alone;
* **S** — ``Scorer.score`` over the unique pairs as today (tokenized ahead while scoring);
* **S_pre** — the same with every pair already tokenized (rows looked up, not tokenized):
  the scoring phase if pre-tokenizing had run.

Pre-tokenizing saves ``(B + S) − (B′ + S_pre)``; it also checks that the two scorings give
identical scores. Run: ``python benchmarks/pretokenize.py [--data DIR] [--threads 1]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def tokenize_all(ranker, pairs: list[tuple[str, str]], chunk: int = 1024) -> dict:
    """The engine's tokenizer calls over ``pairs``: pair → its token-id lists per key."""
    rows = {}
    for start in range(0, len(pairs), chunk):
        part = pairs[start:start + chunk]
        tokens = ranker._rows(part)
        for i, pair in enumerate(part):
            a, n = int(tokens.offsets[i]), int(tokens.lengths[i])
            rows[pair] = {k: v[a:a + n] for k, v in tokens.flat.items()}
    return rows


def main(argv: list[str] | None = None) -> int:
    from benchmarks.gpu import DEFAULT_DATA, SHAPES, build_model, sample_building, vocab_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--shape", default="micro", choices=("micro", "tiny"))
    args = parser.parse_args(argv)
    if args.data != "demo" and not (Path(args.data) / "queries.tsv").is_file():
        args.data = "demo"
    import numpy as np
    import torch

    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.rankers.registry import RankerEnv, build_ranker
    from abnirml.rankers.support.cache import ScoreCache
    from abnirml.rankers.support.device_batching import TokenColumns

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="abnirml-pretok-") as tmp:
        model = build_model(args.shape, vocab_dir(None), Path(tmp) / args.shape)
        ranker = build_ranker(f"cross-encoder:{model}", RankerEnv())
        ranker.tokenizer, ranker.model       # noqa: B018 — loaded before any clock starts
        sample_building(args.data)           # warm-up: imports, collection caches
        build_s, pairs = sample_building(args.data)
        pairs = list(dict.fromkeys(pairs))

        start = time.perf_counter()
        rows = tokenize_all(ranker, pairs)
        tokenize_s = time.perf_counter() - start

        background: dict = {}
        worker = threading.Thread(target=lambda: background.update(tokenize_all(ranker, pairs)))
        worker.start()
        build_with_s, _ = sample_building(args.data)
        worker.join()
        overlap_s = time.perf_counter() - start - tokenize_s

        def scoring(pre: bool) -> tuple[float, np.ndarray]:
            if pre:
                ranker._rows = lambda part: TokenColumns.from_lists(
                    {k: [rows[p][k] for p in part] for k in rows[part[0]]})
            try:
                begin = time.perf_counter()
                scores = Scorer(ScoreCache(None), progress=False).score(ranker, pairs)
                return time.perf_counter() - begin, scores
            finally:
                ranker.__dict__.pop("_rows", None)

        scoring(False)                        # warm-up
        score_s, today = scoring(False)
        score_pre_s, pre = scoring(True)
        saved = (build_s + score_s) - (build_with_s + score_pre_s)
        print(f"device: CPU ({os.cpu_count()} cores, shared), torch threads {args.threads}; "
              f"{args.shape} cross-encoder {SHAPES[args.shape]} (real vocabulary); "
              f"{len(pairs):,} unique pairs of the battery on {args.data}")
        print("| B build | B′ build + background tokenizing (wall of both) | T tokenize alone | "
              "S score today | S_pre score pre-tokenized | saved (B+S)−(B′+S_pre) |")
        print("|---|---|---|---|---|---|")
        print(f"| {build_s:.1f} s | {build_with_s:.1f} s ({overlap_s:.1f} s) | {tokenize_s:.1f} s"
              f" | {score_s:.1f} s | {score_pre_s:.1f} s | {saved:+.1f} s "
              f"({100 * saved / (build_s + score_s):+.0f} %) |")
        print(f"scores identical: {bool(np.array_equal(today, pre))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
