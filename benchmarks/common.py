"""Small helpers shared by the benchmark scripts: locating data, timing, printing tables."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ABNIRML_SHARED_DATA", REPO.parent / "shared" / "data"))
DL19 = SHARED_DATA / "trec-dl-2019"


def require_dl19() -> Path | None:
    if not (DL19 / "queries.tsv").is_file():
        print(f"skipped: TREC DL 2019 not found at {DL19}")
        return None
    return DL19


def timed(fn: Callable[[], Any], repeats: int = 3) -> tuple[float, Any]:
    """Median wall time of ``repeats`` calls (and the last result)."""
    times = []
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


#: ``python -c`` source running the ``abnirml`` command on its arguments in a child process
#: and printing ``{"code", "peak_kib"}``: the child's VmHWM is the command's own peak, free of
#: whatever the benchmark process itself allocated.
CLI_WITH_PEAK_RSS = """
import json, sys
from abnirml.cli import main
code = main(sys.argv[1:])
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
print(json.dumps({"code": code, "peak_kib": peak}))
"""


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(c) for c in header]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n## {title}\n")
    print("| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells[1:]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def dl19_probe_context(depth: int = 100, queries: int | None = None,
                       options: dict[str, Any] | None = None, dl19: Path = DL19) -> Any:
    """A ProbeContext on TREC DL 2019 as a run builds one: the collection's ranker
    environment, the BM25 run's top ``depth`` as candidates (first ``queries`` queries
    only, when given) and that run's own scores (LB1 reads them)."""
    from abnirml.data.collection import load_collection
    from abnirml.evaluation.execution.candidates import resolve_candidates
    from abnirml.probes.base import ProbeContext
    from abnirml.probes.family_registry import resolve_options
    from abnirml.rankers.registry import RankerEnv

    collection = load_collection(str(dl19))
    env = RankerEnv(collection=collection)
    candidates = resolve_candidates(collection, "bm25", depth)
    ranking = candidates.ranking
    if queries is not None:
        ranking = {q: ranking[q] for q in sorted(ranking)[:queries]}
    return ProbeContext(collection=collection, analyzer=env.analyzer,
                        settings=resolve_options(dict(options or {})).settings, ranker_env=env,
                        candidates=lambda: ranking, candidate_scores=lambda: candidates.scores)


def ir_axioms_python(explicit: str | None = None) -> str | None:
    """An interpreter that can import ir_axioms: ``explicit``, ``$IR_AXIOMS_PYTHON``, the
    repository's ``.venv-irax`` or this one (ir_axioms 1.2.5 pins numpy < 2, so it usually
    lives in a venv of its own)."""
    for python in (explicit, os.environ.get("IR_AXIOMS_PYTHON"),
                   str(REPO / ".venv-irax" / "bin" / "python"), sys.executable):
        if not python or not Path(python).exists():
            continue
        check = subprocess.run([python, "-c", "import ir_axioms"], capture_output=True,
                               timeout=300)
        if check.returncode == 0:
            return python
    return None


def token_lengths(model: Any, texts: Sequence[str]) -> list[int]:
    """Each text's token count as a sentence-transformers model encodes it (truncated)."""
    prepare = getattr(model, "preprocess", None) or model.tokenize
    return [int(n) for n in prepare(list(texts))["attention_mask"].sum(dim=1).tolist()]


def engine_positions(model: Any, texts: Sequence[str], budget: int) -> int:
    """Token positions the bi-encoder's fixed-shape forward calls compute for ``texts`` at
    ``budget`` positions per call, dummy rows included."""
    from abnirml.rankers.families.biencoder import bucket_length, rows_per_forward

    counts: dict[int, int] = {}
    for n in token_lengths(model, texts):
        width = bucket_length(n, model.max_seq_length)
        counts[width] = counts.get(width, 0) + 1
    return sum(-(-c // rows_per_forward(w, budget)) * rows_per_forward(w, budget) * w
               for w, c in counts.items())


def plain_positions(model: Any, texts: Sequence[str], batch_size: int) -> int:
    """Token positions ``model.encode(texts, batch_size=…)`` computes: sentence-transformers
    sorts the texts by length in characters, longest first, and pads each batch to its
    longest text."""
    lengths = token_lengths(model, texts)
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    return sum(max(lengths[i] for i in order[s:s + batch_size]) * len(order[s:s + batch_size])
               for s in range(0, len(order), batch_size))
