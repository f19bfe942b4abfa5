"""A cold bi-encoder run against the model's own work: ``abnirml run --collection demo
--ranker biencoder --probe 'mmp:*' --no-cache`` with fresh cache folders, end to end.

The run is the real program in a child process. Inside it, every text the bi-encoder encodes
is recorded; when the run is over (an exit handler, which runs whether the program ends
with or without the interpreter's teardown) the same texts are encoded once more by plain
sentence-transformers (``model.encode``, batches of 64, model already loaded and warm) and
timed. Printed: the run's wall time (process start to exit, less that measurement), that
pure encode time, the token positions each way computes, and their ratio — everything the
program adds to the model's own work: imports, model loading, reading the collection,
building samples, the engine, writing results (target ≤ 2.2).

Run: ``python benchmarks/cold_biencoder.py [--repeats N]``; alternate with another checkout
by running it with that checkout's ``src`` first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import atexit, json, sys, time
from abnirml.rankers import biencoder
texts, spent, rankers = [], [0.0], []
original = biencoder.BiEncoderRanker.encode
def recorded(self, batch):
    self.model   # loading (or waiting for the preload) is not the model's encoding work
    start = time.perf_counter()
    try:
        return original(self, batch)
    finally:
        spent[0] += time.perf_counter() - start
        texts.extend(batch)
        rankers.append(self)
biencoder.BiEncoderRanker.encode = recorded
def pure_encode():
    end = time.time()
    import torch
    model = rankers[0].model
    with torch.inference_mode():
        model.encode(["warm up"], batch_size=64)
        start = time.perf_counter()
        model.encode(texts, batch_size=64, convert_to_tensor=True, normalize_embeddings=True)
        pure = time.perf_counter() - start
    # token positions each way computes: the engine's fixed-shape calls (dummy rows fill
    # each length bucket's last call) and plain encode's batches of 64 padded to their longest
    ranker = rankers[0]
    prepare = getattr(model, "preprocess", None) or model.tokenize
    lengths = prepare(texts)["attention_mask"].sum(dim=1).tolist()
    buckets = {}
    for n in lengths:
        width = biencoder.bucket_length(int(n), model.max_seq_length)
        buckets[width] = buckets.get(width, 0) + 1
    engine_positions = sum(-(-count // biencoder.rows_per_forward(w, ranker.tokens_per_forward))
                           * biencoder.rows_per_forward(w, ranker.tokens_per_forward) * w
                           for w, count in buckets.items())
    ordered = sorted(lengths, reverse=True)
    pure_positions = sum(max(ordered[i:i + 64]) * len(ordered[i:i + 64])
                         for i in range(0, len(ordered), 64))
    with open(out, "w") as handle:
        json.dump({"handler_s": time.time() - end, "pure_s": pure,
                   "tokens": sum(lengths), "engine_positions": engine_positions,
                   "pure_positions": pure_positions, "engine_encode_s": spent[0],
                   "texts": len(texts), "distinct": len(set(texts))}, handle)
atexit.register(pure_encode)
out, sys.argv = sys.argv[1], ["abnirml", *sys.argv[2:]]
sys.argv.insert(1, "run")
from abnirml.cli import main
sys.exit(main())
"""


def cold_run(tmp: Path) -> dict[str, float]:
    fresh = tmp / "xdg"
    env = {k: v for k, v in os.environ.items() if k != "ABNIRML_CACHE"}
    env.update(XDG_CACHE_HOME=str(fresh))
    report = tmp / "report.json"
    start = time.time()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(report), "--collection", "demo", "--ranker",
         "biencoder", "--probe", "mmp:*", "--no-cache", "--quiet", "--out", str(tmp / "out")],
        env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the run failed:\n{done.stderr[-2000:]}")
    elapsed = time.time() - start
    figures = json.loads(report.read_text())
    # the process's whole life, teardown included, less the measuring handler's own time
    figures["wall_s"] = elapsed - figures["handler_s"]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    for number in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            f = cold_run(Path(tmp))
        load = os.getloadavg()[0]
        print(f"run {number + 1}: wall {f['wall_s']:.2f} s; engine encode (loading excluded) "
              f"{f['engine_encode_s']:.2f} s; pure encode {f['pure_s']:.2f} s of "
              f"{f['texts']:,} texts "
              f"({f['distinct']:,} distinct); {os.cpu_count()} cores, load {load:.1f}")
        print(f"token positions computed: texts {f['tokens']:,}; engine's fixed-shape calls "
              f"{f['engine_positions']:,}; plain encode {f['pure_positions']:,}")
        print(f"cold run / pure encode: {f['wall_s'] / f['pure_s']:.2f} (target ≤ 2.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
