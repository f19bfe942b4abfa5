"""Engine overhead of a token-budget ranker on CPU: engine wall / pure model loop, before vs now.

A GPU computes a small cross-encoder so fast that whatever the engine does around the model
— tokenizing, padding, sorting, per-pair Python — sets the pace (#13 measured 7–8 % GPU
utilisation on an H100). The same overhead shows on a CPU when the model is tiny: a
randomly initialised 2-layer BERT of the dimensions of ``tests/_tiny_models.py`` (hidden
size 32; ``--shape tiny``: 64) but with the real bert-base-uncased vocabulary of the
packaged all-MiniLM-L6-v2, so tokenization costs what it costs with a real model. For
each code base (this checkout, and ``--baseline`` exported with ``git archive``), in fresh
interpreters alternating between the two, with the same torch thread count, it measures:

* **pure** — the model alone over pre-tokenized, padded token-budget batches (what no
  engine can beat);
* **engine** — ``Scorer.score`` on the same unique pairs with an in-memory score cache,
  model already loaded: cache lookup, tokenization, packing, forward passes, checks;

and prints engine / pure for both code bases and the before/after ratio, in wall time and
in CPU time of the whole process (all threads): on a shared machine the wall time mostly
measures the scheduler, while CPU time shows the work the engine adds. Torch runs on
``--threads`` threads (default 1, so a second core is free for tokenizing ahead, as the host
CPU is beside a GPU). Scores of the two code bases are compared too (max |difference|).

Run: ``python benchmarks/engine_overhead.py [--pairs 8192] [--data DIR|demo]
[--baseline COMMIT] [--threads 1]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
#: the branch point of the #13 follow-up work (engine tokenization in large chunks)
BASELINE = "b06b161"


def battery_pairs(data: str, limit: int, seed: int = 0) -> list[tuple[str, str]]:
    """Unique pairs of the GPU benchmark's battery, a seeded sample of ``limit`` of them."""
    import random

    from benchmarks.gpu import sample_building

    _, pairs = sample_building(data)
    pairs = sorted(set(pairs))
    random.Random(seed).shuffle(pairs)
    return pairs[:limit]


_WORKER = r"""
import json, sys, time
args = json.loads(sys.argv[1])
import numpy as np
import torch
torch.set_num_threads(args["threads"])
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.rankers.support.cache import ScoreCache
from abnirml.rankers.support.device_batching import pad_rows, token_budget_batches
from abnirml.rankers.registry import RankerEnv, build_ranker
pairs = [tuple(p) for p in json.load(open(args["pairs"]))]

def engine():
    ranker = build_ranker("cross-encoder:" + args["model"], RankerEnv())
    ranker.tokenizer, ranker.model            # loaded before the clock starts
    scorer = Scorer(ScoreCache(None), progress=False)
    start, cpu = time.perf_counter(), time.process_time()
    scores = scorer.score(ranker, pairs)
    return (time.perf_counter() - start, time.process_time() - cpu), scores, ranker

def pure(ranker):
    tok, model = ranker.tokenizer, ranker.model
    enc = tok([q for q, _ in pairs], [d for _, d in pairs], truncation=True, max_length=512)
    keys = ("input_ids", "attention_mask", "token_type_ids")
    rows = [{k: enc[k][i] for k in keys} for i in range(len(pairs))]
    batches = token_budget_batches([len(r["input_ids"]) for r in rows], 8192)
    tensors = [{k: torch.from_numpy(v) for k, v in pad_rows([rows[i] for i in b], {}).items()}
               for b in batches]
    with torch.inference_mode():
        model(**{k: v[:2] for k, v in tensors[0].items()})
        start, cpu = time.perf_counter(), time.process_time()
        for t in tensors:
            model(**t).logits
        return time.perf_counter() - start, time.process_time() - cpu

engine()   # warm-up: first calls allocate and JIT-select kernels
runs = []
for _ in range(args["repeats"]):
    seconds, scores, ranker = engine()
    runs.append((seconds, pure(ranker)))
np.save(args["scores"], scores)
(engine_s, engine_cpu), (pure_s, pure_cpu) = runs[-1]
print(json.dumps({"engine_s": engine_s, "pure_s": pure_s, "engine_cpu_s": engine_cpu,
                  "pure_cpu_s": pure_cpu}))
"""


def measure(src: Path, model: Path, pairs_file: Path, scores: Path, threads: int,
            repeats: int) -> dict[str, float]:
    args = {"model": str(model), "pairs": str(pairs_file), "scores": str(scores),
            "threads": threads, "repeats": repeats}
    env = dict(os.environ, PYTHONPATH=str(src), TOKENIZERS_PARALLELISM="true")
    done = subprocess.run([sys.executable, "-c", _WORKER, json.dumps(args)], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"worker failed ({src}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    from benchmarks.demo_warm import export_src
    from benchmarks.gpu import DEFAULT_DATA, SHAPES, build_model, vocab_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--pairs", type=int, default=8192)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shape", default="micro", choices=("micro", "tiny"))
    args = parser.parse_args(argv)
    if args.data != "demo" and not (Path(args.data) / "queries.tsv").is_file():
        args.data = "demo"
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="abnirml-overhead-") as tmp:
        work = Path(tmp)
        pairs = battery_pairs(args.data, args.pairs)
        (work / "pairs.json").write_text(json.dumps(pairs))
        model = build_model(args.shape, vocab_dir(None), work / args.shape)
        trees = {"before": export_src(args.baseline, work / "before"), "now": ROOT / "src"}
        print(f"device: CPU ({os.cpu_count()} cores, shared), torch threads {args.threads}; "
              f"{args.shape} BERT {SHAPES[args.shape]} (real vocabulary); {len(pairs):,} unique "
              f"battery pairs from {args.data}; median of {args.repeats}", flush=True)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for _ in range(args.repeats):       # alternating, so load drift hits both alike
            for name, src in trees.items():
                runs[name].append(measure(src, model, work / "pairs.json", work / f"{name}.npy",
                                          args.threads, 1))
                print(f"{name}: {runs[name][-1]}", flush=True)
        results = {name: {key: statistics.median(r[key] for r in rs)
                          for key in rs[0]} for name, rs in runs.items()}
        print("\n| code | engine wall s | pure wall s | engine / pure (wall) | engine CPU s | "
              "pure CPU s | engine / pure (CPU) |")
        print("|---|---|---|---|---|---|---|")
        for name, r in results.items():
            print(f"| {name} | {r['engine_s']:.2f} | {r['pure_s']:.2f} | "
                  f"{r['engine_s'] / r['pure_s']:.2f} | {r['engine_cpu_s']:.2f} | "
                  f"{r['pure_cpu_s']:.2f} | {r['engine_cpu_s'] / r['pure_cpu_s']:.2f} |")
        before, now = results["before"], results["now"]
        diff = float(np.max(np.abs(np.load(work / "before.npy") - np.load(work / "now.npy"))))
        print(f"\nengine time before / now: wall {before['engine_s'] / now['engine_s']:.2f}×, "
              f"CPU {before['engine_cpu_s'] / now['engine_cpu_s']:.2f}×; "
              f"max |score difference| before vs now: {diff:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
