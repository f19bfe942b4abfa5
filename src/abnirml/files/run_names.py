"""The names of the files in an ``abnirml run`` output folder, in one place.

Dependency-free so that the engine (which names the re-ranked run files it records in
run.json), :mod:`abnirml.run_folder` (which writes them) and the report (which reads them)
agree without importing one another.
"""

from __future__ import annotations

import re

RESULTS = "results.jsonl"
EXAMPLES = "examples.jsonl"
RUN_INFO = "run.json"
CALIBRATION = "calibration.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
SCORES = "scores.npz"
TABLES_DIR = "tables"
RERANKED_DIR = "reranked"
CANDIDATE_RUN = "candidates.run"
RANK_ORIGIN_CSV = "rank_origin.csv"
RANK_ORIGIN_JSON = "rank_origin.json"
#: ``abnirml patch --out DIR`` results (abnirml.mechanism)
PATCHING_DIR = "patching"
#: data tables the report derives beyond its displayed tables (``tables/<name>.csv``)
DELTA_SWEEP = "delta-sweep"
PER_QUERY = "per-query"
#: everything a run (or ``abnirml rank-origin --out`` into it) may leave in the folder
OWNED = frozenset({RESULTS, EXAMPLES, RUN_INFO, CALIBRATION, REPORT_MD, REPORT_HTML, SCORES,
                   TABLES_DIR, RERANKED_DIR, RANK_ORIGIN_CSV, RANK_ORIGIN_JSON, PATCHING_DIR})


def table_file(slug: str, extension: str) -> str:
    """The folder-relative path of an exported table: ``tables/<slug>.<extension>``."""
    return f"{TABLES_DIR}/{slug}.{extension}"


_MAX_BASE = 120    # characters of a run file's stem (ASCII after the substitution above)


def run_file_name(name: str, taken: set[str]) -> str:
    """A safe, unique file name for a ranker's run (ranker names may hold ``/`` or ``:``)."""
    base = re.sub(r"[^A-Za-z0-9._+=-]+", "_", name).strip("._") or "ranker"
    if len(base) > _MAX_BASE:
        # file systems cap a name at 255 bytes: a long ranker spec keeps its start and a
        # digest of the whole, so two long specs differing at the end stay apart
        import hashlib

        digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=6)
        base = f"{base[:_MAX_BASE - 13]}-{digest.hexdigest()}"
    candidate, i = base, 2
    while candidate + ".run" in taken or candidate + ".run" == CANDIDATE_RUN:
        candidate, i = f"{base}-{i}", i + 1
    taken.add(candidate + ".run")
    return candidate + ".run"
