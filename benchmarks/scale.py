"""Millions of passages: wall time and peak memory of ``abnirml run`` on a synthetic collection.

docs/guide/scaling.md: a passages file above ``ABNIRML_STREAM_DOCS_BYTES`` (256 MiB) is read from
disk through an offset index, so that a large collection runs in little memory. This
benchmark writes such a collection into a temporary folder (never the repository) and runs
the lexical rankers and a probe set over it, once streamed from disk and, where asked, once
with the threshold raised so the passages are held in memory. Each run is a child process,
so its VmHWM is its own peak.

The collection: passage lengths and words are resampled from the DL19 passages in
../shared/data (seeded), or drawn from a Zipfian vocabulary of made-up words without it.
DL19's 14,581 passages hold too few distinct words for millions of passages, so one word in
``RARE_SHARE`` is replaced by a rare one (names, codes, numbers) drawn from an unbounded
Zipf law: the vocabulary then keeps growing with the collection as real text's does.
Each query's candidate run has ``--depth`` passages with the query's words planted in
them (score = planted count plus noise); about half of them are judged, graded by score.
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CLI_WITH_PEAK_RSS, DL19, print_table

#: Probes run by default: every MMP probe, manipulations that need no model or parser, and
#: every axiom. ``--probe all`` widens it.
DEFAULT_PROBES = ["mmp:*", "tmp:remove-stops", "tmp:shuffle-words", "tmp:typos",
                  "tmp:duplicate-k2", "tmp:only-query", "tmp:drop-query", "tmp:prepend-query",
                  "tmp:add-nonrel-sentence", "axiom:*"]
CHUNK = 50_000
RARE_SHARE = 0.04
RARE_ZIPF = 1.15


def word_source(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """(words, their probabilities, passage lengths to resample, description)."""
    passages = DL19 / "passages.tsv"
    if passages.is_file():
        counts: dict[str, int] = {}
        lengths = []
        with passages.open(encoding="utf-8") as handle:
            for line in handle:
                words = line.rstrip("\n").partition("\t")[2].split()
                lengths.append(len(words))
                for word in words:
                    counts[word] = counts.get(word, 0) + 1
        words = np.array(sorted(counts, key=lambda w: (-counts[w], w)))
        freq = np.array([counts[w] for w in words], dtype=np.float64)
        return words, freq / freq.sum(), np.array(lengths), "DL19 passages' words resampled"
    words = np.array([f"w{i}" for i in range(200_000)])
    freq = 1.0 / np.arange(1, len(words) + 1) ** 1.07
    lengths = np.clip(rng.normal(60, 25, size=10_000).astype(int), 5, 250)
    return words, freq / freq.sum(), lengths, "Zipfian made-up vocabulary (no ../shared)"


def _rare_word(rank: int) -> str:
    """A distinct code-like word (≥ 4 letters and digits) for each rank of the Zipf law."""
    return np.base_repr(rank * 7919 % 36**9 + 36**3, 36).lower()


def generate(root: Path, n_docs: int, n_queries: int, depth: int, seed: int) -> dict:
    """Write queries.tsv, qrels.txt, passages.tsv and runs/bm25.run under ``root``."""
    rng = np.random.default_rng(seed)
    words, probs, lengths, source = word_source(rng)
    root.mkdir(parents=True)
    (root / "runs").mkdir()
    # Query words: alphabetic words of middling frequency (ranks 200-20,000), 2-4 a query.
    middling = [i for i in range(200, min(20_000, len(words))) if words[i].isalpha()]
    queries = {f"{1000 + q}": [str(words[i]) for i in
                               rng.choice(middling, size=int(rng.integers(2, 5)), replace=False)]
               for q in range(n_queries)}
    chosen = rng.choice(n_docs, size=n_queries * depth, replace=False)
    planted: dict[int, list[str]] = {}
    run_lines, qrels_lines = [], []
    for q, (qid, terms) in enumerate(queries.items()):
        docs = chosen[q * depth:(q + 1) * depth]
        counts = rng.integers(1, 6, size=depth)
        for doc, count in zip(docs, counts, strict=True):
            planted[int(doc)] = [terms[int(j)] for j in rng.integers(0, len(terms), size=count)]
        scores = counts + rng.random(depth)
        order = np.argsort(-scores, kind="stable")
        for rank, index in enumerate(order, start=1):
            run_lines.append(f"{qid} Q0 {docs[index]} {rank} {scores[index]:.4f} synth\n")
            if rng.random() < 0.5:
                grade = min(3, int(scores[index] * 0.6 + rng.random() * 1.5))
                qrels_lines.append(f"{qid} 0 {docs[index]} {grade}\n")
    (root / "queries.tsv").write_text("".join(f"{q}\t{' '.join(t)}\n"
                                              for q, t in queries.items()), encoding="utf-8")
    (root / "qrels.txt").write_text("".join(qrels_lines), encoding="utf-8")
    (root / "runs" / "bm25.run").write_text("".join(run_lines), encoding="utf-8")
    with (root / "passages.tsv").open("w", encoding="utf-8") as handle:
        for start in range(0, n_docs, CHUNK):
            size = min(CHUNK, n_docs - start)
            doc_lengths = rng.choice(lengths, size=size)
            drawn = words[rng.choice(len(words), size=int(doc_lengths.sum()), p=probs)]
            rare = np.flatnonzero(rng.random(drawn.size) < RARE_SHARE)
            drawn = drawn.astype(object)
            drawn[rare] = [_rare_word(int(v)) for v in rng.zipf(RARE_ZIPF, size=rare.size)]
            bounds = np.concatenate([[0], np.cumsum(doc_lengths)])
            out = []
            for i in range(size):
                text = drawn[bounds[i]:bounds[i + 1]].tolist()
                extra = planted.get(start + i)
                if extra:
                    for word in extra:
                        text.insert(int(rng.integers(0, len(text) + 1)), word)
                out.append(f"{start + i}\t{' '.join(text)}\n")
            handle.write("".join(out))
    return {"source": source, "judged": len(qrels_lines), "run_lines": len(run_lines)}


def run_abnirml(root: Path, out: Path, probes: list[str], stream: bool,
                extra: list[str]) -> dict:
    """One ``abnirml run`` in a child process: exit code, wall seconds, peak RSS in MiB."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    # forcing both ways, so the figure does not depend on where the 256 MiB default falls
    env["ABNIRML_STREAM_DOCS_BYTES"] = "0" if stream else str(1 << 50)
    args = ["run", "--collection", str(root), "--ranker", "bm25", "--ranker", "ql",
            "--ranker", "tfidf", "--no-cache", "--quiet", "--out", str(out), *extra]
    for probe in probes:
        args += ["--probe", probe]
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CLI_WITH_PEAK_RSS, *args], env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        print(proc.stderr[-2000:])
        return {"code": proc.returncode, "seconds": seconds, "peak_mib": float("nan")}
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    info = json.loads((out / "run.json").read_text())
    return {"code": report["code"], "seconds": seconds, "peak_mib": report["peak_kib"] / 1024,
            "samples": info["counts"]["samples"], "documents": info["collection"]["documents"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=float, default=2.0,
                        help="millions of passages (default 2)")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--depth", type=int, default=100, help="candidate run depth")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--probe", action="append", help="probe pattern, repeatable "
                        "(default: two runs, mmp:* alone, then mmp:*, eight tmp: "
                        "manipulations and axiom:*)")
    parser.add_argument("--in-memory", action="store_true",
                        help="also run each probe set with the passages held in memory")
    parser.add_argument("--computed-candidates", action="store_true",
                        help="ignore runs/bm25.run: BM25 top 100 computed over the collection "
                        "(a second pass over every passage)")
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it")
    args = parser.parse_args()
    if not 0 < args.passages <= 50:
        parser.error(f"--passages counts millions (0.1 is 100,000 passages), from above 0 to "
                     f"50 (≈ 18 GB of text); got {args.passages:g}")
    n_docs = int(args.passages * 1_000_000)
    probe_sets = [args.probe] if args.probe else [["mmp:*"], DEFAULT_PROBES]
    extra = ["--candidates", "computed:bm25"] if args.computed_candidates else []
    with tempfile.TemporaryDirectory(prefix="abnirml-scale-") as tmp:
        root = args.keep or Path(tmp) / "collection"
        start = time.perf_counter()
        if not (root / "passages.tsv").is_file():
            made = generate(root, n_docs, args.queries, args.depth, args.seed)
            print(f"generated {n_docs:,} passages ({made['source']}), {made['judged']:,} "
                  f"judgments in {time.perf_counter() - start:.0f} s", flush=True)
        size = (root / "passages.tsv").stat().st_size
        rows = []
        for number, probes in enumerate(probe_sets):
            label = probes[0] if len(probes) == 1 else f"{len(probes)} patterns"
            for stream in [True, False] if args.in_memory else [True]:
                result = run_abnirml(root, Path(tmp) / f"out-{number}-{stream}", probes,
                                     stream, extra)
                rows.append([label, "on disk (offset index)" if stream else "in memory",
                             result.get("documents", "–"), f"{size / 1e9:.2f} GB",
                             result["seconds"] / 60, result["peak_mib"],
                             result.get("samples", "–"), result["code"]])
                print(f"  {label}, {rows[-1][1]}: {result['seconds']:.0f} s, peak "
                      f"{result['peak_mib']:.0f} MiB", flush=True)
    print_table(f"abnirml run, BM25 + QL + TF-IDF, {args.queries} queries, "
                + ("BM25 top 100 computed" if args.computed_candidates
                   else f"run depth {args.depth}"),
                ["probes", "passages", "documents", "file", "wall (min)", "peak RSS (MiB)",
                 "samples", "exit"], rows)
    for probes in probe_sets:
        if len(probes) > 1:
            print(f"\n{len(probes)} patterns: {' '.join(probes)}")
    if args.in_memory:
        for disk, memory in zip(rows[::2], rows[1::2], strict=True):
            print(f"{disk[0]}: peak on disk / in memory {disk[5] / memory[5]:.2f}, "
                  f"wall {disk[4] / memory[4]:.2f}")


if __name__ == "__main__":
    main()
