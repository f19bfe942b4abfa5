"""Loopback stand-ins for served rerankers: a rerank API, OpenAI-style chat completions and
abnirml's own ``http:`` shape, on 127.0.0.1 with a port the system picks.

``StandIn(...)`` is a context manager: it serves from a thread while open and shuts the
server down on exit. What it answers:

* ``POST …/rerank`` (Cohere shape, or TEI's ``{"query", "texts"}``): each document's
  relevance is the number of times the query's words occur in it (:func:`term_count`);
* ``POST …/chat/completions``: a RankGPT ranking of the ``[i] text`` passages found in the
  user messages for the query after ``Search Query:`` — sorted by :func:`term_count` (ties in
  input order) with ``reply="sort"``, the input order with ``reply="echo"``, or the next of
  ``replies`` (canned text) when given; with ``usage`` it reports token counts;
* ``POST …/score``: ``{"scores": [term_count, …]}``;
* any other path: 404; with ``raw`` every request that gets this far is answered that text.

``rate_limited=N`` answers the first N requests 429 with ``Retry-After: retry_after``;
``latency`` delays every answer (a delay that ends when the stand-in closes, so a test never
waits for it); ``fail_request=N`` answers the N-th request (counted from 1) ``fail_status``
at once, without the latency; ``api_key`` makes every request without ``Authorization:
Bearer <api_key>`` fail with 401 — quoting the header it got after ``quote_prefix``, as a
careless server might; refusals (429, 401) come at once, before the latency;
``redirects`` maps a path to the ``Location`` it is redirected to with ``redirect_status``.
Every request's decoded body is kept in :attr:`StandIn.requests`, its headers in
:attr:`StandIn.headers` and its arrival time (``time.monotonic()``) in :attr:`arrivals`
(GET requests too, then answered 405), each 429's time in :attr:`refusals`;
:attr:`most_in_flight` is the largest number of requests it was answering at once.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$")
_QUERY = re.compile(r"Search Query: (.*)\.\n")


def term_count(query: str, text: str) -> int:
    """How often the query's words occur in the text (case-folded, split on whitespace)."""
    words = text.lower().split()
    return sum(words.count(w) for w in query.lower().split())


def prompt_parts(messages: Sequence[dict[str, str]]) -> tuple[str, list[str]]:
    """The query and the passages (in identifier order) of a RankGPT-style conversation."""
    passages: dict[int, str] = {}
    query = ""
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message["content"]
        for line in content.split("\n"):
            match = _PASSAGE.match(line)
            if match:
                passages[int(match.group(1))] = match.group(2)
        found = _QUERY.search(content + "\n")
        if found:
            query = found.group(1)
    return query, [passages[i] for i in sorted(passages)]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64       # the listen backlog: several clients connect at once


class StandIn:
    def __init__(self, *, reply: str = "sort", replies: Sequence[str] = (),
                 rate_limited: int = 0, retry_after: str | None = "0",
                 status: int = 429, latency: float = 0.0, usage: bool = False,
                 api_key: str | None = None, fail_request: int | None = None,
                 fail_status: int = 500, redirects: dict[str, str] | None = None,
                 redirect_status: int = 307, quote_prefix: str = "bad credentials ",
                 raw: str | None = None):
        self.reply = reply
        self.replies = list(replies)
        self.rate_limited = rate_limited
        self.retry_after = retry_after
        self.status = status
        self.latency = latency
        self.usage = usage
        self.api_key = api_key
        self.fail_request = fail_request
        self.fail_status = fail_status
        self.redirects = dict(redirects or {})
        self.redirect_status = redirect_status
        self.quote_prefix = quote_prefix
        self.raw = raw
        self.refusals: list[float] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.arrivals: list[float] = []
        self.received = 0
        self._closing = threading.Event()
        self.refused = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()
        self._server: _Server | None = None

    @property
    def base(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> StandIn:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                stand_in._handle(self)

            def do_GET(self) -> None:         # recorded, then refused: only POST is served
                stand_in._handle(self)

            def log_message(self, *args: object) -> None:
                pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    # -- answering --------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        answered = threading.Event()

        def answering() -> None:
            # a request stops counting as in flight before its answer is written: the client
            # can only send its next one after reading this answer, so the count never
            # depends on which of the two server threads the machine runs first
            if not answered.is_set():
                answered.set()
                with self._lock:
                    self.in_flight -= 1

        handler.answering = answering          # type: ignore[attr-defined]
        try:
            self._answer(handler)
        finally:
            answering()

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        with self._lock:
            self.received += 1
            number = self.received
            self.headers.append(dict(handler.headers.items()))
            self.arrivals.append(time.monotonic())
        if handler.command != "POST":
            self._send(handler, 405, b"")
            return
        body = json.loads(raw)
        if number == self.fail_request:
            self._send(handler, self.fail_status, b"")
            return
        if handler.path in self.redirects:
            self._send(handler, self.redirect_status, b"",
                       headers={"Location": self.redirects[handler.path]})
            return
        if self.api_key is not None:
            got = handler.headers.get("Authorization", "")
            if got != f"Bearer {self.api_key}":
                self._send(handler, 401, b"", reason=f"{self.quote_prefix}{got}")
                return
        with self._lock:
            limited = self.refused < self.rate_limited
            if limited:
                self.refused += 1
                self.refusals.append(time.monotonic())
            else:
                self.requests.append(body)
        if limited:
            headers = {} if self.retry_after is None else {"Retry-After": self.retry_after}
            self._send(handler, self.status, b"", headers=headers)
            return
        if self.latency:        # refusals come at once, as a rate limiter's do
            self._closing.wait(self.latency)
        path = handler.path
        if self.raw is not None:
            self._send(handler, 200, self.raw.encode())
            return
        if path.endswith("/rerank"):
            answer: Any = self._rerank(body)
        elif path.endswith("/chat/completions"):
            answer = self._chat(body)
        elif path.endswith("/score"):
            answer = {"scores": [term_count(p["query"], p["text"]) for p in body["pairs"]]}
        else:
            self._send(handler, 404, b"")
            return
        self._send(handler, 200, json.dumps(answer).encode())

    def _rerank(self, body: dict[str, Any]) -> Any:
        if "texts" in body:                     # TEI's own route
            return [{"index": i, "score": term_count(body["query"], t)}
                    for i, t in reversed(list(enumerate(body["texts"])))]
        results = [{"index": i, "relevance_score": term_count(body["query"], d)}
                   for i, d in enumerate(body["documents"])]
        results.sort(key=lambda r: -r["relevance_score"])
        answer: dict[str, Any] = {"results": results}
        if self.usage:
            answer["usage"] = {"total_tokens": 7}
        return answer

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        query, passages = prompt_parts(body["messages"])
        with self._lock:
            canned = self.replies.pop(0) if self.replies else None
        if canned is not None:
            text = canned
        else:
            order = list(range(len(passages)))
            if self.reply == "sort":
                order.sort(key=lambda i: -term_count(query, passages[i]))
            text = " > ".join(f"[{i + 1}]" for i in order)
        answer: dict[str, Any] = {"choices": [{"index": 0, "message": {
            "role": "assistant", "content": text}, "finish_reason": "stop"}]}
        if self.usage:
            answer["usage"] = {"prompt_tokens": 100, "completion_tokens": 20,
                               "total_tokens": 120}
        return answer

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, code: int, payload: bytes,
              headers: dict[str, str] | None = None, reason: str | None = None) -> None:
        answering = getattr(handler, "answering", None)
        if answering is not None:
            answering()
        handler.send_response(code, reason)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(payload)
