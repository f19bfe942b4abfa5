"""What a user behind a real API key, a real rate limit or a flaky server relies on: the key
goes nowhere but its own server and is never printed, retries never hammer, user text is
never a template, and every odd reply is one line or a rank_llm-style repair.

Every server here is a loopback stand-in (tests/_served_standins.py) started and stopped by
the test itself.
"""

from __future__ import annotations

import pytest

from abnirml.errors import ConfigError, ScoringError
from abnirml.rankers.families.rankgpt import parse_permutation
from abnirml.rankers.listwise import Window
from abnirml.rankers.registry import RankerEnv, build_ranker
from tests._served_standins import StandIn, prompt_parts, term_count

KEY = "sk-proj-7Hq2Zt9WkLmN4pXr8sVb3YcD1eFgJ0aU"        # 40 characters, like a real one
QUERY = "cat food"
PASSAGES = ("a dog on a mat", "cat food for a cat who likes food", "the cat sat")


def pieces_of_the_key(text: str, key: str = KEY, size: int = 10) -> list[str]:
    """Every ``size``-character piece of ``key`` that ``text`` holds."""
    return [key[i:i + size] for i in range(len(key) - size + 1) if key[i:i + size] in text]


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv("TRUST_KEY", KEY)
    return "TRUST_KEY"


# -- the key goes to its own server only ---------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_never_carries_the_key(key_env, status):
    with StandIn() as elsewhere, \
            StandIn(redirects={"/v1/rerank": f"{elsewhere.base}/v1/rerank"},
                    redirect_status=status) as server:
        ranker = build_ranker(f"rerank-api:{server.base}/v1/rerank+model=m"
                              f"+api_key_env={key_env}", RankerEnv())
        with pytest.raises(ScoringError) as err:
            ranker.score([(QUERY, p) for p in PASSAGES])
    assert [h for h in elsewhere.headers if "Authorization" in h] == []
    message = str(err.value)
    assert "\n" not in message and not pieces_of_the_key(message)
    assert f"redirected the request (HTTP {status}) to {elsewhere.base}/v1/rerank" in message


def test_a_same_origin_307_keeps_the_key_and_the_body(key_env):
    """A server that moved its endpoint within itself (307/308 keep the method and body)."""
    with StandIn(api_key=KEY, redirects={"/old/rerank": "/v1/rerank"}) as server:
        ranker = build_ranker(f"rerank-api:{server.base}/old/rerank+model=m"
                              f"+api_key_env={key_env}", RankerEnv())
        scores = ranker.score([(QUERY, p) for p in PASSAGES])
    assert scores.tolist() == [term_count(QUERY, p) for p in PASSAGES]
    assert [h.get("Authorization") for h in server.headers] == [f"Bearer {KEY}"] * 2


def test_a_302_within_the_server_is_named_not_followed_as_a_get():
    """Following a 301/302/303 turns the POST into a GET without its body: the user is told
    where the server points instead of getting an answer to another question."""
    with StandIn(redirects={"/rerank": "/v2/rerank"}, redirect_status=302) as server:
        ranker = build_ranker(f"rerank-api:{server.base}/rerank+model=m", RankerEnv())
        with pytest.raises(ScoringError) as err:
            ranker.score([(QUERY, "x")])
    assert [h for h in server.headers if h.get("Content-Type") is None] == []   # no GET
    assert f"redirected the request (HTTP 302) to {server.base}/v2/rerank" in str(err.value)


@pytest.mark.parametrize(("value", "said"), [
    (KEY + "\r", "a carriage return"),                 # `export K=$(cat key.txt)`, CRLF file
    (KEY + "\r\n", "a carriage return"),
    (KEY[:20] + "\n" + KEY[20:], "a line feed"),
    (KEY[:20] + "\x1b" + KEY[20:], "a control character"),
    (KEY[:20] + " " + KEY[20:], "a space"),
    ("sk-ключ-" + KEY[8:], "a non-ASCII character"),     # not Latin-1 either
    ("sk-clé-" + KEY[7:], "a non-ASCII character"),
])
def test_a_key_that_cannot_be_a_header_is_refused_in_one_line(monkeypatch, value, said):
    monkeypatch.setenv("TRUST_KEY", value)
    for family in ("rerank-api:http://127.0.0.1:9/rerank+model=m",
                   "rankgpt:http://127.0.0.1:9/v1+model=m", "http:http://127.0.0.1:9/score"):
        with pytest.raises(ConfigError) as err:
            build_ranker(f"{family}+api_key_env=TRUST_KEY", RankerEnv())
        message = str(err.value)
        assert "\n" not in message and "\r" not in message
        assert said in message and "TRUST_KEY" in message
        assert not pieces_of_the_key(message, value.strip())
        assert "server" not in message


def test_a_key_changed_to_a_bad_one_mid_run_is_refused_before_sending(key_env, monkeypatch):
    with StandIn(api_key=KEY) as server:
        ranker = build_ranker(f"http:{server.base}/score+api_key_env={key_env}", RankerEnv())
        monkeypatch.setenv(key_env, KEY + "\r")
        with pytest.raises(ScoringError, match="a carriage return") as err:
            ranker.score([(QUERY, "x")])
    assert server.received == 0 and not pieces_of_the_key(str(err.value))


def test_a_server_quoting_the_key_in_a_long_reason_never_gets_a_piece_printed(key_env):
    """The reason phrase is cut to a readable length: a key cut in two is still blanked."""
    prefix = "credentials rejected; the header we got reads as "   # 49 characters
    with StandIn(api_key=KEY + "-rotated", quote_prefix=prefix) as server:
        ranker = build_ranker(f"rerank-api:{server.base}/rerank+model=m+api_key_env={key_env}",
                              RankerEnv())
        with pytest.raises(ScoringError) as err:
            ranker.score([(QUERY, "x")])
    message = str(err.value)
    assert "answered HTTP 401" in message and not pieces_of_the_key(message)


@pytest.mark.parametrize("field", ["index", "relevance_score"])
def test_a_key_quoted_as_an_index_or_score_is_blanked(key_env, monkeypatch, field):
    with StandIn() as server:
        answer = {"index": 0, "relevance_score": 1.0, field: KEY}
        monkeypatch.setattr(StandIn, "_rerank", lambda self, body: {"results": [answer]})
        ranker = build_ranker(f"rerank-api:{server.base}/rerank+model=m+api_key_env={key_env}",
                              RankerEnv())
        with pytest.raises(ScoringError) as err:
            ranker.score([(QUERY, "x")])
    assert not pieces_of_the_key(str(err.value)), str(err.value)
    assert not pieces_of_the_key(repr(err.value))


# -- user text is never a template ---------------------------------------------------------


@pytest.mark.parametrize("prompt", ["rankgpt", "rankzephyr", "file"])
def test_placeholders_in_a_query_or_passage_are_shown_as_written(prompt, tmp_path):
    if prompt == "file":
        template = tmp_path / "prompt.txt"
        template.write_text("Rank {num} passages for {query}.\n{passages}\n"
                            "Search Query: {query}.\n", encoding="utf-8")
        prompt = str(template)
    ranker = build_ranker(f"rankgpt:http://127.0.0.1:9/v1+model=m+prompt={prompt}",
                          RankerEnv())
    query = "what is {num} in {passages} of {query}"
    passages = ("a {query} text", "{num} and {passages}")
    messages = ranker.messages(Window(query, passages))
    text = "\n".join(m["content"] for m in messages)
    assert text.count(query) >= 2                        # every place the query is shown
    assert prompt_parts(messages) == (query, list(passages))
    assert "Rank 2 passages" in text or "Rank the 2 passages" in text or \
        "with 2 passages" in text


# -- never hammer --------------------------------------------------------------------------


# A fixed date long past: a value computed from the clock would give each xdist worker a
# different test id, and xdist refuses to run workers that collected different tests.
@pytest.mark.parametrize("retry_after", ["0", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_a_retry_after_of_zero_or_in_the_past_never_hammers(retry_after):
    """A server that refuses everything, saying 'retry now': retries follow a floor and a
    growing pause shared by the eight threads, so three seconds hold a few dozen requests
    (sleeps never end early, so a loaded machine only makes it fewer)."""
    with StandIn(rate_limited=10**9, retry_after=retry_after) as server:
        ranker = build_ranker(f"rerank-api:{server.base}/rerank+model=m+batch_size=1"
                              "+concurrency=8+retry_for=3", RankerEnv())
        with pytest.raises(ScoringError, match=r"answered HTTP 429.*\+retry_for"):
            ranker.score([(QUERY, f"passage {i}") for i in range(40)])
    # eight at once, then waves after at least 0.25, 0.5 and 1 s more: 3 s hold ≤ 4 waves
    assert 8 <= server.received <= 32


def test_a_429_slows_every_thread_talking_to_that_endpoint():
    """Four threads; the first request is refused with Retry-After: 1 while the others are
    answered after 0.2 s. No thread sends a new request before the second is over."""
    with StandIn(rate_limited=1, retry_after="1", latency=0.2) as server:
        ranker = build_ranker(f"rerank-api:{server.base}/rerank+model=m+batch_size=1"
                              "+concurrency=4", RankerEnv())
        scores = ranker.score([(QUERY, f"cat {i}") for i in range(24)])
    assert scores.tolist() == [1.0] * 24
    [refused_at] = server.refusals
    # the three requests sent with the refused one may arrive around it; nothing else
    early = [t for t in server.arrivals if refused_at < t < refused_at + 0.95]
    assert len(early) <= 3, [round(t - refused_at, 3) for t in server.arrivals]
    assert ranker.usage()["retries"] == 1


# -- replies --------------------------------------------------------------------------------


@pytest.mark.parametrize("reply", [
    "[⒈] > [2] > [3]", "[⑴] > [2]", "[⓪] > [1]", "➀ > ➁", "[፩] > [2]", "[3] > [᧚]",
    "[" + "9" * 5000 + "] > [2] > [1]",                  # past Python's int-string limit
])
def test_a_reply_whose_digits_int_rejects_keeps_the_input_order(reply):
    """rank_llm reads such a reply into an exception and keeps the window as it was."""
    assert parse_permutation(reply, 3) == ((0, 1, 2), True)


def test_such_a_reply_from_a_server_is_counted_as_repaired():
    with StandIn(replies=["[⒉] > [1] > [3]", "[3] > [1] > [2]"]) as server:
        ranker = build_ranker(f"rankgpt:{server.base}/v1+model=m+concurrency=1", RankerEnv())
        orders = ranker.rank_windows([Window("q", ("a", "b", "c"))] * 2)
    assert orders == [(0, 1, 2), (2, 0, 1)]
    assert ranker.usage()["replies"] == 2 and ranker.usage()["repaired"] == 1


@pytest.mark.parametrize(("index", "shown"), [
    ("2", 'returned result index "2" for 1 documents'),
    (1.0, "returned result index 1.0 for 1 documents"),
    (True, "returned result index true for 1 documents"),
])
def test_an_index_that_is_not_an_integer_is_quoted_as_json(monkeypatch, index, shown):
    with StandIn() as server:
        monkeypatch.setattr(StandIn, "_rerank", lambda self, body: {"results": [
            {"index": index, "relevance_score": 1.0}]})
        ranker = build_ranker(f"rerank-api:{server.base}/rerank+model=m", RankerEnv())
        with pytest.raises(ScoringError) as err:
            ranker.score([(QUERY, "x")])
    assert shown in str(err.value)


@pytest.mark.parametrize(("raw", "said"), [
    ('{"results": [{"index": 0, "relevance_score": NaN}]}', "relevance_score NaN"),
    ('{"results": [{"index": 0, "relevance_score": -Infinity}]}', "relevance_score -Infinity"),
    ('{"results": [{"index": 0}]}', "returned no relevance_score for document 0"),
    ('{"results": [{"index": 0, "relevance_score": null}]}',
     "returned no relevance_score for document 0"),
])
def test_a_non_finite_score_is_named_as_such(raw, said):
    with StandIn(raw=raw) as server:
        ranker = build_ranker(f"rerank-api:{server.base}/rerank+model=m", RankerEnv())
        with pytest.raises(ScoringError) as err:
            ranker.score([(QUERY, "x")])
    assert said in str(err.value), str(err.value)


@pytest.mark.parametrize("path", ["", "/", "/v1"])
def test_a_base_url_given_to_rerank_api_says_the_full_endpoint_is_expected(path):
    with StandIn() as server:
        ranker = build_ranker(f"rerank-api:{server.base}{path}+model=m", RankerEnv())
        with pytest.raises(ScoringError) as err:
            ranker.score([(QUERY, "x")])
    message = str(err.value)
    assert "answered HTTP 404" in message and "\n" not in message
    assert f"posted to {path or '/'}" in message
    assert "/v1/rerank" in message and "full URL" in message


def test_rankgpt_refuses_a_step_longer_than_its_window():
    with pytest.raises(ConfigError, match="step=15 must not exceed window=10"):
        build_ranker("rankgpt:http://127.0.0.1:9/v1+model=m+window=10+step=15", RankerEnv())
    assert build_ranker("rankgpt:http://127.0.0.1:9/v1+model=m+window=10+step=10",
                        RankerEnv()).step == 10


# -- usage: every request counted, whichever process or wrapper sent it ---------------------


def _run_info(tmp_path, spec: str, probes: list[str], **session: object) -> dict:
    from abnirml.pipeline import RunConfig, SessionSettings, run

    output = run(RunConfig(collection="demo", rankers=[spec], probes=probes,
                           out=str(tmp_path / "out"), effectiveness=False,
                           session=SessionSettings(cache=None, progress=False, **session)))
    return output.run_info


def test_workers_count_the_requests_they_send(tmp_path, monkeypatch):
    from abnirml.evaluation.execution import parallel
    monkeypatch.setattr(parallel, "available_cores", lambda: 4)
    forks = []
    real_pool = parallel._scored_in_pool
    monkeypatch.setattr(parallel, "_scored_in_pool",
                        lambda processes, *a: forks.append(processes) or real_pool(processes, *a))
    with StandIn(usage=True) as server:
        info = _run_info(tmp_path, f"rerank-api:{server.base}/rerank+model=m+batch_size=4"
                         "+concurrency=1@served", ["mmp:tf:length"], workers=2, batch_size=8)
    assert forks == [2]                                   # the batches went to two processes
    assert server.received > 2
    assert info["usage"]["served"] == {
        "requests": server.received, "retries": 0, "prompt_tokens": 7 * server.received,
        "completion_tokens": 0, "answers_with_usage": server.received}


@pytest.mark.parametrize("wrapper", ["listwise-of", "maxp"])
def test_a_wrapped_served_ranker_reports_its_requests(tmp_path, wrapper):
    from abnirml.report.listwise_section import usage_table

    probe = "tmp:append-query"
    with StandIn() as server:
        info = _run_info(tmp_path, f"{wrapper}:rerank-api:{server.base}/rerank+model=m@wrapped",
                         [probe])
    assert server.received > 0
    assert info["usage"]["wrapped"]["requests"] == server.received
    table = usage_table(info)
    assert table is not None and table.rows[0][:2] == ["wrapped", f"{server.received:,}"]


def test_the_program_prints_no_piece_of_a_key_a_server_quotes(tmp_path, key_env, capsys):
    from abnirml.cli import main

    prefix = "credentials rejected; the header we got reads as "
    with StandIn(api_key=KEY + "-rotated", quote_prefix=prefix) as server:
        code = main(["run", "--collection", "demo", "--ranker",
                     f"rerank-api:{server.base}/rerank+model=m+api_key_env={key_env}",
                     "--probe", "tmp:append-query", "--no-cache", "--quiet",
                     "--out", str(tmp_path / "out")])
    printed = capsys.readouterr()
    assert code == 2 and "answered HTTP 401" in printed.err
    assert not pieces_of_the_key(printed.out + printed.err)


def test_a_pickled_served_ranker_still_paces_and_scores():
    """A ranker sent to another process (Ray pickles it) gets a fresh pace of its own."""
    import pickle

    with StandIn(rate_limited=1, retry_after="0") as server:
        ranker = build_ranker(f"rerank-api:{server.base}/rerank+model=m", RankerEnv())
        copy = pickle.loads(pickle.dumps(ranker))
        assert copy.score([(QUERY, PASSAGES[1])]).tolist() == [4.0]
    assert copy.usage() == {"requests": 2, "retries": 1}
