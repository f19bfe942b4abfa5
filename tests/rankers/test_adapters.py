"""PyTerrier and HTTP adapters, against a fake transformer and a local HTTP server."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import numpy as np
import pytest

from abnirml.errors import ConfigError, ScoringError
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.rankers.families.adapters import wrap_pyterrier
from abnirml.rankers.registry import RankerEnv, build_ranker
from abnirml.rankers.support.cache import ScoreCache

PAIRS = [("cat food", "cat food for cats"), ("cat food", "a dog"), ("dogs", "a dog"),
         ("dogs", "dogs and dogs and more dogs")]


def overlap(query: str, text: str) -> float:
    """Known answer: query words found in the text, plus a length tie-breaker."""
    words = text.split()
    return sum(words.count(w) for w in query.split()) + 1 / (1 + len(words))


class FakeTransformer:
    """Behaves like a PyTerrier re-ranker: adds a score column and sorts by it."""

    def __init__(self, reverse: bool = True):
        self.reverse = reverse
        self.frames = []

    def transform(self, frame):
        self.frames.append(frame)
        out = frame.copy()
        out["score"] = [overlap(q, t) for q, t in zip(frame["query"], frame["text"],
                                                         strict=True)]
        return out.sort_values("score", ascending=not self.reverse)


def test_pyterrier_wrapper_joins_scores_back_by_qid_and_docno():
    pytest.importorskip("pandas")
    transformer = FakeTransformer()
    ranker = wrap_pyterrier(transformer, name="pyterrier:fake", version="1")
    scores = ranker.score(PAIRS + PAIRS[:1])
    np.testing.assert_allclose(scores, [overlap(q, t) for q, t in PAIRS + PAIRS[:1]])
    frame = transformer.frames[0]
    assert list(frame.columns) == ["qid", "query", "docno", "text"]
    assert len(frame) == 4                                  # the repeated pair sent once
    assert frame["qid"].nunique() == 2 and frame["docno"].nunique() == 3
    assert wrap_pyterrier(FakeTransformer(), version="2").fingerprint != ranker.fingerprint


def test_pyterrier_spec_imports_a_factory(monkeypatch):
    pytest.importorskip("pandas")
    module = types.ModuleType("fake_pt_models")
    module.reranker = lambda reverse="yes": FakeTransformer(reverse == "yes")
    monkeypatch.setitem(sys.modules, "fake_pt_models", module)
    ranker = build_ranker("pyterrier:fake_pt_models:reranker+reverse=no+version=3+batch_size=2",
                          RankerEnv())
    assert ranker.batch_size == 2 and ranker.transformer.reverse is False
    assert "reverse=no" in ranker.fingerprint and ranker.fingerprint.endswith("@3]")
    np.testing.assert_allclose(ranker.score(PAIRS), [overlap(q, t) for q, t in PAIRS])
    with pytest.raises(ConfigError, match="cannot import 'no_such_module_xyz'"):
        build_ranker("pyterrier:no_such_module_xyz:make", RankerEnv())
    with pytest.raises(ConfigError, match="no callable 'missing'"):
        build_ranker("pyterrier:fake_pt_models:missing", RankerEnv())
    with pytest.raises(ConfigError, match="expected pyterrier:<module>:<factory>"):
        build_ranker("pyterrier:fake_pt_models", RankerEnv())


def test_pyterrier_result_without_some_pairs_is_an_error():
    pytest.importorskip("pandas")

    class Dropping(FakeTransformer):
        def transform(self, frame):
            return super().transform(frame).iloc[1:]

    with pytest.raises(ScoringError, match=r"pyterrier:drop: .* no score for 1 of 4 pairs"):
        wrap_pyterrier(Dropping(), name="pyterrier:drop").score(PAIRS)


class _Handler(BaseHTTPRequestHandler):
    mode = "ok"
    batches: ClassVar[list[int]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        pairs = body["pairs"]
        type(self).batches.append(len(pairs))
        scores = [overlap(p["query"], p["text"]) for p in pairs]
        if self.mode == "slow":              # a model slower than +timeout: no headers yet
            time.sleep(1.5)
        if self.mode == "nan":
            scores[0] = None
        if self.mode == "error":
            self.send_response(500)
            self.end_headers()
            return
        payload = json.dumps({"scores": scores}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Handler.mode, _Handler.batches = "ok", []
    yield f"http://127.0.0.1:{httpd.server_address[1]}/score"
    httpd.shutdown()
    httpd.server_close()


def test_http_ranker_posts_batches_and_reads_scores(server):
    ranker = build_ranker(f"http:{server}+batch_size=3", RankerEnv())
    np.testing.assert_allclose(ranker.score(PAIRS), [overlap(q, t) for q, t in PAIRS])
    assert sorted(_Handler.batches) == [1, 3]      # two requests, in flight together
    assert build_ranker(server, RankerEnv()).url == server     # the URL alone works too
    assert build_ranker(f"http:{server}+version=2", RankerEnv()).fingerprint != \
        ranker.fingerprint


def test_http_failures_are_one_line_errors_naming_the_ranker(server):
    ranker = build_ranker(f"http:{server}", RankerEnv())
    _Handler.mode = "nan"
    with pytest.raises(ScoringError, match=f"ranker http:{server} returned 1 NaN"):
        Scorer(ScoreCache(None), progress=False).score(ranker, PAIRS)
    _Handler.mode = "error"
    with pytest.raises(ScoringError, match="answered HTTP 500"):
        ranker.score(PAIRS)
    # a port held by a socket that never listens: refused, and no other process can take it
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}/score"
        dead = build_ranker(f"http:{url}+timeout=2", RankerEnv())
        with pytest.raises(ScoringError) as err:
            dead.score(PAIRS)
    assert str(err.value).startswith(f"ranker http:{url}+timeout=2: cannot reach {url}")
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="not an http"):
        build_ranker("http:ftp://example.org/x", RankerEnv())


def test_http_server_slower_than_timeout_is_not_called_unreachable(server):
    """A server that accepts the request but answers after +timeout was reached: the error
    says it gave no answer in time (raise +timeout), not that it cannot be reached."""
    ranker = build_ranker(f"http:{server}+timeout=0.5", RankerEnv())
    _Handler.mode = "slow"
    with pytest.raises(ScoringError) as err:
        ranker.score(PAIRS)
    message = str(err.value)
    assert "cannot reach" not in message and "\n" not in message
    assert f"{server} gave no complete answer within 0.5 s (+timeout" in message


def _doc_score(fn):
    """A real ``pt.apply.doc_score`` transformer: one class, whatever ``fn`` computes."""
    pt = pytest.importorskip("pyterrier")
    return pt.apply.doc_score(fn)


def _length_scorer(sign: float):
    return _doc_score(lambda row: sign * len(row["text"]))


def test_two_wrapped_pyterrier_functions_never_share_cached_scores(tmp_path):
    """The same class with different functions (or closure values) gets different scores."""
    longer = wrap_pyterrier(_length_scorer(1.0), name="pt-a")
    shorter = wrap_pyterrier(_length_scorer(-1.0), name="pt-b")
    words = wrap_pyterrier(_doc_score(lambda row: float(len(row["text"].split()))), name="pt-c")
    assert len({longer.fingerprint, shorter.fingerprint, words.fingerprint}) == 3
    # Same code and closure: same scorer, so sharing is right.
    assert wrap_pyterrier(_length_scorer(1.0)).fingerprint == longer.fingerprint
    with ScoreCache(tmp_path / "cache.sqlite") as cache:
        scorer = Scorer(cache, progress=False)
        first = scorer.score(longer, PAIRS)
        second = scorer.score(shorter, PAIRS)
        third = scorer.score(words, PAIRS)
    lengths = np.array([len(t) for _, t in PAIRS], dtype=float)
    np.testing.assert_array_equal(first, lengths)
    np.testing.assert_array_equal(second, -lengths)
    np.testing.assert_array_equal(third, [len(t.split()) for _, t in PAIRS])
    assert scorer.reused == 0


class _Model:
    """Stands for a loaded model: nothing abnirml can read as data."""

    __slots__ = ("weight",)

    def __init__(self, weight: float):
        self.weight = weight


def test_unidentifiable_pyterrier_scorer_is_not_cached_and_warns_once(tmp_path):
    model = _Model(2.0)
    with pytest.warns(UserWarning, match="not cached; pass version") as caught:
        ranker = wrap_pyterrier(_doc_score(lambda row: model.weight * len(row["text"])),
                                name="pt-model")
    assert len(caught) == 1
    assert ranker.cacheable is False
    with ScoreCache(tmp_path / "cache.sqlite") as cache:
        scorer = Scorer(cache, progress=False)
        scorer.score(ranker, PAIRS)
        model.weight = -1.0          # the model changed behind the same object
        again = scorer.score(ranker, PAIRS)
        assert cache.count() == 0
    np.testing.assert_array_equal(again, [-len(t) for _, t in PAIRS])
    assert scorer.reused == 0
    # With a version the user vouches for the identity, so caching is allowed.
    assert wrap_pyterrier(_doc_score(lambda row: model.weight), version="v1").cacheable
