"""The bi-encoder on the demo battery (issue 18): CPU seconds before and after fixed-shape encoding.

The pairs the demo battery (``make demo``'s probes) sends to the bi-encoder are collected
first, without scoring them. They are then scored twice in this one process, each time by a
fresh ranker through the engine's own batching (pairs sorted by length, split into the
ranker's engine calls):

* ``before``: the previous encoding — texts grouped by exact token length, each group
  through sentence-transformers' ``encode`` in batches of 64, 512-pair engine calls, every
  document encoded again in each call it appears in;
* ``after``: :meth:`BiEncoderRanker.encode` — fixed-shape forward calls, 2,048-pair engine
  calls and the document-embedding memo.

Printed: CPU and wall seconds of each, the texts and token positions encoded, and the
largest score difference between the two. Run: ``python benchmarks/biencoder_demo.py
[--threads N] [--queries K]`` (``--queries`` keeps the pairs of the first K query texts, for
a quicker look).
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

from benchmarks.common import print_table
from benchmarks.demo_timing import device


def demo_pairs() -> list[tuple[str, str]]:
    """The unique (query, document) pairs the demo battery asks the bi-encoder to score."""
    from abnirml.cli import main
    from abnirml.evaluation.execution import scoring
    collected: list[tuple[str, str]] = []
    score = scoring.Scorer.score

    def record(self, ranker, pairs):
        if ranker.name != "biencoder":
            return score(self, ranker, pairs)
        collected.extend(pairs)
        return np.zeros(len(pairs))

    scoring.Scorer.score = record
    try:
        with tempfile.TemporaryDirectory() as tmp:
            main(["run", "--collection", "demo", "--ranker", "biencoder", "--probe", "all",
                  "--transfer-data", "demo", "--quiet", "--no-effectiveness",
                  "--cache", str(Path(tmp) / "c.sqlite"), "--out", str(Path(tmp) / "out")])
    finally:
        scoring.Scorer.score = score
    return list(dict.fromkeys(collected))


def legacy_ranker() -> Any:
    """The bi-encoder as it encoded before fixed shapes (kept here only to compare)."""
    from abnirml.rankers.families.biencoder import BiEncoderRanker, resolve_biencoder_model
    from abnirml.rankers.support.torch_support import neural_hints

    class Legacy(BiEncoderRanker):
        def encode(self, texts):
            torch = self._torch
            tokenizer = self.model.tokenizer
            ids = tokenizer(list(texts), truncation=True, max_length=self.model.max_seq_length)
            groups: dict[int, list[int]] = {}
            for i, row in enumerate(ids["input_ids"]):
                groups.setdefault(len(row), []).append(i)
            parts, order = [], []
            for length in sorted(groups):
                members = groups[length]
                parts.append(self._encode_plainly([texts[i] for i in members]))
                order.extend(members)
            stacked = torch.cat(parts)
            out = torch.empty_like(stacked)
            out[torch.tensor(order)] = stacked
            self.encoded_tokens += sum(len(r) for r in ids["input_ids"])
            return out

        def _document_embeddings(self, docs):
            return self.encode(docs)

    ranker = Legacy(resolve_biencoder_model("", "biencoder", None), "biencoder")
    ranker.hints = neural_hints(ranker.batch_size, calls_per_commit=8)
    return ranker


def counting_ranker() -> Any:
    """Today's bi-encoder, counting the token positions its forward calls compute."""
    from abnirml.rankers.families.biencoder import BiEncoderRanker, resolve_biencoder_model

    ranker = BiEncoderRanker(resolve_biencoder_model("", "biencoder", None), "biencoder")
    model = ranker.model
    forward = model.forward

    def counted(features, *args, **kwargs):
        ranker.encoded_tokens += int(features["input_ids"].numel())
        return forward(features, *args, **kwargs)

    model.forward = counted
    return ranker


def score_like_the_engine(ranker: Any, pairs: list[tuple[str, str]]
                          ) -> tuple[np.ndarray, float, float]:
    """Scores of ``pairs`` through the engine's order and call sizes; CPU and wall seconds."""
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    size = ranker.hints.batch_size
    out = np.empty(len(pairs))
    assert ranker.model is not None      # loaded before the clock starts, for both sides
    cpu, wall = time.process_time(), time.perf_counter()
    for start in range(0, len(order), size):
        idx = order[start:start + size]
        out[idx] = ranker.score([pairs[i] for i in idx])
    return out, time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--queries", type=int, default=0, help="keep the first K query texts")
    args = parser.parse_args()
    # As the `abnirml` command does: OpenMP threads sleep while they wait instead of spinning,
    # which on shared cores would count spinning as work.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"device: {device()}, torch threads {torch.get_num_threads()}")
    pairs = demo_pairs()
    if args.queries:
        kept = set(sorted({q for q, _ in pairs})[:args.queries])
        pairs = [p for p in pairs if p[0] in kept]
    docs = {d for _, d in pairs}
    print(f"{len(pairs):,} pairs, {len(docs):,} distinct documents, "
          f"{len({q for q, _ in pairs}):,} distinct queries")
    rows, scores = [], {}
    for label, build in (("before (same-length groups)", legacy_ranker),
                         ("after (fixed shapes + memo)", counting_ranker)):
        ranker = build()
        ranker.encoded_tokens = 0
        scores[label], cpu, wall = score_like_the_engine(ranker, pairs)
        rows.append((label, ranker.hints.batch_size, ranker.encoded_tokens, cpu, wall))
    print_table("bi-encoder on the demo battery", ["encoding", "pairs per engine call",
                "token positions computed", "CPU s", "wall s"], rows)
    before, after = scores.values()
    print(f"\nCPU ratio before/after: {rows[0][3] / rows[1][3]:.2f}×; "
          f"largest score difference: {np.abs(before - after).max():.2e}")


if __name__ == "__main__":
    main()
