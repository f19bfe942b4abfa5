"""The one HTTP client every served ranker family uses (``http:``, ``rerank-api:``,
``rankgpt:``): a deadline per exchange, retries on rate limits, bounded concurrency, and a
count of what a run cost.

* **One deadline per exchange.** ``timeout`` bounds each whole request — connecting, the
  status line and headers, and the body — whatever phase it is in (:class:`_Watchdog`);
  answers over 64 MiB are refused.
* **Retries that never hammer.** A server that answers 429 (rate limited) or 503
  (overloaded) is asked again after a pause: at least its ``Retry-After`` and at least a
  floor that doubles with each refusal in a row (0.25 s, 0.5 s, … up to 8 s, each with
  random jitter), so ``Retry-After: 0`` or a date in the past is no licence to retry at full
  speed. The pause holds back every thread of the client, not only the refused one: the
  server is asked to slow down, not one request. Refusals of requests that were in flight
  together count once. Retries stop ``retry_for`` seconds after a request's first try; a
  wait that would end past that deadline is not started, and the run stops with one line
  naming the status. Every other failure stops at once: retrying a wrong URL or a bad
  request only hides it.
* **Concurrency, and an end that never waits.** :meth:`HttpClient.map` keeps up to
  ``concurrency`` requests in flight (daemon threads: the work is waiting on the server),
  answers in input order. The first failure, or a Ctrl-C, stops it at once: requests not
  started never start, the connections of those in flight are shut down, retries waiting
  stop, and no thread is left for the interpreter to wait for at exit.
* **Redirects.** 307 and 308 (which keep the method and body) are followed within the
  server's own origin, and to another origin only when no key is sent; 301, 302 and 303
  (which would turn the POST into a GET without its body) and a redirect of a request with
  a key to another origin stop with one line naming where the server points, so the user
  can give that URL — a key is never sent anywhere but where the user pointed it.
* **Usage.** :class:`Usage` counts requests, retries, and the ``prompt_tokens`` /
  ``completion_tokens`` a server reports in an OpenAI-style ``usage`` object, so run.json
  can say what a probe run cost on a paid API.
* **Keys.** ``api_key_env`` names an environment variable holding a bearer token. It is
  read when a request is sent and lives only in that request's header: never in a spec,
  fingerprint, cache, file, pickled ranker or error message. A key that is not one line of
  printable ASCII (a carriage return from a file saved with Windows line endings, a space,
  a letter outside ASCII) is refused in one line that does not quote it; a valid one is
  registered with :func:`abnirml.errors.register_secret`, so every message that quotes a
  server's words has it — and any 10-character piece of it — blanked out.
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
from dataclasses import dataclass, field
from typing import Any, TypeVar

from abnirml.errors import AbnirmlError, ConfigError, ScoringError, redact, register_secret
from abnirml.rankers.support.hf import first_line

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
FIRST_PAUSE = 0.25
"""The shortest pause after a refusal, whatever ``Retry-After`` says; it doubles with each
refusal in a row."""
LONGEST_PAUSE = 8.0
"""The floor stops doubling here (a ``Retry-After`` may still ask for longer)."""
FOLLOWED_REDIRECTS = frozenset({307, 308})


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

    def counts(self) -> dict[str, int]:
        """Every count as it stands (what :meth:`add` takes back)."""
        with self._lock:
            return {key: getattr(self, key) for key in _USAGE_COUNTS}

    def since(self, before: dict[str, int]) -> dict[str, int]:
        """What was counted after :meth:`counts` returned ``before`` (only what grew)."""
        now = self.counts()
        return {key: now[key] - before.get(key, 0) for key in _USAGE_COUNTS
                if now[key] > before.get(key, 0)}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


_USAGE_COUNTS = ("requests", "retries", "reported", "prompt_tokens", "completion_tokens",
                 "replies", "repaired")


def usage_counter(ranker: object) -> Usage | None:
    """The :class:`Usage` a ranker counts its requests in (``usage_counter``; a wrapper
    such as ``listwise-of:`` hands on its wrapped ranker's), or None. Worker processes
    (``--workers``) send back what they added to it, so the run's counts hold every
    request whichever process sent it."""
    counter = getattr(ranker, "usage_counter", None)
    return counter if isinstance(counter, Usage) else None


class CountsUsage:
    """What a served ranker shows of its :class:`HttpClient`'s counts: ``usage()`` for
    run.json and the ``usage_counter`` that :func:`usage_counter` finds (mixed into each
    served family, whose ``client`` it reads)."""

    client: HttpClient

    def usage(self) -> dict[str, int]:
        """Requests, retries, reported tokens and repaired replies so far (for run.json)."""
        return self.client.usage.as_dict()

    @property
    def usage_counter(self) -> Usage:
        return self.client.usage


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


def checked_key(value: str, variable: str, name: str,
                error: type[AbnirmlError] = ConfigError) -> str:
    """``value`` when it can be sent as a bearer token (one line of printable ASCII, no
    spaces), else ``error`` in one line that says what is wrong and where, never the key."""
    for position, char in enumerate(value, 1):
        if "!" <= char <= "~":
            continue
        what = {"\r": "a carriage return", "\n": "a line feed", " ": "a space",
                "\t": "a tab"}.get(char)
        if what is None:
            what = "a control character" if ord(char) < 32 or ord(char) == 127 else \
                "a non-ASCII character"
        hint = ""
        if char in "\r\n" and not value[position:].strip():
            hint = " (the line ending of the file it was read from?)"
        raise error(f"ranker {name}: the API key in environment variable {variable} "
                    f"(+api_key_env) holds {what} at character {position} of {len(value)}"
                    f"{hint}; a key is one line of printable ASCII without spaces")
    return value


class HttpClient:
    """POSTs JSON to one URL for the ranker ``name`` (see the module docstring).

    ``not_found_hint``, when given, is added to the error for a 404 or 405 answer: what the
    URL should have looked like (a family that posts to the URL exactly as given says so).
    """

    def __init__(self, url: str, name: str, *, timeout: float = DEFAULT_TIMEOUT,
                 retry_for: float = DEFAULT_RETRY_FOR, concurrency: int = DEFAULT_CONCURRENCY,
                 api_key_env: str | None = None, not_found_hint: str = ""):
        self.url = checked_url(url, name)
        self.name = name
        self.timeout = _checked_seconds(timeout, name, "timeout", low_open=True)
        self.retry_for = _checked_seconds(retry_for, name, "retry_for", low_open=False)
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"ranker {name}: concurrency must be a whole number ≥ 1 "
                              f"(found {concurrency!r})")
        self.concurrency = concurrency
        self.api_key_env = api_key_env or None
        if self.api_key_env is not None:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ConfigError(f"ranker {name}: environment variable {self.api_key_env} "
                                  "(+api_key_env) is not set; it must hold the API key")
            register_secret(checked_key(key, self.api_key_env, name))
        self.not_found_hint = not_found_hint
        self.usage = Usage()
        self._throttle = _Throttle()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_throttle"] = None         # a lock and a moment in this process's clock
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._throttle = _Throttle()

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
        input order. The first failure (or a Ctrl-C) ends it at once: calls not started
        never start, requests in flight are cut off, and the failure is raised with any
        secret blanked out of its message."""
        if self.concurrency == 1 or len(items) <= 1:
            try:
                return [fn(item) for item in items]
            except AbnirmlError as exc:
                raise _redacted(exc) from None
        job = _Job(fn, items)
        threads = [threading.Thread(target=job.work, daemon=True, name="abnirml-http")
                   for _ in range(min(self.concurrency, len(items)))]
        for thread in threads:
            thread.start()
        try:
            while not job.finished.wait(0.5):
                pass
        except BaseException:
            job.cancel()             # Ctrl-C: nothing left running that anyone waits for
            raise
        if job.failure is not None:
            failure = job.failure
            job.failure = None
            if isinstance(failure, AbnirmlError):
                raise _redacted(failure) from None
            raise failure
        return job.results

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env is not None:
            token = os.environ.get(self.api_key_env, "")
            if not token:
                raise ScoringError(f"ranker {self.name}: environment variable "
                                   f"{self.api_key_env} (+api_key_env) is no longer set")
            register_secret(checked_key(token, self.api_key_env, self.name, ScoringError))
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _exchange_retrying(self, body: bytes) -> bytes:
        deadline = time.monotonic() + self.retry_for
        attempt = 0
        while True:
            self._throttle.wait_turn(deadline, self.retry_for)
            _stop_if_cancelled()
            streak = self._throttle.streak_id
            self.usage.add(requests=1, retries=1 if attempt else 0)
            status, result = self._exchange(body)
            _stop_if_cancelled()
            if status is None:
                self._throttle.answered()
                answer: bytes = result
                return answer
            error, wait = result
            if status not in RETRY_STATUSES:
                raise error
            attempt += 1
            self._throttle.refused(streak, wait, error, attempt)
            self._throttle.check_deadline(deadline, self.retry_for)

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
            except _RefusedRedirect as exc:
                return 0, (self._error(f"{self.url} redirected the request (HTTP {exc.code}) "
                                       f"to {exc.target[:200]}; {exc.why}"), None)
            except urllib.error.HTTPError as exc:
                if watchdog.expired:
                    return 0, (self._late(), None)
                reason = " ".join(str(exc.reason or "").split())
                wait = retry_after(exc.headers.get("Retry-After") if exc.headers else None)
                with contextlib.suppress(Exception):
                    exc.close()
                hint = f"; {self.not_found_hint}" \
                    if exc.code in (404, 405) and self.not_found_hint else ""
                error = self._error(f"{self.url} answered HTTP {exc.code} "
                                    f"{_cut(redact(reason), 80)}".rstrip() + hint)
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

    def _error(self, message: str) -> ScoringError:
        """A ScoringError for this ranker, any secret blanked out of ``message``."""
        return ScoringError(redact(f"ranker {self.name}: {message}"))

    def _failure(self, exc: BaseException) -> ScoringError:
        import http.client

        if isinstance(exc, urllib.error.URLError):
            return self._error(f"cannot reach {self.url} "
                               f"({_cut(redact(_reason(exc.reason)), 120)})")
        if isinstance(exc, (http.client.HTTPException, ValueError)):
            detail = _cut(redact(f"{type(exc).__name__}: {first_line(exc)}"), 120)
            return self._error(f"{self.url} did not answer valid HTTP ({detail})")
        return self._error(f"cannot reach {self.url} ({_cut(redact(first_line(exc)), 120)})")

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


def _cut(text: str, length: int) -> str:
    """``text`` cut to ``length`` characters (after secrets were blanked, never before)."""
    return text if len(text) <= length else text[:length - 1] + "…"


def _redacted(exc: AbnirmlError) -> AbnirmlError:
    """``exc`` with its arguments' secrets blanked (its message already hides them)."""
    exc.args = tuple(redact(a) if isinstance(a, str) else a for a in exc.args)
    return exc


class _Cancelled(Exception):
    """Raised in a request thread whose :meth:`HttpClient.map` has already ended."""


class _Job:
    """One :meth:`HttpClient.map` call: its items, results, first failure, and the
    watchdogs of its requests in flight (shut down when it is cancelled)."""

    def __init__(self, fn: Callable[[Any], Any], items: Sequence[Any]):
        self.fn = fn
        self.items = items
        self.results: list[Any] = [None] * len(items)
        self.failure: BaseException | None = None
        self.finished = threading.Event()
        self.cancelled = threading.Event()
        self._next = 0
        self._left = len(items)
        self._lock = threading.Lock()
        self._watchdogs: set[_Watchdog] = set()

    def work(self) -> None:
        _CURRENT.job = self
        try:
            while True:
                with self._lock:
                    if self.cancelled.is_set() or self._next >= len(self.items):
                        return
                    index = self._next
                    self._next += 1
                try:
                    result = self.fn(self.items[index])
                except BaseException as exc:
                    with self._lock:
                        if not self.cancelled.is_set():
                            self.failure = exc
                    self.cancel()
                    return
                with self._lock:
                    self.results[index] = result
                    self._left -= 1
                    if self._left == 0:
                        self.finished.set()
        finally:
            _CURRENT.job = None

    def cancel(self) -> None:
        with self._lock:
            self.cancelled.set()
            watchdogs = list(self._watchdogs)
        for watchdog in watchdogs:
            watchdog.cut_off()
        self.finished.set()

    def watch(self, watchdog: _Watchdog) -> None:
        with self._lock:
            self._watchdogs.add(watchdog)
            cancelled = self.cancelled.is_set()
        if cancelled:
            watchdog.cut_off()

    def unwatch(self, watchdog: _Watchdog) -> None:
        with self._lock:
            self._watchdogs.discard(watchdog)


def _stop_if_cancelled() -> None:
    job = getattr(_CURRENT, "job", None)
    if job is not None and job.cancelled.is_set():
        raise _Cancelled


def _sleep(seconds: float) -> None:
    """Sleep, ending early (with :class:`_Cancelled`) when this thread's map is cancelled."""
    job = getattr(_CURRENT, "job", None)
    if job is None:
        time.sleep(seconds)
    elif job.cancelled.wait(seconds):
        raise _Cancelled


class _Throttle:
    """What every request of one client shares about the server's rate limit: the moment
    the next request may go, and how many refusals came in a row (a ``streak``).

    Each request notes the streak's identity when it is sent; a refusal extends the streak
    only when no other refusal did so since — requests refused together were one burst,
    not eight reasons to wait longer — and sets the shared moment to at least the refused
    request's pause. An answer ends the streak.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._resume_at = 0.0
        self._streak = 0
        self.streak_id = 0
        self._random = random.Random()
        self._last: tuple[ScoringError, float | None, int] | None = None

    def refused(self, seen: int, wait: float | None, error: ScoringError,
                attempts: int) -> None:
        with self._lock:
            if seen == self.streak_id:
                self._streak += 1
                self.streak_id += 1
            base = min(FIRST_PAUSE * 2 ** (self._streak - 1), LONGEST_PAUSE)
            floor = base * (1.0 + self._random.random())      # [base, 2·base): jittered
            pause = max(floor, wait or 0.0)
            self._resume_at = max(self._resume_at, time.monotonic() + pause)
            self._last = (error, wait, attempts)

    def answered(self) -> None:
        with self._lock:
            if self._streak:
                self._streak = 0
                self.streak_id += 1

    def check_deadline(self, deadline: float, retry_for: float) -> None:
        """The refusal's error, saying why, when the pause would end past ``deadline``."""
        with self._lock:
            if self._resume_at <= deadline or self._last is None:
                return
            error, wait, attempts = self._last
        told = "" if wait is None else f", Retry-After {wait:g} s"
        raise ScoringError(f"{error} (tried {attempts} time(s){told}; no answer within "
                           f"{retry_for:g} s: +retry_for)")

    def wait_turn(self, deadline: float, retry_for: float) -> None:
        """Wait until the server may be asked again (by any thread's refusal), or fail when
        that is past ``deadline``."""
        while True:
            self.check_deadline(deadline, retry_for)
            with self._lock:
                left = self._resume_at - time.monotonic()
            if left <= 0:
                return
            _sleep(left)


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
        self._pid = os.getpid()

    def add(self, seconds: float, callback: Callable[[], None]) -> int:
        if self._pid != os.getpid():
            # a forked child (--workers): the parent's thread is not here, and its lock may
            # have been held at the fork
            self.__init__()  # type: ignore[misc]
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
        self._job: _Job | None = None

    def __enter__(self) -> _Watchdog:
        self._handle = _DEADLINES.add(self.seconds, self._expire)
        _CURRENT.watchdog = self
        self._job = getattr(_CURRENT, "job", None)
        if self._job is not None:
            self._job.watch(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.watchdog = None
        _DEADLINES.cancel(self._handle)
        if self._job is not None:
            self._job.unwatch(self)
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

    def cut_off(self) -> None:
        """End the exchange now: its map was cancelled (a failure elsewhere, a Ctrl-C)."""
        self._expire()


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
        watchdog: _Watchdog | None = getattr(_CURRENT, "watchdog", None)
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
            def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                return self.do_open(WatchedHTTP, req)

        class HTTPSHandler(urllib.request.HTTPSHandler):
            def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                # urllib keeps the handler's TLS context in a private attribute that
                # typeshed does not declare
                context = self._context  # type: ignore[attr-defined]
                return self.do_open(WatchedHTTPS, req, context=context)

        _OPENER = urllib.request.build_opener(HTTPHandler(), HTTPSHandler(),
                                              _RedirectHandler())
        return _OPENER


class _RefusedRedirect(Exception):
    """A redirect the client does not follow: ``code``, where it points, and why not."""

    def __init__(self, code: int, target: str, why: str):
        super().__init__(code, target, why)
        self.code = code
        self.target = target
        self.why = why


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the port made explicit: what decides whether a
    redirect stays with the server the user named."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


class _RedirectHandler(urllib.request.HTTPRedirectHandler):
    """Follows only what keeps a POST a POST and a key with its server (the module
    docstring): 307/308 within the origin, or to another origin without credentials."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request:
        with contextlib.suppress(Exception):
            fp.close()
        scheme = urllib.parse.urlsplit(newurl).scheme.lower()
        same_origin = origin(newurl) == origin(req.full_url)
        if scheme not in ("http", "https"):
            raise _RefusedRedirect(code, newurl, "only http:// and https:// are followed")
        if code not in FOLLOWED_REDIRECTS:
            raise _RefusedRedirect(code, newurl, "following it would turn the POST into a "
                                   "GET without its body: give the URL it points to, if it "
                                   "is the endpoint")
        if not same_origin and req.has_header("Authorization"):
            raise _RefusedRedirect(code, newurl, "the API key is never sent to another "
                                   "server than the one named: give that URL, if you "
                                   "trust it with the key")
        # the request's own headers (its key among them), not the connection's (Host)
        return urllib.request.Request(newurl, data=req.data, headers=dict(req.headers),
                                      origin_req_host=req.origin_req_host,
                                      unverifiable=True, method=req.get_method())


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
    strings, booleans and the non-standard ``NaN``/``Infinity`` literals are one-line
    errors that quote the value as JSON (``"2"`` is a string, not the number 2)."""
    if value is None:
        return float("nan")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScoringError(f"ranker {name}: {url} returned a non-numeric {what} "
                           f"{shown_json(value)}; scores must be JSON numbers")
    try:
        number = float(value)
    except OverflowError:
        raise ScoringError(f"ranker {name}: {url} returned a {what} too large "
                           "for a float") from None
    if not math.isfinite(number):
        literal = "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
        raise ScoringError(f"ranker {name}: {url} returned {what} {literal}; scores must be "
                           "finite JSON numbers")
    return number


def shown_json(value: object, length: int = 40) -> str:
    """``value`` as JSON text, cut to ``length`` characters, for an error message."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        text = repr(value)
    return _cut(text, length)
