"""Scale guard: a 1-million-passage collection streamed from disk under a memory cap."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

N_DOCS = 1_000_000
WORDS_PER_DOC = 30
CAP_BYTES = 450 * 1024 * 1024

RUNNER = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_DATA, ({cap}, {cap}))
from abnirml.cli import main
code = main(sys.argv[1:])
# VmHWM (peak resident memory) belongs to this program image; ru_maxrss would also count
# the pages of the forking test process before exec.
with open("/proc/self/status") as status:
    peak_kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
print(json.dumps({{"code": code, "peak_mib": peak_kib / 1024}}))
"""


def write_synthetic_collection(root, rng):
    root.mkdir()
    vocab = np.array([f"w{i}" for i in range(5000)])
    words = rng.integers(0, len(vocab), size=(N_DOCS, WORDS_PER_DOC))
    with (root / "passages.tsv").open("w", encoding="utf-8") as handle:
        for start in range(0, N_DOCS, 50_000):
            block = vocab[words[start:start + 50_000]]
            handle.write("".join(f"D{start + i}\t{' '.join(row)}.\n"
                                 for i, row in enumerate(block)))
    queries = {f"q{i}": " ".join(vocab[rng.integers(0, 200, size=3)]) for i in range(20)}
    (root / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in queries.items()))
    lines = []
    for qid in queries:
        for doc in rng.choice(N_DOCS, size=60, replace=False):
            lines.append(f"{qid} 0 D{doc} {int(rng.integers(0, 4))}\n")
    (root / "qrels.txt").write_text("".join(lines))
    return root


@pytest.mark.slow
def test_million_document_collection_runs_mmp_under_memory_cap(tmp_path):
    root = write_synthetic_collection(tmp_path / "big", np.random.default_rng(5))
    file_size = (root / "passages.tsv").stat().st_size
    assert file_size > 150 * 1024 * 1024
    script = tmp_path / "runner.py"
    script.write_text(RUNNER.format(cap=CAP_BYTES))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "ABNIRML_STREAM_DOCS_BYTES": "1000000"}
    proc = subprocess.run(
        [sys.executable, str(script), "run", "--collection", str(root), "--ranker", "bm25",
         "--probe", "mmp:*", "--delta", "1.0", "--no-cache", "--quiet",
         "--out", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["code"] == 0
    # Interpreter and libraries take ~90 MiB; holding every text as well would take more
    # than the file's size in total, so a peak below the file size proves streaming.
    assert report["peak_mib"] * 1024 * 1024 < file_size
    info = json.loads((tmp_path / "out" / "run.json").read_text())
    assert info["collection"]["documents"] == N_DOCS
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").open()]
    assert len(records) == 18


def _copy_demo(root):
    from importlib import resources

    root.mkdir()
    demo = resources.files("abnirml.data").joinpath("demo")
    for name in ("queries.tsv", "qrels.txt", "passages.tsv"):
        (root / name).write_bytes(demo.joinpath(name).read_bytes())
    return root


@pytest.mark.parametrize("candidates", ["computed", "run file"])
def test_passages_read_from_disk_give_the_same_results_as_in_memory(tmp_path, monkeypatch,
                                                                    candidates):
    """The offset index (threshold 0) and the in-memory dict (threshold 2**50) must feed the
    rankers, statistics, candidates and samples the same texts: results.jsonl byte for byte.
    Without a run the BM25 candidates are computed by one streamed pass over the file."""
    from abnirml.cli import main

    root = _copy_demo(tmp_path / "demo")
    extra = []
    if candidates == "run file":
        # a run over every passage, in reverse file order, that names one missing passage
        docnos = [line.split("\t")[0] for line in
                  (root / "passages.tsv").read_text(encoding="utf-8").splitlines()]
        qids = [line.split("\t")[0] for line in
                (root / "queries.tsv").read_text(encoding="utf-8").splitlines()]
        (root / "run.txt").write_text("".join(
            f"{qid} Q0 {docno} {rank} {-rank} t\n" for qid in qids
            for rank, docno in enumerate(["not-a-passage", *reversed(docnos)], start=1)))
        extra = ["--candidates", str(root / "run.txt")]
    outputs = {}
    for label, threshold in (("disk", "0"), ("memory", str(2**50))):
        monkeypatch.setenv("ABNIRML_STREAM_DOCS_BYTES", threshold)
        out = tmp_path / label
        code = main(["run", "--collection", str(root), "--ranker", "bm25", "--ranker", "ql",
                     "--ranker", "tfidf", "--probe", "mmp:*", "--probe", "tmp:shuffle-words",
                     "--probe", "tmp:drop-query", "--probe", "axiom:rennings-tfc1", "--probe",
                     "axiom:rennings-m-tdc", "--probe", "qvp:drop-least-informative", "--no-cache",
                     "--quiet", "--out", str(out), *extra])
        assert code == 0
        info = json.loads((out / "run.json").read_text())
        outputs[label] = ((out / "results.jsonl").read_bytes(), info["collection"])
    assert outputs["disk"][0] == outputs["memory"][0]
    assert outputs["disk"][1] == outputs["memory"][1]
    assert len(outputs["disk"][0].splitlines()) > 3 * 20   # the probes did run
