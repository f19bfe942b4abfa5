"""Listwise probing with in-process listwise rankers whose answers are known.

* an echo ranker (returns the input order): every verdict follows the position, so every
  probe scores 0 with position_bias 1, the identical-document null test puts the earlier
  copy first every time, and the position-response curve is the diagonal;
* ``listwise-of:bm25`` gives BM25's verdict wherever BM25's two scores differ;
* a query-term-occurrence sorter: appending the query wins, shuffling words ties on content
  so every verdict follows the position;
* a rerun with the same cache asks nothing.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run
from abnirml.rankers.listwise import Window

PROBES = ["mmp:tf:relevance", "tmp:append-query", "tmp:shuffle-words", "qvp:misspell"]


class Echo:
    """Returns every window in its input order; counts what it was asked."""

    def __init__(self, name: str = "echo", window_size: int = 20):
        self.name = name
        self.fingerprint = f"Echo-v1[{name}]"
        self.window_size = window_size
        self.windows: list[Window] = []
        self.calls = 0

    def rank_windows(self, windows):
        self.calls += 1
        self.windows += windows
        return [tuple(range(len(w.passages))) for w in windows]

    def usage(self):
        return {"requests": self.calls, "prompt_tokens": 7 * len(self.windows)}


class TermSorter(Echo):
    """Sorts a window by how often the query's words occur in each passage (stable)."""

    def rank_windows(self, windows):
        self.calls += 1
        out = []
        for w in windows:
            terms = set(w.query.lower().split())
            counts = [sum(t in terms for t in p.lower().split()) for p in w.passages]
            out.append(tuple(sorted(range(len(counts)), key=lambda i: -counts[i])))
        return out


def _config(tmp_path, rankers, probes=PROBES, effectiveness=True):
    return RunConfig(collection="demo", rankers=rankers, probes=probes,
                     effectiveness=effectiveness,
                     session=SessionSettings(cache=str(tmp_path / "cache.sqlite"),
                                             progress=False))


def _rows(out):
    return {(r["probe"], r["ranker"], r["subset"]): r for r in out.result.records}


def test_echo_ranker_every_verdict_follows_the_position(tmp_path):
    echo = Echo()
    out = run(_config(tmp_path, [echo], effectiveness=False))
    rows = _rows(out)
    for probe in PROBES:
        row = rows[(probe, "echo", "all")]
        assert row["n"] > 0 and row["score"] == 0.0 and row["pos"] == row["neg"] == 0
        if probe.startswith("qvp:"):          # one list under both queries: no position
            assert "position_bias" not in row
            assert row["ndcg10_change"] is None     # a preference ranks nothing
        else:       # the input order kept: the earlier-placed document always wins
            assert row["position_bias"] == row["position_bias_earlier"] == 1.0
    assert out.run_info["rankers"][0]["delta_source"] == "listwise"
    info = out.run_info["listwise"]["rankers"]["echo"]
    null = info["null_test"]
    assert null["first_rate"] == 1.0 and null["lists"] == 4 * null["queries"]
    assert 0.5 < null["ci_low"] < 1.0 == null["ci_high"]
    assert info["position_response"]["mean_rank"] == [float(p) for p in range(1, 11)]
    # every list (probes and position analyses) holds ten passages
    sizes = {len(w.passages) for w in echo.windows}
    assert sizes == {10}
    assert out.run_info["usage"]["echo"]["requests"] == echo.calls > 0
    assert out.run_info["counts"]["windows_ranked"] == len(echo.windows)


def test_probe_lists_place_both_documents_and_swap_them(tmp_path):
    echo = Echo()
    out = run(_config(tmp_path, [echo], probes=["tmp:append-query"]))
    table = out.result.tables["tmp:append-query"]
    texts = table.texts
    asked = set(echo.windows)
    for s in range(len(table)):
        d1, d2 = texts[table.doc1[s]], texts[table.doc2[s]]
        pair = [w for w in asked if d1 in w.passages and d2 in w.passages
                and w.query == texts[table.query[s]]]
        assert len(pair) >= 2
        first = next(w for w in pair if w.passages.index(d1) < w.passages.index(d2))
        swapped = list(first.passages)
        i, j = first.passages.index(d1), first.passages.index(d2)
        swapped[i], swapped[j] = d2, d1
        assert Window(first.query, tuple(swapped)) in asked


def test_listwise_of_bm25_reproduces_bm25_verdicts(tmp_path):
    probes = ["mmp:*", "tmp:append-query", "tmp:shuffle-words", "axiom:rennings-tfc1",
              "axiom:ir-lnc1"]
    out = run(_config(tmp_path, ["bm25", "listwise-of:bm25"], probes=probes))
    scores = out.result.probe_scores
    checked = 0
    for probe in out.result.tables:
        if not len(out.result.tables[probe]):
            continue
        ps = scores[(probe, "bm25")]
        p = scores[(probe, "listwise-of:bm25")].score1
        diff = ps.score1 - ps.score2
        differ = np.abs(diff) > 1e-9
        assert np.array_equal(p[differ], (diff[differ] > 0).astype(float)), probe
        assert np.all(p[~differ] == 0.5), probe     # equal scores: the position decides
        checked += int(differ.sum())
    assert checked > 500
    assert "listwise-of:bm25" in out.run_info["effectiveness"]["rankers"]


def test_listwise_of_bm25_reranking_matches_bm25_at_ten(demo_collection):
    """One sliding-window pass puts BM25's exact top 10 on top, so nDCG@10 per query equals
    BM25's wherever BM25's scores hold no tie at the top (ties: the candidate order decides
    the list, trec_eval's docno order the scored run)."""
    pytest.importorskip("ir_measures")
    from abnirml.evaluation.analyses.effectiveness import evaluate_per_query, rerank_candidates
    from abnirml.evaluation.execution.workspace import Workspace

    workspace = Workspace("demo", SessionSettings(cache=None, progress=False))
    rankers = workspace.build_rankers(["bm25", "listwise-of:bm25+window=20+step=10"])
    ranking = workspace.candidates().ranking
    runs = rerank_candidates(rankers, ranking, workspace.collection)
    qrels = workspace.collection.qrels
    bm25 = evaluate_per_query(runs["bm25"], qrels, ["nDCG@10"])
    listed = evaluate_per_query(runs["listwise-of:bm25+window=20+step=10"], qrels, ["nDCG@10"])
    untied = 0
    for qid, values in bm25.items():
        top = [s for _, s in runs["bm25"][qid][:11]]
        if len(set(top)) == len(top):
            untied += 1
            assert listed[qid]["nDCG@10"] == values["nDCG@10"], qid
        top10 = [d for d, _ in runs["bm25"][qid][:10]]
        by_score = dict(runs["bm25"][qid])
        assert [by_score[d] for d, _ in runs["listwise-of:bm25+window=20+step=10"][qid][:10]] \
            == [by_score[d] for d in top10]
    assert untied >= 3


def test_listwise_of_bm25_reranking_on_dl19(dl19):
    """The same on TREC DL 2019's BM25 run: equal nDCG@10 on every query whose BM25 top 11
    holds no tie, and the same scores in the same order at the top of every query."""
    pytest.importorskip("ir_measures")
    from abnirml.evaluation.analyses.effectiveness import evaluate_per_query, rerank_candidates
    from abnirml.evaluation.execution.workspace import Workspace

    workspace = Workspace(str(dl19), SessionSettings(cache=None, progress=False))
    rankers = workspace.build_rankers(["bm25", "listwise-of:bm25"])
    runs = rerank_candidates(rankers, workspace.candidates().ranking, workspace.collection)
    qrels = workspace.collection.qrels
    bm25 = evaluate_per_query(runs["bm25"], qrels, ["nDCG@10"])
    listed = evaluate_per_query(runs["listwise-of:bm25"], qrels, ["nDCG@10"])
    untied = 0
    for qid, values in bm25.items():
        by_score = dict(runs["bm25"][qid])
        assert [by_score[d] for d, _ in runs["listwise-of:bm25"][qid][:10]] \
            == [s for _, s in runs["bm25"][qid][:10]]
        top = [s for _, s in runs["bm25"][qid][:11]]
        if len(set(top)) == len(top):
            untied += 1
            assert listed[qid]["nDCG@10"] == values["nDCG@10"], qid
    assert untied >= 30


def test_term_sorter_known_answers(tmp_path):
    sorter = TermSorter("sorter")
    out = run(_config(tmp_path, [sorter], probes=["tmp:append-query", "tmp:shuffle-words"]))
    rows = _rows(out)
    assert rows[("tmp:append-query", "sorter", "all")]["score"] >= 0.9
    shuffled = rows[("tmp:shuffle-words", "sorter", "all")]
    assert shuffled["score"] == 0.0 and shuffled["position_bias"] == 1.0


def test_rerun_with_the_cache_asks_nothing(tmp_path):
    first = Echo()
    config = _config(tmp_path, [first], probes=["tmp:append-query", "mmp:tf:relevance"])
    out = run(config)
    assert first.calls > 0
    again = Echo()
    rerun = run(dataclasses.replace(config, rankers=[again]))
    assert again.calls == 0
    assert rerun.run_info["counts"]["windows_ranked"] == 0
    assert rerun.run_info["counts"]["windows_from_cache"] == len(set(first.windows))
    assert rerun.result.records == out.result.records
    assert rerun.run_info["listwise"] == out.run_info["listwise"]


def test_sliding_window_subsets_and_calls(tmp_path):
    """Lists of 10 through a window of 6: the window-boundary subsets split every sample."""
    out = run(dataclasses.replace(_config(tmp_path, ["listwise-of:bm25+window=6+step=3"],
                                          probes=["tmp:append-query"]),
                                  out=str(tmp_path / "out")))
    rows = _rows(out)
    name = "listwise-of:bm25+window=6+step=3"
    every = rows[("tmp:append-query", name, "all")]
    inside = rows[("tmp:append-query", name, "window-inside")]
    straddle = rows[("tmp:append-query", name, "window-straddle")]
    assert inside["n"] + straddle["n"] == every["n"] and min(inside["n"], straddle["n"]) > 0
    assert "significant" in straddle and "tests_in_table" in straddle
    # the report shows them in the listwise section, not in the family's table
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    family = report.split("## Textual-manipulation probes")[1].split("\n## ")[0]
    assert "window-inside" not in family and "| relevant |" in family
    windows = report.split("## Sliding-window boundaries")[1].split("\n## ")[0]
    assert f"| tmp:append-query | {name} | {inside['score']:+.3f} ({inside['n']})" in windows


def test_order_lists_takes_rank_llm_windows_in_batches():
    from abnirml.evaluation.analyses.listwise_probing import order_lists

    echo = Echo(window_size=20)
    passages = [f"p{i}" for i in range(100)]
    orders = order_lists(None, echo, [("q", passages), ("r", passages), ("s", passages[:15])])
    assert orders[0] == tuple(range(100)) and orders[2] == tuple(range(15))
    # 9 windows per long list, back to front; the short list fits one window
    assert echo.calls == 9
    firsts = [w.passages[0] for w in echo.windows if w.query == "q"]
    assert firsts == [f"p{s}" for s in (80, 70, 60, 50, 40, 30, 20, 10, 0)]


def test_listwise_of_reverses_a_reversed_window():
    from abnirml.rankers.registry import RankerEnv, build_ranker
    from tests.helpers import make_collection

    docs = {"a": "cat cat cat", "b": "cat", **{f"x{i}": f"dog {i}" for i in range(8)}}
    collection = make_collection({"1": "cat"}, docs, {})
    ranker = build_ranker("listwise-of:bm25+k1=0.9", RankerEnv(collection=collection))
    inner = build_ranker("bm25+k1=0.9", RankerEnv(collection=collection))
    assert ranker.fingerprint == f"ListwiseOf[{inner.fingerprint}]"
    assert ranker.rank_windows([Window("cat", ("dog", "cat", "cat cat cat")),
                                Window("cat", ("dog", "dog"))]) == [(2, 1, 0), (0, 1)]


@pytest.mark.parametrize(("spec", "message"), [
    ("listwise-of:bm25+list_size=1", "list_size=1 must be >= 2"),
    ("listwise-of", "needs the pointwise ranker"),
    ("listwise-of:listwise-of:bm25", "not a plain pointwise ranker"),
    ("listwise-of:bm25+window=4+step=5", "step=5 must not exceed window=4"),
])
def test_listwise_of_refuses_bad_specs(spec, message):
    from abnirml.errors import ConfigError
    from abnirml.rankers.registry import RankerEnv, build_ranker
    from tests.helpers import make_collection

    collection = make_collection({"1": "cat"}, {"a": "cat"}, {})
    with pytest.raises(ConfigError, match=message):
        build_ranker(spec, RankerEnv(collection=collection))


def test_a_failing_user_ranker_is_one_line(tmp_path):
    from abnirml.errors import ScoringError

    class Broken(Echo):
        def rank_windows(self, windows):
            return [(0, 0)] * len(windows)

    with pytest.raises(ScoringError, match="expected each index"):
        run(_config(tmp_path, [Broken("broken")], probes=["tmp:append-query"]))


def test_given_delta_is_used(tmp_path):
    out = run(dataclasses.replace(_config(tmp_path, [Echo()], probes=["tmp:append-query"]),
                                  statistics=StatisticsSettings(delta=0.25)))
    assert out.run_info["rankers"][0]["delta"] == 0.25
    assert out.run_info["rankers"][0]["delta_source"] == "given"


def test_commands_needing_scores_refuse_a_listwise_ranker():
    from abnirml.errors import ConfigError
    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.rankers.support.cache import ScoreCache

    with ScoreCache(None) as cache, pytest.raises(ConfigError, match="echo is a listwise"):
        Scorer(cache, progress=False).score(Echo(), [("q", "d")])


def test_a_probe_of_three_documents_has_no_listwise_samples(tmp_path):
    """TFC2 compares three documents: a listwise ranker gets no samples of it, and the run
    still writes its folder, examples and score file (read back as no samples)."""
    from abnirml.evaluation.execution.score_file import load_scores

    out = run(dataclasses.replace(
        _config(tmp_path, ["bm25", Echo()], probes=["axiom:tfc2", "tmp:append-query"]),
        out=str(tmp_path / "out")))
    rows = _rows(out)
    assert rows[("axiom:tfc2", "echo", "all")]["n"] == 0
    assert rows[("axiom:tfc2", "bm25", "all")]["n"] > 0
    store = load_scores(tmp_path / "out" / "scores.npz")
    assert store.scores[("axiom:tfc2", "echo")].score1.size == 0
    assert np.array_equal(store.scores[("axiom:tfc2", "bm25")].score1,
                          out.result.probe_scores[("axiom:tfc2", "bm25")].score1)
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    for title in ("Identical-document null test", "Position-response curve",
                  "Position bias per probe"):
        assert f"## {title}" in report
    assert "Requests and tokens this run sent" in report
    assert "| Ranker | Requests | Prompt tokens |" in report


def test_lists_without_candidates_hold_the_sample_alone():
    """With no candidate to fill them, a document-side list holds d1 and d2 and a
    query-side list the document alone; the verdicts are still defined."""
    from abnirml.evaluation.analyses.listwise_probing import (
        FillerPool,
        order_lists,
        probe_lists,
        verdicts,
    )
    from abnirml.probes.base import SampleTable

    table = SampleTable(texts=["q", "cat", "dog", "q2"], query=np.array([0]),
                        doc1=np.array([1]), doc2=np.array([2]), grade=np.array([np.nan]))
    lists = probe_lists("p", table, 10, FillerPool({}), [None], seed=0)
    assert {len(passages) for _, passages in lists.a} == {2}
    echo = Echo()
    p, flags = verdicts(lists, order_lists(None, echo, lists.a), order_lists(None, echo, lists.b))
    assert p.tolist() == [0.5] and flags.tolist() == [True]
    varied = SampleTable(texts=["q", "cat", "q2"], query=np.array([0]), doc1=np.array([1]),
                         doc2=np.array([1]), grade=np.array([np.nan]), query1=np.array([2]))
    lists = probe_lists("v", varied, 10, FillerPool({}), [None], seed=0)
    assert lists.a == [("q2", ("cat",)), ("q2", ("cat",))]
    p, flags = verdicts(lists, order_lists(None, echo, lists.a), order_lists(None, echo, lists.b))
    assert p.tolist() == [0.5] and flags is None


@pytest.mark.parametrize("size", [1, 2, 10, 13, 14, 20, 100])
def test_window_rows_pack_every_permutation_exactly(size):
    from abnirml.evaluation.analyses.listwise_probing import _packed, _unpacked

    rng = np.random.default_rng(size)
    for _ in range(20):
        permutation = tuple(int(i) for i in rng.permutation(size))
        values = _packed(permutation)
        assert len(values) == -(-size // (53 // max(1, (size - 1).bit_length())))
        assert _unpacked(values, size) == permutation
    if size > 1:      # a value that packs no permutation (two equal ranks) is not trusted
        assert _unpacked([0.0] * len(_packed(tuple(range(size)))), size) is None


def test_a_cached_window_that_holds_no_permutation_is_asked_again():
    from abnirml.evaluation.analyses.listwise_probing import _row_keys, rank_cached
    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.rankers.support.cache import ScoreCache

    echo = Echo()
    window = Window("q", ("a", "b", "c"))
    with ScoreCache(None) as cache:
        scorer = Scorer(cache, progress=False)
        assert rank_cached(scorer, echo, [window, window]) == [(0, 1, 2)] * 2
        assert echo.calls == 1 and scorer.windows_ranked == 1
        assert rank_cached(scorer, echo, [window]) == [(0, 1, 2)] and echo.calls == 1
        [(q, d)] = _row_keys(scorer, window)
        cache.store(echo.fingerprint, [(q, d, 0.0)])          # ranks 0, 0, 0
        assert rank_cached(scorer, echo, [window]) == [(0, 1, 2)] and echo.calls == 2


class Reverse(Echo):
    """Returns every window in reverse input order: the later-placed document always wins."""

    def rank_windows(self, windows):
        self.calls += 1
        return [tuple(reversed(range(len(w.passages)))) for w in windows]


def test_position_bias_says_which_position_wins(tmp_path):
    """Known answers: a ranker that reverses its input follows the position on every sample
    (position_bias 1) and never in favour of the earlier place (position_bias_earlier 0);
    the echo ranker's is all primacy (test above)."""
    out = run(_config(tmp_path, [Reverse("reverse")], probes=["tmp:shuffle-words"],
                      effectiveness=False))
    row = _rows(out)[("tmp:shuffle-words", "reverse", "all")]
    assert row["n"] > 0 and row["score"] == 0.0
    assert (row["position_bias"], row["position_bias_earlier"]) == (1.0, 0.0)
