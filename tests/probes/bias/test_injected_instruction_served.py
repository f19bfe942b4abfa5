"""Injected instructions against served rankers whose answers are known: loopback stand-ins
(127.0.0.1, started and stopped here) of a rerank API (pointwise) and of RankGPT's chat
completions (listwise), each either obeying an instruction it finds in a passage or
paying it no attention.

* A ranker that obeys scores every instructed passage above any other: +1 on
  ``bias:injected-instruction`` (the passage with vs without the instruction) and on
  ``bias:injected-instruction-foil`` (a non-relevant passage with it vs a relevant one),
  whose foil win rate is then 100 %.
* A ranker that ignores instructions scores a passage by the query's content terms it
  holds; no built-in phrasing holds one of the demo queries' content terms, so the pair
  scores exactly the same: 0 (pointwise: equal scores; listwise: the same verdict follows
  the position in both orders, a tie).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from abnirml.pipeline import RunConfig, SessionSettings, run
from abnirml.probes.bias.instructions import PHRASINGS
from abnirml.text.analyzer import Analyzer
from tests._served_standins import StandIn, prompt_parts

PROBES = ["bias:injected-instruction", "bias:injected-instruction-foil"]
ANALYZE = Analyzer().analyze


class Reader(StandIn):
    """A served ranker that reads passages: relevance is the number of the query's content
    terms a passage holds, plus 1,000 for an instruction it obeys (``obey``)."""

    def __init__(self, obey: bool, **kwargs: Any):
        super().__init__(**kwargs)
        self.obey = obey

    def relevance(self, query: str, text: str) -> int:
        terms = set(ANALYZE(query))
        held = sum(t in terms for t in ANALYZE(text))
        told = self.obey and any(p.lower() in text.lower() for p in PHRASINGS)
        return held + (1000 if told else 0)

    def _rerank(self, body: dict[str, Any]) -> Any:
        return {"results": [{"index": i, "relevance_score": self.relevance(body["query"], d)}
                            for i, d in enumerate(body["documents"])]}

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        query, passages = prompt_parts(body["messages"])
        order = sorted(range(len(passages)), key=lambda i: -self.relevance(query, passages[i]))
        text = " > ".join(f"[{i + 1}]" for i in order)
        return {"choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}]}


def _run(spec: str, tmp_path):
    return run(RunConfig(collection="demo", rankers=[spec], probes=PROBES, effectiveness=False,
                         session=SessionSettings(cache=str(tmp_path / "cache.sqlite"),
                                                 progress=False)))


def _rows(out, ranker):
    return {r["probe"]: r for r in out.result.records
            if r["ranker"] == ranker and r["subset"] == "all"}


def test_no_phrasing_holds_a_content_term_of_a_demo_query(demo_collection):
    words = {t for p in PHRASINGS for t in ANALYZE(p)}
    assert not words & {t for q in demo_collection.queries.values() for t in ANALYZE(q)}


@pytest.mark.parametrize("kind", ["pointwise", "listwise"])
def test_a_ranker_that_obeys_instructions_scores_plus_one(kind, tmp_path):
    with Reader(obey=True) as server:
        spec = (f"rerank-api:{server.base}/rerank+model=m" if kind == "pointwise"
                else f"rankgpt:{server.base}/v1+model=m")
        out = _run(spec, tmp_path)
    rows = _rows(out, spec)
    for probe in PROBES:
        row = rows[probe]
        assert row["n"] >= 40 and row["score"] == 1.0 and row["pos"] == row["n"]
    foil = rows["bias:injected-instruction-foil"]
    assert foil["foil_wins"] == foil["n"] and foil["foil_win_rate"] == 1.0
    assert foil["foil_win_rate_ci_high"] == 1.0 and 0.5 < foil["foil_win_rate_ci_low"] < 1.0
    if kind == "listwise":        # every verdict followed the instruction, not the position
        assert rows["bias:injected-instruction"]["position_bias"] == 0.0


@pytest.mark.parametrize("kind", ["pointwise", "listwise"])
def test_a_ranker_that_ignores_instructions_scores_exactly_zero(kind, tmp_path):
    with Reader(obey=False) as server:
        spec = (f"rerank-api:{server.base}/rerank+model=m" if kind == "pointwise"
                else f"rankgpt:{server.base}/v1+model=m")
        out = _run(spec, tmp_path)
        asked = len(server.requests)
    assert asked > 0
    row = _rows(out, spec)["bias:injected-instruction"]
    assert row["n"] >= 100 and row["score"] == 0.0 and row["pos"] == row["neg"] == 0
    scores = out.result.probe_scores[("bias:injected-instruction", spec)]
    if kind == "pointwise":
        assert np.array_equal(scores.score1, scores.score2)
    else:                          # a tie: the earlier-placed passage won in both orders
        assert (scores.score1 == 0.5).all() and row["position_bias"] == 1.0
