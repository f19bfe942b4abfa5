"""Adapters for models abnirml does not implement: PyTerrier transformers and HTTP services.

PyTerrier — ``pyterrier:<module>:<factory>[+version=V][+batch_size=N][+per_query=yes]
[+key=value…]``: imports ``module``, calls ``factory(**params)`` (the extra parameters as
strings) and wraps what it returns; from Python, :func:`wrap_pyterrier` wraps any object with
PyTerrier's ``transform(DataFrame)``. The frame it receives has columns ``qid``, ``query``,
``docno`` and ``text`` (ids made up per call); it must return those ``qid``/``docno`` rows
with a ``score`` column, in any order. A pipeline that keeps state per query (a first-stage
run or features looked up by qid) needs the real ids: with ``per_query=yes`` (or
``wrap_pyterrier(..., per_query=True)``) the ``qid`` column is the collection's qid of the
judged query each pair belongs to — a varied query included — and each qid's scores are
cached apart. PyTerrier itself (and Java) is only needed by the factory.

HTTP — ``http:<url>[+batch_size=64][+timeout=60][+version=V]`` (``http:http://host:8000/score``;
``https`` works too): POSTs ``{"pairs": [{"query": …, "text": …}, …]}`` as JSON and expects
``{"scores": [number, …]}`` in the same order (JSON numbers only: strings and booleans are
refused). ``+timeout`` (at most a day) bounds each whole request — connecting, the
status line and headers, and the body — answers over 64 MiB are refused, and an
unreachable or failing endpoint stops the run with one line naming the ranker. Spec strings
cannot hold ``+``, so URLs with ``+`` in them need the Python API (:class:`HttpRanker`).

abnirml cannot see inside a factory's model or an HTTP service, so their fingerprints name
the factory or URL and ``+version=``: change the version whenever the model behind them
changes, or cached scores of the old model are reused. :func:`wrap_pyterrier` without a
``version`` fingerprints what it can read of the object (function code, closures, plain
attributes; see :mod:`abnirml.rankers.identity`) and, when that is not enough to tell two
scorers apart, refuses to cache its scores and warns once.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from abnirml.errors import ConfigError, ScoringError
from abnirml.rankers.base import Pair, QueryIdentity, RankerHints, RankerSpec, checked_scores
from abnirml.rankers.hf import first_line
from abnirml.rankers.identity import scorer_identity
from abnirml.rankers.torch_support import positive_int
from abnirml.switches import switch_value

DEFAULT_HTTP_BATCH = 64
DEFAULT_PYTERRIER_BATCH = 256
MAX_HTTP_RESPONSE_BYTES = 64 * 2**20
"""An answer larger than this is refused (a 64-pair batch of scores is a few kB)."""


def _score_in_chunks(name: str, pairs: Sequence[Pair], size: int,
                     score_chunk: Callable[[Sequence[Pair]], np.ndarray]) -> np.ndarray:
    """Score ``pairs`` ``size`` at a time (what a transformer or an endpoint accepts in one
    call) and refuse NaN or infinite scores from the wrapped scorer, naming the ranker."""
    out = np.empty(len(pairs), dtype=np.float64)
    for start in range(0, len(pairs), size):
        chunk = pairs[start:start + size]
        out[start:start + len(chunk)] = score_chunk(chunk)
    return checked_scores(name, out, len(pairs))


class PyTerrierRanker:
    """Any object with PyTerrier's ``transform(DataFrame) -> DataFrame`` as a ranker."""

    def __init__(self, transformer: Any, name: str, identity: str,
                 batch_size: int = DEFAULT_PYTERRIER_BATCH, cacheable: bool = True):
        if not callable(getattr(transformer, "transform", None)):
            raise ConfigError(f"ranker {name}: {type(transformer).__name__} has no "
                              "transform(DataFrame) method")
        self.transformer = transformer
        self.name = name
        self.fingerprint = f"PyTerrier[{identity}]"
        self.batch_size = batch_size
        self.cacheable = cacheable
        """False: the scorer could not be identified, so its scores never enter the cache."""
        self.hints = RankerHints(batch_size=batch_size, sort_by_length=False)

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        return _score_in_chunks(self.name, pairs, self.batch_size, self._score_chunk)

    def _score_chunk(self, pairs: Sequence[Pair], fixed_qid: str | None = None) -> np.ndarray:
        """Scores through one ``transform`` call; ``fixed_qid`` (pairs of one query text)
        is the qid every row carries instead of a made-up one."""
        import pandas as pd

        qids: dict[str, str] = {}
        docnos: dict[str, str] = {}
        rows = []
        keys = []
        for query, text in pairs:
            qid = fixed_qid or qids.setdefault(query, f"q{len(qids)}")
            docno = docnos.setdefault(text, f"d{len(docnos)}")
            keys.append((qid, docno))
            rows.append({"qid": qid, "query": query, "docno": docno, "text": text})
        frame = pd.DataFrame(rows, columns=["qid", "query", "docno", "text"])
        try:
            result = self.transformer.transform(frame.drop_duplicates(["qid", "docno"]))
        except Exception as exc:
            raise ScoringError(f"ranker {self.name}: the transformer failed: "
                               f"{type(exc).__name__}: {first_line(exc)}") from exc
        missing_columns = {"qid", "docno", "score"} - set(getattr(result, "columns", []))
        if missing_columns:
            raise ScoringError(f"ranker {self.name}: the transformer's result lacks column(s) "
                               f"{', '.join(sorted(missing_columns))}")
        scored = {(str(q), str(d)): float(s) for q, d, s in
                  zip(result["qid"], result["docno"], result["score"], strict=True)}
        absent = sum(1 for k in keys if k not in scored)
        if absent:
            raise ScoringError(f"ranker {self.name}: the transformer returned no score for "
                               f"{absent} of {len(keys)} pairs")
        return np.array([scored[k] for k in keys], dtype=np.float64)


class QueryRoutedPyTerrierRanker(PyTerrierRanker):
    """A PyTerrier pipeline with per-query state: a
    :class:`~abnirml.rankers.base.QueryRoutedRanker` whose frames carry real qids."""

    def route(self, identity: QueryIdentity) -> str:
        """The judged query's qid ("" for a pair of no judged query: made-up ids)."""
        return identity.qid or ""

    def routed(self, key: str) -> _QidScorer:
        return _QidScorer(self, key)


class _QidScorer:
    """The pairs of one judged query, each ``transform`` call holding one query text (a
    varied query and its original must not share a (qid, docno) row)."""

    def __init__(self, parent: PyTerrierRanker, qid: str):
        self.parent = parent
        self.qid = qid
        self.name = parent.name
        self.fingerprint = f"{parent.fingerprint}[qid={qid}]" if qid else parent.fingerprint
        self.cacheable = parent.cacheable
        self.hints = parent.hints

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        if not self.qid:
            return self.parent.score(pairs)
        out = np.empty(len(pairs), dtype=np.float64)
        by_query: dict[str, list[int]] = {}
        for i, (query, _) in enumerate(pairs):
            by_query.setdefault(query, []).append(i)
        for idx in by_query.values():
            out[idx] = _score_in_chunks(
                self.name, [pairs[i] for i in idx], self.parent.batch_size,
                lambda chunk: self.parent._score_chunk(chunk, fixed_qid=self.qid))
        return out


def wrap_pyterrier(transformer: Any, name: str = "pyterrier", version: str = "",
                   batch_size: int = DEFAULT_PYTERRIER_BATCH, per_query: bool = False
                   ) -> PyTerrierRanker:
    """Wrap a PyTerrier-style transformer for scoring.

    ``version`` names the model for the score cache; without one the fingerprint hashes
    the transformer's functions and data (two ``pt.apply.doc_score`` functions differ), and
    a transformer holding something unreadable (a loaded model) is scored without caching.
    ``per_query``: the pipeline keeps state per qid, so its frames carry the real qids.
    """
    kind = QueryRoutedPyTerrierRanker if per_query else PyTerrierRanker
    cls = f"{type(transformer).__module__}.{type(transformer).__qualname__}"
    if version:
        return kind(transformer, name, f"{cls}@{version}", batch_size)
    code = scorer_identity(transformer)
    if code is not None:
        return kind(transformer, name, f"{cls}#{code}", batch_size)
    warnings.warn(f"ranker {name}: cannot tell what {cls} computes from its code and data, "
                  "so its scores are not cached; pass version=... to cache them",
                  stacklevel=2)
    return kind(transformer, name, f"{cls}#uncached-{id(transformer):x}", batch_size,
                cacheable=False)


def _path_hint(module_name: str, exc: ImportError) -> str:
    """Why a module beside the user may not import: the ``abnirml`` script runs with its own
    folder, not the current one, first on the Python path (unlike ``python -m``)."""
    top = module_name.split(".")[0]
    if not isinstance(exc, ModuleNotFoundError) or exc.name != top:
        return ""
    here = Path.cwd()
    beside = (here / f"{top}.py").is_file() or (here / top / "__init__.py").is_file()
    found = (f"; {top} is in the current folder, which is not on the Python path" if beside
             else "; the current folder is not on the Python path")
    return f"{found}: set PYTHONPATH=. or register the ranker in a plugin (--plugin FILE.py)"


def pyterrier_from_spec(spec: RankerSpec, env) -> PyTerrierRanker:
    name = spec.canonical
    module_name, sep, factory_name = spec.argument.rpartition(":")
    if not sep or not module_name or not factory_name:
        raise ConfigError(f"ranker {name}: expected pyterrier:<module>:<factory>, e.g. "
                          "pyterrier:mypackage.models:monobert")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"ranker {name}: cannot import {module_name!r} ({exc})"
                          f"{_path_hint(module_name, exc)}") from None
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise ConfigError(f"ranker {name}: {module_name} has no callable {factory_name!r}")
    params = dict(spec.params)
    version = params.pop("version", "")
    per_query = switch_value(params.pop("per_query", "no"))
    if per_query is None:
        raise ConfigError(f"ranker {name}: per_query must be yes or no")
    batch = positive_int(params.pop("batch_size", None), env.batch_size or DEFAULT_PYTERRIER_BATCH,
                         name, "batch_size")
    try:
        transformer = factory(**params)
    except Exception as exc:
        raise ConfigError(f"ranker {name}: {factory_name}() failed: {type(exc).__name__}: "
                          f"{exc}") from exc
    extra = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    identity = f"{module_name}:{factory_name}({extra})@{version}"
    kind = QueryRoutedPyTerrierRanker if per_query else PyTerrierRanker
    return kind(transformer, name, identity, batch)


MAX_HTTP_TIMEOUT = 86_400.0
"""``+timeout`` above a day is refused: it is a typo, and timers cannot wait ~1e10 s."""


class _Watchdog:
    """Ends an HTTP exchange at a deadline, whatever phase it is in.

    A socket timeout bounds each read, not the whole answer: a server sending one header
    byte a second (or a TLS handshake as slowly) would keep a request alive forever. The
    watchdog keeps a duplicate of every socket the request opens and, when the deadline
    passes, shuts the connection down through it — which ends a blocked read on the original
    at once, even after TLS has taken the original over — and the caller, seeing
    :attr:`expired`, reports the timeout. (Name resolution happens before a socket exists
    and is left to the system resolver's own timeout.)
    """

    def __init__(self, seconds: float):
        self.expired = False
        self._duplicates: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
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


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):      # already closed: nothing left to interrupt
        sock.shutdown(socket.SHUT_RDWR)


def _opener(watchdog: _Watchdog) -> urllib.request.OpenerDirector:
    """urllib's opener (proxies, redirects) whose connections report to ``watchdog`` as
    soon as their TCP socket exists, before any TLS handshake."""
    import http.client

    def watched(connection: http.client.HTTPConnection) -> None:
        create = connection._create_connection

        def create_watched(*args: Any, **kwargs: Any) -> socket.socket:
            return watchdog.watch(create(*args, **kwargs))

        connection._create_connection = create_watched

    class WatchedHTTP(http.client.HTTPConnection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            watched(self)

    class WatchedHTTPS(http.client.HTTPSConnection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            watched(self)

    class HTTPHandler(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(WatchedHTTP, req)

    class HTTPSHandler(urllib.request.HTTPSHandler):
        def https_open(self, req):
            return self.do_open(WatchedHTTPS, req, context=self._context)

    return urllib.request.build_opener(HTTPHandler(), HTTPSHandler())


class HttpRanker:
    """Scores from a JSON-over-HTTP service (see the module docstring for the protocol)."""

    def __init__(self, url: str, name: str, batch_size: int = DEFAULT_HTTP_BATCH,
                 timeout: float = 60.0, version: str = ""):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"ranker {name}: {url!r} is not an http:// or https:// URL")
        try:
            parts = urllib.parse.urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError as exc:
            raise ConfigError(f"ranker {name}: {url!r} is not a valid URL ({exc})") from None
        if not parts.hostname:
            raise ConfigError(f"ranker {name}: {url!r} names no host")
        if (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                or not 0 < timeout <= MAX_HTTP_TIMEOUT):
            raise ConfigError(f"ranker {name}: timeout must be a number of seconds above 0 "
                              f"and at most {MAX_HTTP_TIMEOUT:g} (found {timeout!r})")
        self.url = url
        self.name = name
        self.batch_size = batch_size
        self.timeout = float(timeout)
        self.fingerprint = f"HTTP[{url}@{version}]"
        self.hints = RankerHints(batch_size=batch_size, sort_by_length=True)

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        return _score_in_chunks(self.name, pairs, self.batch_size, self._post)

    def _post(self, pairs: Sequence[Pair]) -> np.ndarray:
        body = json.dumps({"pairs": [{"query": q, "text": d} for q, d in pairs]},
                          allow_nan=False).encode()
        raw = self._exchange(body)
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            # Broken JSON, numbers longer than Python's digit limit, or nesting deep enough
            # to exhaust the parser's recursion all mean the same thing to the user.
            raise ScoringError(f"ranker {self.name}: {self.url} did not answer valid JSON "
                               "(or nested it too deeply)") from None
        scores = payload.get("scores") if isinstance(payload, dict) else None
        if not isinstance(scores, list):
            raise ScoringError(f"ranker {self.name}: {self.url} answered without a 'scores' list")
        if len(scores) != len(pairs):
            raise ScoringError(f"ranker {self.name}: {self.url} returned {len(scores)} scores "
                               f"for {len(pairs)} pairs")
        return np.array([self._number(s) for s in scores], dtype=np.float64)

    def _exchange(self, body: bytes) -> bytes:
        """POST ``body`` and return the answer's bytes, all within ``+timeout``: connecting,
        the status line and headers, and the body share one deadline."""
        import http.client

        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        with _Watchdog(self.timeout) as watchdog:
            try:
                with _opener(watchdog).open(request, timeout=self.timeout) as response:
                    raw = self._read_body(response)
            except urllib.error.HTTPError as exc:
                if watchdog.expired:
                    raise self._late() from None
                reason = " ".join(str(exc.reason or "").split())[:80]
                raise ScoringError(f"ranker {self.name}: {self.url} answered HTTP {exc.code} "
                                   f"{reason}".rstrip()) from None
            except (urllib.error.URLError, OSError, http.client.HTTPException,
                    ValueError) as exc:
                if watchdog.expired or _is_timeout(exc):
                    # Reached, but slower than +timeout (a big batch on a slow model): saying
                    # "cannot reach" would send the user looking for a network problem.
                    raise self._late() from None
                raise self._failure(exc) from None
            if watchdog.expired:      # the shut-down socket looked like the end of the answer
                raise self._late()
        return raw

    def _failure(self, exc: BaseException) -> ScoringError:
        import http.client

        if isinstance(exc, urllib.error.URLError):
            return ScoringError(f"ranker {self.name}: cannot reach {self.url} "
                                f"({first_line(exc.reason)[:120]})")
        if isinstance(exc, (http.client.HTTPException, ValueError)):
            detail = f"{type(exc).__name__}: {first_line(exc)}"[:120]
            return ScoringError(f"ranker {self.name}: {self.url} did not answer valid HTTP "
                                f"({detail})")
        return ScoringError(f"ranker {self.name}: cannot reach {self.url} "
                            f"({first_line(exc)[:120]})")

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

    def _number(self, value: object) -> float:
        """A JSON number (or null, refused later as NaN); strings and booleans are errors."""
        if value is None:
            return float("nan")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ScoringError(f"ranker {self.name}: {self.url} returned a non-numeric score "
                               f"{str(value)[:40]!r}; scores must be JSON numbers")
        try:
            return float(value)
        except OverflowError:
            raise ScoringError(f"ranker {self.name}: {self.url} returned a score too large "
                               "for a float") from None


def _is_timeout(exc: BaseException) -> bool:
    reason = getattr(exc, "reason", None)
    return isinstance(exc, TimeoutError) or isinstance(reason, TimeoutError)


def http_from_spec(spec: RankerSpec, env) -> HttpRanker:
    name = spec.canonical
    url = spec.argument
    if url.startswith("//"):                 # "http://host/…" parsed as family "http"
        url = "http:" + url
    if not url:
        raise ConfigError(f"ranker {name}: expected http:<url>, e.g. http:http://localhost:8000/score")
    from abnirml.rankers.registry import parameters

    p = parameters(spec)
    batch = p.batch_size if p.batch_size is not None else env.batch_size or DEFAULT_HTTP_BATCH
    return HttpRanker(url, name, batch_size=batch, timeout=p.timeout, version=p.version)
