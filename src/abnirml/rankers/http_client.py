"""The one HTTP client every served ranker family uses (``http:``, ``rerank-api:``,
``rankgpt:``): a deadline per exchange, retries on rate limits, bounded concurrency, and a
count of what a run cost.

* **One deadline per exchange.** ``timeout`` bounds each whole request — connecting, the
  status line and headers, and the body — whatever phase it is in (:class:`_Watchdog`);
  answers over 64 MiB are refused.
* **Retries.** A server that answers 429 (rate limited) or 503 (overloaded) is asked again,
  after its ``Retry-After`` when it sends one, else after a growing, jittered pause, until
  ``retry_for`` seconds after the first try; a wait that would end past that deadline is not
  started, and the run stops with one line naming the status. Every other failure stops at
  once: retrying a wrong URL or a bad request only hides it.
* **Concurrency.** :meth:`HttpClient.map` keeps up to ``concurrency`` requests in flight
  (threads: the work is waiting on the server), answers in input order.
* **Usage.** :class:`Usage` counts requests, retries, and the ``prompt_tokens`` /
  ``completion_tokens`` a server reports in an OpenAI-style ``usage`` object, so run.json
  can say what a probe run cost on a paid API.
* **Tokens.** ``api_key_env`` names an environment variable holding a bearer token. It is
  read when a request is sent and lives only in that request's header: never in a spec,
  fingerprint, cache, file, pickled ranker or error message (any message that quotes a
  server's words has the token blanked out).
"""

from __future__ import annotations

import contextlib
import heapq
import json
import math
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from abnirml.errors import ConfigError, ScoringError
from abnirml.rankers.hf import first_line

T = TypeVar("T")
R = TypeVar("R")

MAX_HTTP_RESPONSE_BYTES = 64 * 2**20
"""An answer larger than this is refused (a 64-pair batch of scores is a few kB)."""
MAX_HTTP_TIMEOUT = 86_400.0
"""``+timeout`` above a day is refused: it is a typo, and timers cannot wait ~1e10 s."""
DEFAULT_TIMEOUT = 60.0
DEFAULT_CONCURRENCY = 8
DEFAULT_RETRY_FOR = 60.0
RETRY_STATUSES = frozenset({429, 503})
_FIRST_PAUSE = 0.25
_LONGEST_PAUSE = 8.0


@dataclass
class Usage:
    """What a served ranker asked of its server, summed over the run (thread-safe).

    ``requests`` counts every HTTP request sent, retries included; ``prompt_tokens`` and
    ``completion_tokens`` add up what answers reported (``reported`` of them did);
    ``replies``/``repaired`` are the listwise replies parsed and those that needed repair.
    """

    requests: int = 0
    retries: int = 0
    reported: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    replies: int = 0
    repaired: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for key, value in counts.items():
                setattr(self, key, getattr(self, key) + int(value))

    def add_reported(self, usage: object) -> None:
        """Add an OpenAI-style ``usage`` object's token counts (anything else is ignored)."""
        if not isinstance(usage, dict):
            return
        tokens = {}
        for key in ("prompt_tokens", "completion_tokens"):
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                tokens[key] = value
        if "prompt_tokens" not in tokens and isinstance(usage.get("total_tokens"), int):
            tokens["prompt_tokens"] = max(int(usage["total_tokens"]), 0)  # rerank APIs
        if tokens:
            self.add(reported=1, **tokens)

    def as_dict(self) -> dict[str, int]:
        """The counts run.json records (token counts only when a server reported them,
        reply counts only for listwise rankers)."""
        with self._lock:
            out = {"requests": self.requests, "retries": self.retries}
            if self.reported:
                out.update(prompt_tokens=self.prompt_tokens,
                           completion_tokens=self.completion_tokens,
                           answers_with_usage=self.reported)
            if self.replies:
                out.update(replies=self.replies, repaired=self.repaired)
            return out

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def checked_url(url: object, name: str) -> str:
    """``url`` if it is an http(s) URL naming a host, else a one-line ConfigError."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"ranker {name}: {url!r} is not an http:// or https:// URL")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise ConfigError(f"ranker {name}: {url!r} is not a valid URL ({exc})") from None
    if not parts.hostname:
        raise ConfigError(f"ranker {name}: {url!r} names no host")
    return url


def _checked_seconds(value: object, name: str, key: str, low_open: bool) -> float:
    ok = (not isinstance(value, bool) and isinstance(value, (int, float))
          and (value > 0 if low_open else value >= 0) and value <= MAX_HTTP_TIMEOUT)
    if not ok:
        bound = "above 0" if low_open else "at least 0"
        raise ConfigError(f"ranker {name}: {key} must be a number of seconds {bound} "
                          f"and at most {MAX_HTTP_TIMEOUT:g} (found {value!r})")
    return float(value)  # type: ignore[arg-type]


class HttpClient:
    """POSTs JSON to one URL for the ranker ``name`` (see the module docstring)."""

    def __init__(self, url: str, name: str, *, timeout: float = DEFAULT_TIMEOUT,
                 retry_for: float = DEFAULT_RETRY_FOR, concurrency: int = DEFAULT_CONCURRENCY,
                 api_key_env: str | None = None):
        self.url = checked_url(url, name)
        self.name = name
        self.timeout = _checked_seconds(timeout, name, "timeout", low_open=True)
        self.retry_for = _checked_seconds(retry_for, name, "retry_for", low_open=False)
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"ranker {name}: concurrency must be a whole number ≥ 1 "
                              f"(found {concurrency!r})")
        self.concurrency = concurrency
        self.api_key_env = api_key_env or None
        if self.api_key_env is not None and not os.environ.get(self.api_key_env):
            raise ConfigError(f"ranker {name}: environment variable {self.api_key_env} "
                              "(+api_key_env) is not set; it must hold the API key")
        self.usage = Usage()
        self._pause = random.Random()

    # -- requests ------------------------------------------------------------------------

    def post_json(self, payload: Any) -> Any:
        """POST ``payload`` as JSON and return the decoded JSON answer (retrying 429/503);
        an answer's ``usage`` object, if any, is added to :attr:`usage`."""
        body = json.dumps(payload, allow_nan=False).encode()
        raw = self._exchange_retrying(body)
        try:
            answer = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            # Broken JSON, numbers longer than Python's digit limit, or nesting deep enough
            # to exhaust the parser's recursion all mean the same thing to the user.
            raise ScoringError(f"ranker {self.name}: {self.url} did not answer valid JSON "
                               "(or nested it too deeply)") from None
        if isinstance(answer, dict):
            self.usage.add_reported(answer.get("usage"))
        return answer

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[fn(item) for item in items]`` with up to ``concurrency`` calls at once, in
        input order; the first failure stops the rest (those not started never start)."""
        if self.concurrency == 1 or len(items) <= 1:
            return [fn(item) for item in items]
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(items)),
                                  thread_name_prefix="abnirml-http")
        try:
            futures = [pool.submit(fn, item) for item in items]
            results = [f.result() for f in futures]
        except BaseException:
            # A failure or Ctrl-C: requests not started never start, and the caller does not
            # wait for those in flight (each ends by its own +timeout).
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return results

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env is not None:
            token = os.environ.get(self.api_key_env, "")
            if not token:
                raise ScoringError(f"ranker {self.name}: environment variable "
                                   f"{self.api_key_env} (+api_key_env) is no longer set")
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _exchange_retrying(self, body: bytes) -> bytes:
        deadline = time.monotonic() + self.retry_for
        attempt = 0
        while True:
            self.usage.add(requests=1, retries=1 if attempt else 0)
            status, result = self._exchange(body)
            if status is None:
                return result  # type: ignore[return-value]
            error, wait = result  # type: ignore[misc]
            if status not in RETRY_STATUSES:
                raise error
            pause = wait if wait is not None else self._backoff(attempt)
            left = deadline - time.monotonic()
            if pause > left:
                told = "" if wait is None else f", Retry-After {wait:g} s"
                raise ScoringError(f"{error} (tried {attempt + 1} time(s){told}; no answer "
                                   f"within {self.retry_for:g} s: +retry_for)")
            time.sleep(pause)
            attempt += 1

    def _backoff(self, attempt: int) -> float:
        base = min(_FIRST_PAUSE * 2 ** attempt, _LONGEST_PAUSE)
        return base * (0.5 + 0.5 * self._pause.random())

    def _exchange(self, body: bytes) -> tuple[int | None, Any]:
        """One POST within ``timeout``: ``(None, bytes)`` on success, else ``(status,
        (ScoringError, Retry-After seconds or None))`` — status 0 for failures that are
        not an HTTP status."""
        import http.client

        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers=self._headers())
        with _Watchdog(self.timeout) as watchdog:
            try:
                with _opener().open(request, timeout=self.timeout) as response:
                    raw = self._read_body(response)
            except urllib.error.HTTPError as exc:
                if watchdog.expired:
                    return 0, (self._late(), None)
                reason = self._scrub(" ".join(str(exc.reason or "").split())[:80])
                wait = retry_after(exc.headers.get("Retry-After") if exc.headers else None)
                with contextlib.suppress(Exception):
                    exc.close()
                error = ScoringError(f"ranker {self.name}: {self.url} answered HTTP "
                                     f"{exc.code} {reason}".rstrip())
                return int(exc.code), (error, wait)
            except ScoringError as exc:
                return 0, (exc, None)
            except (urllib.error.URLError, OSError, http.client.HTTPException,
                    ValueError) as exc:
                if watchdog.expired or _is_timeout(exc):
                    # Reached, but slower than +timeout (a big batch on a slow model): saying
                    # "cannot reach" would send the user looking for a network problem.
                    return 0, (self._late(), None)
                return 0, (self._failure(exc), None)
            if watchdog.expired:      # the shut-down socket looked like the end of the answer
                return 0, (self._late(), None)
        return None, raw

    def _scrub(self, text: str) -> str:
        """``text`` with the API token blanked out (a server may quote the header back)."""
        if self.api_key_env is not None:
            token = os.environ.get(self.api_key_env, "")
            if token:
                text = text.replace(token, "***")
        return text

    def _failure(self, exc: BaseException) -> ScoringError:
        import http.client

        if isinstance(exc, urllib.error.URLError):
            return ScoringError(f"ranker {self.name}: cannot reach {self.url} "
                                f"({self._scrub(_reason(exc.reason)[:120])})")
        if isinstance(exc, (http.client.HTTPException, ValueError)):
            detail = self._scrub(f"{type(exc).__name__}: {first_line(exc)}"[:120])
            return ScoringError(f"ranker {self.name}: {self.url} did not answer valid HTTP "
                                f"({detail})")
        return ScoringError(f"ranker {self.name}: cannot reach {self.url} "
                            f"({self._scrub(first_line(exc)[:120])})")

    def _late(self) -> ScoringError:
        return ScoringError(f"ranker {self.name}: {self.url} gave no complete answer "
                            f"within {self.timeout:g} s (+timeout)")

    def _read_body(self, response: Any) -> bytes:
        """Read at most ``MAX_HTTP_RESPONSE_BYTES`` (the watchdog bounds the time)."""
        parts: list[bytes] = []
        size = 0
        while True:
            chunk = response.read1(65536)
            if not chunk:
                return b"".join(parts)
            size += len(chunk)
            if size > MAX_HTTP_RESPONSE_BYTES:
                raise ScoringError(f"ranker {self.name}: {self.url} answered more than "
                                   f"{MAX_HTTP_RESPONSE_BYTES // 2**20} MiB; refusing it")
            parts.append(chunk)


def retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (a number of seconds or an HTTP date),
    or None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value.strip())
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        import datetime

        return max((when - datetime.datetime.now(datetime.UTC)).total_seconds(), 0.0)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


class _Deadlines:
    """One daemon thread that fires callbacks at deadlines: a watchdog per request without
    a timer thread per request (starting a thread per request costs more than a loopback
    exchange)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._live: set[int] = set()
        self._condition = threading.Condition()
        self._counter = 0
        self._thread: threading.Thread | None = None

    def add(self, seconds: float, callback: Callable[[], None]) -> int:
        with self._condition:
            self._counter += 1
            self._live.add(self._counter)
            heapq.heappush(self._heap, (time.monotonic() + seconds, self._counter, callback))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="abnirml-http-deadlines")
                self._thread.start()
            self._condition.notify()
            return self._counter

    def cancel(self, handle: int) -> None:
        with self._condition:
            self._live.discard(handle)

    def _run(self) -> None:
        while True:
            with self._condition:
                while self._heap and self._heap[0][1] not in self._live:
                    heapq.heappop(self._heap)          # cancelled: its request ended
                if not self._heap:
                    self._condition.wait()
                    continue
                when, handle, callback = self._heap[0]
                if when > time.monotonic():
                    self._condition.wait(when - time.monotonic())
                    continue
                heapq.heappop(self._heap)
                self._live.discard(handle)
            callback()


_DEADLINES = _Deadlines()


class _Watchdog:
    """Ends an HTTP exchange at a deadline, whatever phase it is in.

    A socket timeout bounds each read, not the whole answer: a server sending one header
    byte a second (or a TLS handshake as slowly) would keep a request alive forever. The
    watchdog keeps a duplicate of every socket the request opens and, when the deadline
    passes, shuts the connection down through it — which ends a blocked read on the original
    at once, even after TLS has taken the original over — and the caller, seeing
    :attr:`expired`, reports the timeout. (Name resolution happens before a socket exists
    and is left to the system resolver's own timeout.) The request's thread names its
    watchdog in :data:`_CURRENT`, where the shared opener's connections find it.
    """

    def __init__(self, seconds: float):
        self.expired = False
        self.seconds = seconds
        self._duplicates: list[socket.socket] = []
        self._lock = threading.Lock()
        self._handle = 0

    def __enter__(self) -> _Watchdog:
        self._handle = _DEADLINES.add(self.seconds, self._expire)
        _CURRENT.watchdog = self
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.watchdog = None
        _DEADLINES.cancel(self._handle)
        with self._lock:
            for duplicate in self._duplicates:
                duplicate.close()
            self._duplicates.clear()

    def watch(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            duplicate = sock.dup()
            self._duplicates.append(duplicate)
            if self.expired:
                _shut(duplicate)
        return sock

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for duplicate in self._duplicates:
                _shut(duplicate)


_CURRENT = threading.local()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):      # already closed: nothing left to interrupt
        sock.shutdown(socket.SHUT_RDWR)


def _watched(connection: Any) -> None:
    """Make ``connection`` report every socket it opens to its thread's watchdog as soon
    as the TCP socket exists, before any TLS handshake."""
    create = connection._create_connection

    def create_watched(*args: Any, **kwargs: Any) -> socket.socket:
        sock = create(*args, **kwargs)
        watchdog = getattr(_CURRENT, "watchdog", None)
        return sock if watchdog is None else watchdog.watch(sock)

    connection._create_connection = create_watched


_OPENER: urllib.request.OpenerDirector | None = None
_OPENER_LOCK = threading.Lock()


def _opener() -> urllib.request.OpenerDirector:
    """urllib's opener (proxies, redirects), built once, whose connections report to the
    calling thread's watchdog."""
    global _OPENER
    with _OPENER_LOCK:
        if _OPENER is not None:
            return _OPENER
        import http.client

        class WatchedHTTP(http.client.HTTPConnection):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                _watched(self)

        class WatchedHTTPS(http.client.HTTPSConnection):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                _watched(self)

        class HTTPHandler(urllib.request.HTTPHandler):
            def http_open(self, req):
                return self.do_open(WatchedHTTP, req)

        class HTTPSHandler(urllib.request.HTTPSHandler):
            def https_open(self, req):
                return self.do_open(WatchedHTTPS, req, context=self._context)

        _OPENER = urllib.request.build_opener(HTTPHandler(), HTTPSHandler())
        return _OPENER


def _reason(reason: object) -> str:
    """A URLError's reason (an exception or a string) as one line."""
    if isinstance(reason, BaseException):
        return first_line(reason)
    lines = str(reason).strip().splitlines()
    return lines[0] if lines else "unknown reason"


def _is_timeout(exc: BaseException) -> bool:
    reason = getattr(exc, "reason", None)
    return isinstance(exc, TimeoutError) or isinstance(reason, TimeoutError)


def json_number(value: object, name: str, url: str, what: str = "score") -> float:
    """A JSON number as a float (null becomes NaN, refused later by the score checks);
    strings and booleans are one-line errors."""
    if value is None:
        return float("nan")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScoringError(f"ranker {name}: {url} returned a non-numeric {what} "
                           f"{str(value)[:40]!r}; scores must be JSON numbers")
    try:
        return float(value)
    except OverflowError:
        raise ScoringError(f"ranker {name}: {url} returned a {what} too large "
                           "for a float") from None
