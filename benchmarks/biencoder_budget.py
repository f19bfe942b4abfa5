"""The bi-encoder's forward-call budget on CPU: the same texts encoded with different token
positions per call, alternating in one process.

Each pass calls :meth:`BiEncoderRanker.encode` on the same seeded sample of the DL19
``mmp:*`` battery's passages, with
``tokens_per_forward`` set to each budget in turn; the memos are not involved (``encode``
has none), and every pass checks it returned one embedding per text. Printed per pass: wall
and CPU seconds; at the end the token positions each budget computes (dummy rows included)
and whether the embeddings are bit-identical across budgets.

Run: ``python benchmarks/biencoder_budget.py [--texts N] [--threads T] [--repeats R]
[--budgets 512,2048]``. On shared cores, use one thread: two threads wait for each
other at every call, and a descheduled thread can make a single pass many times slower.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import engine_positions


def sample_texts(count: int) -> list[str]:
    """A seeded sample of the passages the DL19 ``mmp:*`` battery scores."""
    from benchmarks import rankers

    docs = sorted({d for _, d in rankers.battery_pairs(rankers.DEFAULT_DATA)})
    random.Random(1).shuffle(docs)
    return docs[:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budgets", default="512,2048")
    args = parser.parse_args(argv)
    import torch

    from abnirml.rankers.families.biencoder import BiEncoderRanker, resolve_biencoder_model

    torch.set_num_threads(args.threads)
    budgets = [int(b) for b in args.budgets.split(",")]
    texts = sample_texts(args.texts)
    ranker = BiEncoderRanker(resolve_biencoder_model("", "biencoder", None), "biencoder")
    ranker.encode(texts[:16])                   # load and warm up
    embeddings = {}
    for repeat in range(args.repeats):
        for budget in budgets:
            ranker.tokens_per_forward = budget
            wall, cpu = time.perf_counter(), time.process_time()
            out = ranker.encode(texts)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if out.shape[0] != len(texts):
                raise SystemExit(f"{out.shape[0]} embeddings for {len(texts)} texts")
            embeddings[budget] = out
            print(f"pass {repeat + 1}, {budget} positions per call: wall {wall:.2f} s, "
                  f"CPU {cpu:.2f} s; {len(texts)} texts, {args.threads} threads, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    for budget in budgets:
        same = torch.equal(embeddings[budget], embeddings[budgets[0]])
        work = engine_positions(ranker.model, texts, budget)
        print(f"{budget} positions per call: {work:,} positions "
              f"computed; embeddings {'bit-identical to' if same else 'differ from'} "
              f"{budgets[0]}'s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
