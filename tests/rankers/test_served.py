"""Served rankers against loopback stand-ins: the rerank API, RankGPT over chat completions,
the listwise window cache, retries, concurrency, usage counts and API-key handling."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

from abnirml.errors import ConfigError, ScoringError
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.rankers.families.rankgpt import parse_permutation, rankgpt_messages
from abnirml.rankers.listwise import Window, sliding_window_order, sliding_windows
from abnirml.rankers.registry import RankerEnv, build_ranker
from abnirml.rankers.support.cache import ScoreCache
from tests._served_standins import StandIn, prompt_parts, term_count

QUERY = "cat food"
PASSAGES = ("a dog on a mat", "cat food for a cat who likes food", "the cat sat",
            "dry food", "nothing here at all")


def _shuffled(text: str, seed: int = 3) -> str:
    words = text.split()
    random.Random(seed).shuffle(words)
    return " ".join(words)


# -- rerank API ----------------------------------------------------------------------------


def test_rerank_api_scores_are_the_servers_and_blind_to_word_order():
    with StandIn() as server:
        ranker = build_ranker(f"rerank-api:{server.base}/v1/rerank+model=m+batch_size=2",
                              RankerEnv())
        pairs = [(QUERY, p) for p in PASSAGES] + [(QUERY, _shuffled(PASSAGES[1]))]
        scores = ranker.score(pairs)
    assert scores.tolist() == [term_count(QUERY, p) for _, p in pairs]
    assert scores[1] == scores[-1] == 4.0            # a passage and its word shuffle
    assert sorted(len(r["documents"]) for r in server.requests) == [2, 2, 2]
    assert {r["model"] for r in server.requests} == {"m"}
    assert ranker.usage()["requests"] == 3


def test_rerank_api_sends_one_query_per_request_and_speaks_tei():
    with StandIn() as server:
        ranker = build_ranker(f"rerank-api:{server.base}/rerank+protocol=tei", RankerEnv())
        pairs = [("cat", "cat cat"), ("dog", "a dog"), ("cat", "no"), ("dog", "dog dog dog")]
        assert ranker.score(pairs).tolist() == [2.0, 1.0, 0.0, 3.0]
    assert sorted(r["query"] for r in server.requests) == ["cat", "dog"]


def test_rerank_api_needs_a_model_and_refuses_incomplete_answers(monkeypatch):
    with pytest.raises(ConfigError, match=r"\+model=NAME is required"):
        build_ranker("rerank-api:http://127.0.0.1:9/rerank", RankerEnv())
    with StandIn() as server:
        ranker = build_ranker(f"rerank-api:{server.base}/rerank+model=m", RankerEnv())
        monkeypatch.setattr(StandIn, "_rerank", lambda self, body: {"results": [
            {"index": 0, "relevance_score": 1.0}, {"index": 0, "relevance_score": 2.0}]})
        with pytest.raises(ScoringError) as err:
            ranker.score([("q", "a"), ("q", "b")])
    assert "returned result index 0 for 2 documents" in str(err.value)
    assert "\n" not in str(err.value)


def test_requests_stay_within_the_concurrency_bound():
    with StandIn(latency=0.2) as server:
        ranker = build_ranker(f"rerank-api:{server.base}/rerank+model=m+batch_size=1"
                              "+concurrency=3", RankerEnv())
        ranker.score([(QUERY, f"cat {i}") for i in range(9)])
    assert len(server.requests) == 9
    assert 1 < server.most_in_flight <= 3


# -- retries ---------------------------------------------------------------------------------


def test_a_429_storm_is_retried_and_gives_the_same_scores():
    pairs = [(QUERY, p) for p in PASSAGES]
    with StandIn() as calm:
        expected = build_ranker(f"rerank-api:{calm.base}/rerank+model=m", RankerEnv()
                                ).score(pairs)
    with StandIn(rate_limited=6, retry_after="0") as stormy:
        ranker = build_ranker(f"rerank-api:{stormy.base}/rerank+model=m+batch_size=2",
                              RankerEnv())
        scores = ranker.score(pairs)
    np.testing.assert_array_equal(scores, expected)
    assert stormy.refused == 6
    assert ranker.usage() == {"requests": 9, "retries": 6}


def test_a_503_without_retry_after_backs_off_then_answers():
    with StandIn(rate_limited=2, status=503, retry_after=None) as server:
        ranker = build_ranker(f"http:{server.base}/score", RankerEnv())
        assert ranker.score([("cat", "cat cat")]).tolist() == [2.0]
    assert server.refused == 2 and ranker.usage()["retries"] == 2


def test_a_retry_after_beyond_the_deadline_fails_at_once():
    with StandIn(rate_limited=1, retry_after="120") as server:
        ranker = build_ranker(f"http:{server.base}/score+retry_for=5", RankerEnv())
        with pytest.raises(ScoringError) as err:
            ranker.score([("cat", "cat")])
    message = str(err.value)
    assert message.startswith(f"ranker http:{server.base}/score+retry_for=5: ")
    assert "answered HTTP 429" in message and "Retry-After 120 s" in message
    assert "+retry_for" in message and "\n" not in message
    assert ranker.usage()["requests"] == 1


def test_retry_for_zero_never_retries():
    with StandIn(rate_limited=1) as server:
        ranker = build_ranker(f"http:{server.base}/score+retry_for=0", RankerEnv())
        with pytest.raises(ScoringError, match="answered HTTP 429"):
            ranker.score([("cat", "cat")])


# -- API keys --------------------------------------------------------------------------------


def test_the_api_key_reaches_the_server_and_nothing_else(tmp_path, monkeypatch):
    token = "sk-test-5ecret-0f-the-user"
    monkeypatch.setenv("STANDIN_KEY", token)
    with StandIn(api_key=token) as server:
        spec = f"rerank-api:{server.base}/rerank+model=m+api_key_env=STANDIN_KEY"
        ranker = build_ranker(spec, RankerEnv())
        cache_file = tmp_path / "scores.sqlite"
        with ScoreCache(cache_file) as cache:
            scores = Scorer(cache, progress=False).score(ranker, [(QUERY, PASSAGES[1])])
        assert scores.tolist() == [4.0]
        stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
        assert token.encode() not in stored
        assert token not in ranker.name + ranker.fingerprint
        assert token.encode() not in pickle.dumps(ranker)
        monkeypatch.setenv("STANDIN_KEY", token + "-revoked")
        with pytest.raises(ScoringError) as err:      # the server quotes the header back
            ranker.score([(QUERY, "x")])
    message = str(err.value)
    assert "answered HTTP 401" in message and token not in message and "***" in message
    monkeypatch.delenv("STANDIN_KEY")
    with pytest.raises(ConfigError, match=r"STANDIN_KEY .* is not set"):
        build_ranker(spec, RankerEnv())


# -- RankGPT -------------------------------------------------------------------------------


def test_the_rankgpt_conversation_is_rank_llms():
    messages = rankgpt_messages("q", ["first text", "second text"])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user",
                                             "assistant", "user", "assistant", "user"]
    assert messages[0]["content"].startswith("You are RankGPT, an intelligent assistant")
    assert messages[1]["content"] == ("I will provide you with 2 passages, each indicated by "
                                      "number identifier [].\nRank the passages based on "
                                      "their relevance to query: q.")
    assert messages[2]["content"] == "Okay, please provide the passages."
    assert messages[3]["content"] == "[1] first text"
    assert messages[4]["content"] == "Received passage [1]."
    assert messages[-1]["content"].startswith("Search Query: q.\nRank the 2 passages above")
    assert messages[-1]["content"].endswith("The output format should be [] > [], e.g., "
                                            "[1] > [2]. Only response the ranking results, "
                                            "do not say any word or explain.")


def test_passages_are_repaired_by_ftfy_before_they_are_cut_as_rank_llm_does():
    """rank_llm shows a passage after ftfy's fix_text (mojibake decoded, curly quotes
    straightened, ligatures unfolded, HTML entities read), then cuts it to its words and
    writes [n] as (n); the query only gets the (n). Known answers, written out by hand."""
    ranker = build_ranker("rankgpt:http://127.0.0.1:9/v1+model=m+passage_words=5",
                          RankerEnv())
    window = Window("what was [1] Americaâ€™s role",
                    ("Americaâ€™s involvement in   the war began", "the ﬁrst &amp; “best” [2] of"))
    messages = ranker.messages(window)
    assert messages[1]["content"].endswith("to query: what was (1) Americaâ€™s role.")
    assert messages[3]["content"] == "[1] America's involvement in the war"
    assert messages[5]["content"] == '[2] the first & "best" (2)'
    assert "|text=ftfy-" in ranker.fingerprint


@pytest.mark.shared
def test_a_fifth_of_the_dl19_passages_change_under_the_repair(dl19):
    """Why the repair matters: MS MARCO passages often hold UTF-8 read as Latin-1. Measured
    on the shared DL19 passages: 3,402 of 14,581 (23 %) print differently once repaired."""
    from abnirml.rankers.families.rankgpt import repaired_text

    lines = (dl19 / "passages.tsv").read_text(encoding="utf-8").splitlines()
    texts = [line.split("\t", 1)[1] for line in lines]
    changed = sum(" ".join(t.split()) != " ".join(repaired_text(t).split()) for t in texts)
    assert (changed, len(texts)) == (3402, 14581)


@pytest.mark.parametrize("prompt", ["rankgpt", "rankzephyr", "file"])
def test_rankgpt_returns_the_servers_permutation(prompt, tmp_path):
    if prompt == "file":
        template = tmp_path / "prompt.txt"
        template.write_text("Rank {num} passages.\n{passages}\nSearch Query: {query}.\n",
                            encoding="utf-8")
        prompt = str(template)
    with StandIn(usage=True) as server:
        ranker = build_ranker(f"rankgpt:{server.base}/v1+model=m+prompt={prompt}",
                              RankerEnv())
        [order] = ranker.rank_windows([Window(QUERY, PASSAGES)])
    assert order == (1, 2, 3, 0, 4)                   # 4, 1, 1, 0, 0 occurrences
    [request] = server.requests
    assert prompt_parts(request["messages"]) == (QUERY, list(PASSAGES))
    assert request["model"] == "m" and request["temperature"] == 0
    usage = ranker.usage()
    assert usage["prompt_tokens"] == 100 and usage["completion_tokens"] == 20
    assert usage["replies"] == 1 and usage["repaired"] == 0


def test_passages_are_cut_to_passage_words_and_brackets_defused():
    with StandIn(reply="echo") as server:
        ranker = build_ranker(f"rankgpt:{server.base}/v1+model=m+passage_words=3",
                              RankerEnv())
        ranker.rank_windows([Window("see [2]", ("one  two\nthree four", "cite [1] now ok"))])
    _, shown = prompt_parts(server.requests[0]["messages"])
    assert shown == ["one two three", "cite (1) now"]
    assert "Search Query: see (2)." in server.requests[0]["messages"][-1]["content"]


def test_an_echoing_server_keeps_the_input_order():
    with StandIn(reply="echo") as server:
        ranker = build_ranker(f"rankgpt:{server.base}/v1+model=m", RankerEnv())
        assert ranker.rank_windows([Window(QUERY, PASSAGES)] * 3) == [(0, 1, 2, 3, 4)] * 3
    assert len(server.requests) == 3


@pytest.mark.parametrize(("reply", "order", "repaired"), [
    ("[2] > [3] > [1]", (1, 2, 0), False),
    ("Sure! The ranking: [2] > [2] > [9] > [1]", (1, 0, 2), True),   # junk, repeat, stray id
    ("[3]>[1]>[2]", (2, 0, 1), True),                                # not rank_llm's format
    ("<think>[1] > [2]</think>\n[3] > [2]", (2, 1, 0), True),        # missing id appended
    ("no ranking at all", (0, 1, 2), True),
    ("［３］ > ［１］ > ［２］", (2, 0, 1), True),                       # full-width digits
])
def test_replies_are_repaired_as_rank_llm_repairs_them(reply, order, repaired):
    assert parse_permutation(reply, 3) == (order, repaired)


def test_the_share_of_repaired_replies_is_recorded():
    with StandIn(replies=["[2] > [1] > [3]", "I think [3] > [1]"]) as server:
        ranker = build_ranker(f"rankgpt:{server.base}/v1+model=m+concurrency=1", RankerEnv())
        orders = ranker.rank_windows([Window("q", ("a", "b", "c"))] * 2)
    assert orders == [(1, 0, 2), (2, 0, 1)]
    assert ranker.usage()["replies"] == 2 and ranker.usage()["repaired"] == 1


def test_a_sliding_window_over_100_candidates_makes_9_calls_in_rank_llms_order():
    candidates = tuple(f"passage number {i}" for i in range(100))
    with StandIn(reply="echo") as server:
        ranker = build_ranker(f"rankgpt:{server.base}/v1+model=m", RankerEnv())
        assert (ranker.window_size, ranker.step) == (20, 10)
        order = sliding_window_order(ranker, QUERY, candidates, ranker.window_size,
                                     ranker.step)
    assert order == tuple(range(100))
    sent = [prompt_parts(r["messages"])[1] for r in server.requests]
    assert [(int(s[0].split()[-1]), int(s[-1].split()[-1]) + 1) for s in sent] == \
        sliding_windows(100, 20, 10) == [(80, 100), (70, 90), (60, 80), (50, 70), (40, 60),
                                         (30, 50), (20, 40), (10, 30), (0, 20)]


def test_a_passage_climbs_through_the_windows_to_the_top():
    candidates = [f"filler {i}" for i in range(100)]
    candidates[95] = "cat food cat food"
    with StandIn() as server:
        ranker = build_ranker(f"rankgpt:{server.base}/v1+model=m", RankerEnv())
        order = sliding_window_order(ranker, QUERY, candidates, 20, 10)
    assert order[0] == 95 and len(server.requests) == 9


# -- the window cache (the engine's, keyed by the whole ordered window) ---------------------


def test_a_rerun_with_the_same_cache_sends_no_request(tmp_path):
    probing = pytest.importorskip("abnirml.evaluation.analyses.listwise_probing")
    windows = [Window(QUERY, PASSAGES), Window(QUERY, PASSAGES[::-1]), Window("dry", PASSAGES)]

    def ranked(spec: str, asked: list[Window]) -> tuple[list, dict[str, int]]:
        ranker = build_ranker(spec, RankerEnv())
        with ScoreCache(tmp_path / "c.sqlite") as cache:
            orders = probing.rank_cached(Scorer(cache, progress=False), ranker, asked)
        return orders, ranker.usage()

    with StandIn() as server:
        spec = f"rankgpt:{server.base}/v1+model=m"
        orders, usage = ranked(spec, windows + windows[:1])      # a repeat: asked once
        assert len(server.requests) == 3 and usage["requests"] == 3
        again, usage = ranked(spec, windows)
        assert again == orders[:3] and usage["requests"] == 0 and len(server.requests) == 3
        # the same passages in another order are another prompt: asked for
        ranked(spec, [Window(QUERY, PASSAGES[1:] + PASSAGES[:1])])
        assert len(server.requests) == 4
        ranked(spec + "+prompt=rankzephyr", windows[:1])          # another prompt: not shared
        assert len(server.requests) == 5
    assert orders[0] == (1, 2, 3, 0, 4) and orders[1] == (3, 1, 2, 0, 4)


def test_the_fingerprint_names_what_changes_a_window_and_nothing_else():
    def fingerprint(extra: str) -> str:
        return build_ranker(f"rankgpt:http://127.0.0.1:9/v1+model=m{extra}",
                            RankerEnv()).fingerprint

    plain = fingerprint("")
    assert plain == fingerprint("+concurrency=2+timeout=5+window=10+step=5+list_size=4")
    changed = [fingerprint(e) for e in ("+prompt=rankzephyr", "+passage_words=100",
                                        "+temperature=0.5", "+max_tokens=50", "+version=2")]
    assert len({plain, *changed}) == 6
    assert plain != build_ranker("rankgpt:http://127.0.0.1:9/v1+model=n", RankerEnv()
                                 ).fingerprint


def test_usage_is_counted_for_the_http_family_too():
    with StandIn() as server:
        ranker = build_ranker(f"http:{server.base}/score+batch_size=2+concurrency=2",
                              RankerEnv())
        assert ranker.score([(QUERY, p) for p in PASSAGES]).tolist() == \
            [term_count(QUERY, p) for p in PASSAGES]
    assert ranker.usage() == {"requests": 3, "retries": 0}


def test_run_json_records_what_a_served_ranker_asked(tmp_path):
    """A whole run against the rerank stand-in: the request count reaches run.json's
    ``usage``, and a rerun over the same cache asks nothing."""
    import json

    pytest.importorskip("abnirml.evaluation.analyses.position_analyses",
                        reason="run.json's usage is written by the listwise engine's pipeline")
    from abnirml.pipeline import RunConfig, SessionSettings, run

    def usage(out: str) -> dict[str, int] | None:
        info = json.loads((tmp_path / out / "run.json").read_text(encoding="utf-8"))
        return (info.get("usage") or {}).get("served")

    with StandIn(usage=True) as server:
        spec = f"rerank-api:{server.base}/rerank+model=m@served"
        session = SessionSettings(cache=str(tmp_path / "c.sqlite"), progress=False)
        run(RunConfig(rankers=[spec], probes=["mmp:tf:length"], out=str(tmp_path / "a"),
                      effectiveness=False, session=session))
        asked = len(server.requests)
        assert asked > 0
        assert usage("a") == {"requests": asked, "retries": 0, "prompt_tokens": 7 * asked,
                              "completion_tokens": 0, "answers_with_usage": asked}
        run(RunConfig(rankers=[spec], probes=["mmp:tf:length"], out=str(tmp_path / "b"),
                      effectiveness=False, session=session))
        assert len(server.requests) == asked
        assert usage("b") == {"requests": 0, "retries": 0}


def _probe_scores(tmp_path, spec: str, probes: list[str]) -> dict[str, dict]:
    import json

    from abnirml.pipeline import RunConfig, SessionSettings, run

    run(RunConfig(rankers=[spec], probes=probes, out=str(tmp_path / "out"),
                  effectiveness=False, session=SessionSettings(cache=None, progress=False)))
    rows = [json.loads(line) for line in
            (tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    return {r["probe"]: r for r in rows if r["subset"] == "all"}


def test_rerank_api_probes_give_the_term_counting_servers_known_answers(tmp_path):
    """Appending the query adds occurrences of its words (every verdict +1); shuffling the
    words changes no count (every verdict 0, exactly)."""
    with StandIn() as server:
        rows = _probe_scores(tmp_path, f"rerank-api:{server.base}/rerank+model=m@served",
                             ["tmp:append-query", "tmp:shuffle-words"])
    assert rows["tmp:append-query"]["score"] >= 0.9
    assert rows["tmp:shuffle-words"]["score"] == 0.0
    assert rows["tmp:shuffle-words"]["n"] > 50


# -- RankGPT through the listwise engine (runs where the listwise engine is present) ---------


def _listwise_run(tmp_path, spec: str, probes: list[str], out: str = "out"):
    pytest.importorskip("abnirml.evaluation.analyses.listwise_probing",
                        reason="listwise probing is the listwise engine's")
    from abnirml.pipeline import RunConfig, SessionSettings, run

    output = run(RunConfig(collection="demo", rankers=[spec], probes=probes,
                           out=str(tmp_path / out), effectiveness=False,
                           session=SessionSettings(cache=None, progress=False)))
    rows = {r["probe"]: r for r in output.result.records if r["subset"] == "all"}
    return rows, output.run_info


def test_rankgpt_over_a_term_sorting_server_prefers_the_query_and_ties_on_shuffles(tmp_path):
    """Appending the query wins in both orders; a word shuffle ties on content, so the
    stable sort keeps the earlier document first and every verdict follows the position."""
    with StandIn() as server:
        rows, info = _listwise_run(tmp_path, f"rankgpt:{server.base}/v1+model=m@gpt",
                                   ["tmp:append-query", "tmp:shuffle-words"])
    assert rows["tmp:append-query"]["score"] >= 0.9
    shuffled = rows["tmp:shuffle-words"]
    assert abs(shuffled["score"]) <= 0.1 and shuffled["position_bias"] >= 0.9
    assert info["usage"]["gpt"]["requests"] == len(server.requests) > 0
    assert info["usage"]["gpt"]["repaired"] == 0


def test_rankgpt_over_an_echoing_server_is_all_position(tmp_path):
    with StandIn(reply="echo") as server:
        rows, info = _listwise_run(tmp_path, f"rankgpt:{server.base}/v1+model=m@echo",
                                   ["tmp:append-query", "tmp:shuffle-words"])
    for row in rows.values():
        assert row["score"] == 0.0 and row["position_bias"] == 1.0
    assert info["listwise"]["rankers"]["echo"]["null_test"]["first_rate"] == 1.0


def test_a_429_storm_during_a_listwise_run_changes_no_result(tmp_path):
    probes = ["tmp:append-query"]
    with StandIn() as calm:
        quiet, _ = _listwise_run(tmp_path, f"rankgpt:{calm.base}/v1+model=m@gpt", probes, "a")
    with StandIn(rate_limited=25, retry_after="0") as stormy:
        storm, info = _listwise_run(tmp_path, f"rankgpt:{stormy.base}/v1+model=m@gpt", probes,
                                    "b")
    assert stormy.refused == 25 and info["usage"]["gpt"]["retries"] == 25
    keep = ("score", "n", "pos", "neg", "position_bias")
    assert {k: storm["tmp:append-query"][k] for k in keep} == \
        {k: quiet["tmp:append-query"][k] for k in keep}


def test_no_file_of_a_whole_run_holds_the_api_key(tmp_path, monkeypatch):
    token = "sk-run-7f3a-never-on-disk"
    monkeypatch.setenv("RUN_KEY", token)
    from abnirml.pipeline import RunConfig, SessionSettings, run

    with StandIn(api_key=token) as server:
        run(RunConfig(rankers=[f"rerank-api:{server.base}/rerank+model=m+api_key_env=RUN_KEY"],
                      probes=["tmp:append-query"], out=str(tmp_path / "out"),
                      session=SessionSettings(cache=str(tmp_path / "c.sqlite"),
                                              progress=False)))
        assert server.requests
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "run.json" for p in written) and len(written) > 5
    assert not [p for p in written if token.encode() in p.read_bytes()]


@pytest.mark.parametrize(("spec", "message"), [
    ("rankgpt:http://127.0.0.1:9/v1", r"\+model=NAME is required"),
    ("rankgpt:http://127.0.0.1:9/v1+model=m+prompt=rankzephry", "neither rankgpt, rankzephyr"),
    ("rankgpt:ftp://127.0.0.1/v1+model=m", "is not an http:// or https:// URL"),
    ("rerank-api:http://127.0.0.1:9/rerank+model=m+protocol=jina", "protocol must be cohere"),
    ("rerank-api:http://127.0.0.1:9/rerank+model=m+concurrency=0", "concurrency=0 must be"),
    ("http:http://127.0.0.1:9/score+retry_for=-1", "retry_for=-1 must be"),
])
def test_spec_errors_are_one_line(spec, message):
    with pytest.raises(ConfigError, match=message) as err:
        build_ranker(spec, RankerEnv())
    assert "\n" not in str(err.value)


def test_a_prompt_file_needs_passages_and_query(tmp_path):
    prompt = tmp_path / "p.txt"
    prompt.write_text("Rank these for {query}.", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"must contain \{passages\} exactly once"):
        build_ranker(f"rankgpt:http://127.0.0.1:9/v1+model=m+prompt={prompt}", RankerEnv())
