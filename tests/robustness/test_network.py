"""The HTTP ranker against hostile servers: every misbehaviour is one located error, in time.

Each test starts a raw TCP server on the loopback interface in a thread that answers with
exactly the bytes under test, so malformed HTTP (which http.server would never send) can be
tried. Every exchange is bounded: the ranker's own ``+timeout`` and the server's socket
timeouts, so a regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from abnirml.errors import ConfigError, ScoringError
from abnirml.rankers.registry import RankerEnv, build_ranker

Behaviour = Callable[[socket.socket], None]


def _read_request(conn: socket.socket) -> None:
    """Consume one request (headers and a Content-Length body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        rest += chunk


@pytest.fixture
def serve() -> Iterator[Callable[[Behaviour], str]]:
    """``serve(behaviour)`` → a URL whose every connection gets ``behaviour(conn)``, after
    the request has been read (or at once, for a behaviour marked ``before_request``)."""
    listeners: list[socket.socket] = []
    stop = threading.Event()

    def start(behaviour: Behaviour) -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        listener.settimeout(0.2)
        listeners.append(listener)

        def loop() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except (TimeoutError, OSError):
                    continue
                conn.settimeout(10)
                try:
                    if not getattr(behaviour, "before_request", False):
                        _read_request(conn)
                    behaviour(conn)
                except OSError:
                    pass
                finally:
                    conn.close()

        threading.Thread(target=loop, daemon=True).start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}/score"

    yield start
    stop.set()
    for listener in listeners:
        listener.close()


def _answer(raw: bytes) -> Behaviour:
    return lambda conn: conn.sendall(raw)


def _score(url: str, timeout: float = 5) -> None:
    ranker = build_ranker(f"http:{url}+timeout={timeout:g}", RankerEnv())
    ranker.score([("a query", "a text")])


def _fails_located(url: str, pattern: str, timeout: float = 5) -> str:
    with pytest.raises(ScoringError) as err:
        _score(url, timeout)
    message = str(err.value)
    assert message.startswith(f"ranker http:{url}"), message
    assert "\n" not in message
    assert pattern in message, message
    return message


GOOD_BODY = b'{"scores": [1.5]}'

#: the trickling servers send one byte every TRICKLE_GAP_S seconds, TRICKLE_BYTES of them:
#: without the deadline an answer would take the whole TRICKLE_S (sleeps never end early),
#: so a call ended sooner was ended by the deadline, however loaded the machine
TRICKLE_BYTES = 200
TRICKLE_GAP_S = 0.1
TRICKLE_S = TRICKLE_BYTES * TRICKLE_GAP_S


def test_a_well_behaved_server_is_scored(serve):
    url = serve(_answer(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                        % (len(GOOD_BODY), GOOD_BODY)))
    ranker = build_ranker(f"http:{url}+timeout=5", RankerEnv())
    assert ranker.score([("q", "d")]).tolist() == [1.5]


def test_trickled_headers_meet_the_deadline(serve):
    """One header byte every 0.1 s never trips a per-read timeout; the deadline ends it."""
    def trickle(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        for _ in range(TRICKLE_BYTES):
            conn.sendall(b"X")
            time.sleep(TRICKLE_GAP_S)

    url = serve(trickle)
    started = time.monotonic()
    _fails_located(url, "gave no complete answer within 1 s (+timeout)", timeout=1)
    assert time.monotonic() - started < TRICKLE_S


def test_trickled_body_meets_the_deadline(serve):
    def trickle(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        for _ in range(TRICKLE_BYTES):
            conn.sendall(b" ")
            time.sleep(TRICKLE_GAP_S)

    url = serve(trickle)
    started = time.monotonic()
    _fails_located(url, "within 1 s (+timeout)", timeout=1)
    assert time.monotonic() - started < TRICKLE_S


@pytest.mark.parametrize(("raw", "what"), [
    (b"HTTP/1.1 OK-ish\r\n\r\n", "malformed status line"),
    (b"NONSENSE\r\n\r\n", "not HTTP at all"),
    (b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n", "over-long header line"),
    (b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(150)) + b"\r\n",
     "more than 100 headers"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
     "bad chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "truncated chunk"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"scores\"", "short body"),
])
def test_malformed_http_is_one_line(serve, raw, what):
    message = _fails_located(serve(_answer(raw)), "")
    assert "did not answer valid HTTP" in message or "valid JSON" in message, (what, message)


def test_an_http_error_status_is_named(serve):
    url = serve(_answer(b"HTTP/1.1 500 Broken\r\nContent-Length: 0\r\n\r\n"))
    _fails_located(url, "answered HTTP 500 Broken")


def test_a_server_busy_past_the_retry_deadline_is_named(serve):
    """503 is tried again with growing pauses, then named once +retry_for has passed."""
    url = serve(_answer(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n"))
    ranker = build_ranker(f"http:{url}+timeout=5+retry_for=1", RankerEnv())
    started = time.monotonic()
    with pytest.raises(ScoringError) as err:
        ranker.score([("a query", "a text")])
    message = str(err.value)
    assert message.startswith(f"ranker http:{url}+timeout=5+retry_for=1: ") and "\n" not in message
    assert "answered HTTP 503 Busy" in message and "within 1 s: +retry_for" in message
    assert ranker.usage()["retries"] >= 1
    assert time.monotonic() - started < 5


def test_a_closed_connection_is_one_line(serve):
    url = serve(lambda conn: None)
    _fails_located(url, "")


@pytest.mark.parametrize("spec", [
    "http:http://127.0.0.1:9/score+timeout=1e10",
    "http:http://127.0.0.1:9/score+timeout=10000000000",
    "http:http://127.0.0.1:9/score+timeout=86401",
])
def test_an_absurd_timeout_is_refused_up_front(spec):
    with pytest.raises(ConfigError, match="timeout"):
        build_ranker(spec, RankerEnv())


@pytest.mark.parametrize("url", ["http://[::1/x", "http://host:port/x", "http:///x"])
def test_an_invalid_url_is_refused_up_front(url):
    with pytest.raises(ConfigError) as err:
        build_ranker(f"http:{url}", RankerEnv())
    assert "\n" not in str(err.value)


def test_the_python_api_refuses_a_huge_timeout():
    from abnirml.rankers.families.adapters import HttpRanker

    with pytest.raises(ConfigError, match="at most 86400"):
        HttpRanker("http://127.0.0.1:9/x", "svc", timeout=1e10)


def test_a_trickled_tls_handshake_meets_the_deadline(serve):
    """A TLS record header announcing 16,000 bytes, then one byte every 0.1 s: the
    handshake never completes and no single read times out; the deadline ends it."""
    def trickle_tls(conn: socket.socket) -> None:
        conn.sendall(bytes([0x16, 0x03, 0x03, 0x3E, 0x80]))
        for _ in range(TRICKLE_BYTES):
            conn.sendall(b"\x00")
            time.sleep(TRICKLE_GAP_S)

    trickle_tls.before_request = True
    url = serve(trickle_tls).replace("http://", "https://")
    started = time.monotonic()
    _fails_located(url, "within 1 s (+timeout)", timeout=1)
    assert time.monotonic() - started < TRICKLE_S
