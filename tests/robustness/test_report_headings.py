"""User text in report.md headings is inert, as it is in every table cell."""

from __future__ import annotations

import numpy as np

from abnirml.pipeline import RunConfig, SessionSettings, run

HOSTILE = "evil<img src=x onerror=alert(1)>|x"


class _HostileNamedRanker:
    """Scores by text length; only its name is hostile."""

    name = HOSTILE
    fingerprint = "hostile-length-ranker-v1"

    def score(self, pairs):
        return np.array([float(len(text)) for _, text in pairs])


def test_the_rank_origin_heading_escapes_the_ranker_name(tmp_path):
    out = tmp_path / "out"
    run(RunConfig(collection="demo", rankers=["bm25", _HostileNamedRanker()],
                  probes=["tmp:shuffle-words"], out=str(out), seed=0,
                  session=SessionSettings(cache=None, progress=False)))
    report = (out / "report.md").read_text(encoding="utf-8")
    headings = [line for line in report.splitlines() if line.startswith("#")]
    assert "## evil&lt;img src=x onerror=alert(1)>\\|x vs the candidate run" in headings
    assert "<img" not in report
