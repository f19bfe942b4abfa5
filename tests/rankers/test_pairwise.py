"""Pairwise preference rankers: duoT5 and lm-pairwise against per-triple references, and the
engine's direct probing (symmetrisation, position bias, δ, cache, aggregation)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.evaluation.analyses.preference_probing import (
    position_bias,
    position_direction,
    symmetrise,
)
from abnirml.rankers.registry import RankerEnv, build_ranker, register
from abnirml.registry import scoped_registrations
from tests.helpers import score_bound

TRIPLES = [
    ("vitamin d deficiency", "symptoms of vitamin d deficiency are tiredness", "bread dough"),
    ("vitamin d deficiency", "bread dough", "symptoms of vitamin d deficiency are tiredness"),
    ("roman empire", "the roman empire split into east and west", "the cat"),
]


def test_symmetrise_and_position_bias_known_values():
    p12 = np.array([0.9, 0.8, 0.3, 0.6])
    p21 = np.array([0.2, 0.7, 0.4, 0.3])
    assert np.allclose(symmetrise(p12, p21), [0.85, 0.55, 0.45, 0.65])
    assert position_bias(p12, p21) == 0.5    # samples 2 (both > .5) and 3 (both < .5)
    assert position_bias(np.zeros(0), np.zeros(0)) is None
    # sample 2: the first-shown document won in both orders; sample 3: the second-shown
    assert position_direction(p12, p21).tolist() == [0, 1, -1, 0]


def test_duot5_equals_per_triple_reference(tmp_path, one_torch_thread):
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from tests._tiny_models import save_t5

    path = save_t5(tmp_path / "t5")
    ranker = build_ranker(f"duot5:{path}+batch_size=2", RankerEnv())
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSeq2SeqLM.from_pretrained(path).eval()
    t, f = tok.convert_tokens_to_ids("true"), tok.convert_tokens_to_ids("false")
    expected = []
    with torch.no_grad():
        for q, a, b in TRIPLES:
            ids = tok(f"Query: {q} Document0: {a} Document1: {b} Relevant:",
                      return_tensors="pt").input_ids
            logits = model(input_ids=ids, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)
                           ).logits[0, 0]
            expected.append(float(torch.softmax(logits[[t, f]], dim=-1)[0]))
    got = ranker.preferences(TRIPLES)
    bound = score_bound(f"duot5:{path}")                      # probabilities: scale 1
    assert np.abs(got - np.array(expected)).max() <= bound
    assert abs(ranker.prefer(*TRIPLES[0]) - expected[0]) <= bound
    with pytest.raises(ConfigError, match="pairwise preference ranker"):
        ranker.score([("q", "d")])


def test_lm_pairwise_equals_per_triple_reference(tmp_path, one_torch_thread):
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests._tiny_llms import save_causal_lm

    path = save_causal_lm(tmp_path / "llama", kind="llama")
    template = "Query: {query} Document0: {document1} Document1: {document2} Relevant:"
    file = tmp_path / "pair.txt"
    file.write_text(template, encoding="utf-8")
    ranker = build_ranker(f"lm-pairwise:{path}+template={file}+batch_size=2", RankerEnv())
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    y, n = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    expected = []
    with torch.no_grad():
        for q, a, b in TRIPLES:
            text = template.replace("{query}", q).replace("{document1}", a)
            ids = tok(text.replace("{document2}", b), return_tensors="pt").input_ids
            logits = model(input_ids=ids).logits[0, -1]
            expected.append(float(torch.softmax(logits[[y, n]], dim=-1)[0]))
    assert np.abs(ranker.preferences(TRIPLES) - np.array(expected)).max() <= score_bound(
        f"lm-pairwise:{path}")                                # probabilities: scale 1
    bad = tmp_path / "bad.txt"
    bad.write_text("Query: {query} {document1}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\{document2\} exactly once"):
        build_ranker(f"lm-pairwise:{path}+template={bad}", RankerEnv())


class LengthPreference:
    """Prefers the longer document; with ``bias`` it also leans towards the first input."""

    def __init__(self, name: str, bias: float):
        self.name = name
        self.fingerprint = f"LengthPreference[bias={bias}]"
        self.bias = bias
        self.calls = 0
        self.rerank_depth = 5

    def preferences(self, triples):
        self.calls += len(triples)
        return np.array([1 / (1 + math.exp(-(len(a.split()) - len(b.split())) / 5 - self.bias))
                         for _, a, b in triples])


@pytest.fixture
def forget_length_pref():
    """The test registers a ranker family; later tests must not find it registered."""
    with scoped_registrations():
        yield


def test_engine_probes_pairwise_rankers_directly(tmp_path, forget_length_pref):
    from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run

    made: dict[str, LengthPreference] = {}

    def factory(spec, env):
        made[spec.canonical] = LengthPreference(spec.canonical,
                                                float(spec.param("bias", "0") or 0))
        return made[spec.canonical]

    register("length-pref", factory)
    config = RunConfig(collection="demo", rankers=["bm25", "length-pref", "length-pref+bias=3"],
                       probes=["mmp:length:relevance", "tmp:shuffle-words"],
                       out=str(tmp_path / "o"),
                       session=SessionSettings(cache=str(tmp_path / "c.sqlite"), progress=False))
    out = run(config)
    rows = {(r["probe"], r["ranker"], r["subset"]): r for r in out.result.records}
    row = rows[("mmp:length:relevance", "length-pref", "all")]
    assert row["score"] > 0.3 and row["significant"]
    # shuffling keeps length: p = 0.5 exactly, so no effect either way
    assert rows[("tmp:shuffle-words", "length-pref", "all")]["pos"] == 0
    # the position-bias rate: none without bias; with a strong bias most verdicts follow order
    assert rows[("mmp:length:relevance", "length-pref", "all")]["position_bias"] == 0.0
    biased = rows[("mmp:length:relevance", "length-pref+bias=3", "all")]
    assert biased["position_bias"] > 0.5
    # the bias favours the document shown first: all of it is towards the first place
    assert biased["position_bias_earlier"] == biased["position_bias"]
    assert "position_bias" not in rows[("mmp:length:relevance", "bm25", "all")]
    # δ from adjacent candidates; effectiveness via the aggregation
    assert out.run_info["rankers"][1]["delta"] > 0
    assert "length-pref" in out.run_info["effectiveness"]["rankers"]
    # a second run is served entirely from the cache keyed by (fingerprint, q, d1, d2)
    first_calls = made["length-pref"].calls
    assert first_calls > 0
    run(config)
    assert made["length-pref"].calls == 0
    # with δ ≈ 0 the position bias cancels exactly: both rankers give the same effects
    from dataclasses import replace

    zero = run(replace(config, out=None, statistics=StatisticsSettings(
        deltas={"length-pref": 1e-9, "length-pref+bias=3": 1e-9})))
    same = {(r["probe"], r["ranker"], r["subset"]): (r["pos"], r["neg"])
            for r in zero.result.records}
    for key in [k for k in same if k[1] == "length-pref"]:
        assert same[key] == same[(key[0], "length-pref+bias=3", key[2])]
    assert same[("mmp:length:relevance", "length-pref", "all")][0] > 0
