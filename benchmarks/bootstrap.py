"""Cost of the query-clustered bootstrap intervals (issue 15).

On the TREC DL 2019 battery (every probe, BM25 + QL + TF-IDF), the records are rebuilt from
the per-sample scores with intervals off (``--bootstrap 0``) and at the default 1,000
resamples; the difference is what the intervals cost. A synthetic load (5,000 records of
2,000 samples from 43 queries) shows the scaling without the data.

Run: ``python benchmarks/bootstrap.py``.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import print_table, require_dl19, timed


def synthetic(records: int = 5000, samples: int = 2000, queries: int = 43,
              resamples: int = 1000) -> float:
    """Seconds for ``records`` intervals (score and mean difference) of ``samples`` each."""
    import numpy as np

    from abnirml.evaluation.stats.significance import StatsConfig, record_fields

    rng = np.random.default_rng(0)
    s1 = rng.normal(size=samples)
    s2 = rng.normal(size=samples)
    cluster = rng.integers(0, queries, size=samples)
    config = StatsConfig(resamples=resamples)

    def all_records() -> None:
        for i in range(records):
            record_fields(s1, s2, 0.1, False, config, cluster, ("p", i))

    seconds, _ = timed(all_records, repeats=1)
    return seconds


def main() -> None:
    print(f"device: CPU ({platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores visible), numpy threads pinned by OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', 'unset')}")
    rows = []
    dl19 = require_dl19()
    if dl19 is not None:
        from abnirml.evaluation.execution.score_file import ScoreStore
        from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run

        with tempfile.TemporaryDirectory() as tmp:
            output = run(RunConfig(collection=str(dl19), rankers=["bm25", "ql", "tfidf"],
                                   probes=["all"], out=None, effectiveness=False,
                                   session=SessionSettings(cache=f"{tmp}/cache.sqlite",
                                                           progress=False),
                                   statistics=StatisticsSettings(bootstrap=0)))
        store = ScoreStore.from_result(output.result)
        samples = sum(ps.score1.shape[0] for ps in store.scores.values())
        off, records = timed(lambda: store.records(), repeats=1)
        store.stats = replace(store.stats, resamples=1000)
        on, _ = timed(lambda: store.records(), repeats=1)
        rows.append(["DL19 battery, 3 rankers", f"{len(records):,} records",
                     f"{samples:,} sample scores", off, on, on - off])
    seconds = synthetic()
    rows.append(["synthetic", "5,000 records", "2,000 samples × 43 queries each", "–",
                 seconds, seconds])
    print_table("Query-clustered bootstrap, 1,000 resamples (seconds)",
                ["load", "records", "samples", "records without CIs", "with CIs",
                 "interval cost"], rows)


if __name__ == "__main__":
    main()
