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

HTTP — ``http:<url>[+batch_size=64][+timeout=60][+concurrency=8][+retry_for=60]
[+api_key_env=VAR][+version=V]`` (``http:http://host:8000/score``; ``https`` works too):
POSTs ``{"pairs": [{"query": …, "text": …}, …]}`` as JSON and expects
``{"scores": [number, …]}`` in the same order (JSON numbers only: strings and booleans are
refused). Up to ``+concurrency`` batches are in flight at once; ``+timeout`` (at most a day)
bounds each whole request — connecting, the status line and headers, and the body — answers
over 64 MiB are refused, a 429 or 503 is tried again within ``+retry_for`` seconds, and an
unreachable or failing endpoint stops the run with one line naming the ranker (see
:mod:`abnirml.rankers.support.http_client`). Spec strings cannot hold ``+``, so URLs with ``+`` in
them need the Python API (:class:`HttpRanker`).

abnirml cannot see inside a factory's model or an HTTP service, so their fingerprints name
the factory or URL and ``+version=``: change the version whenever the model behind them
changes, or cached scores of the old model are reused. :func:`wrap_pyterrier` without a
``version`` fingerprints what it can read of the object (function code, closures, plain
attributes; see :mod:`abnirml.rankers.identity`) and, when that is not enough to tell two
scorers apart, refuses to cache its scores and warns once.
"""

from __future__ import annotations

import dataclasses
import importlib
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from abnirml.errors import ConfigError, ScoringError
from abnirml.rankers.base import Pair, QueryIdentity, RankerHints, RankerSpec, checked_scores
from abnirml.rankers.identity import scorer_identity
from abnirml.rankers.support.hf import first_line
from abnirml.rankers.support.http_client import (
    DEFAULT_CONCURRENCY,
    DEFAULT_RETRY_FOR,
    CountsUsage,
    HttpClient,
    json_number,
)

if TYPE_CHECKING:
    from abnirml.rankers.built_in import HttpParams, PyTerrierParams

DEFAULT_HTTP_BATCH = 64
DEFAULT_PYTERRIER_BATCH = 256


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


def pyterrier_from_spec(spec: RankerSpec, p: PyTerrierParams, env: Any) -> PyTerrierRanker:
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
    own = {f.name for f in dataclasses.fields(p)}
    params = {k: v for k, v in spec.params if k not in own}     # the transformer factory's
    version, per_query = p.version, p.per_query
    batch = p.batch_size or env.batch_size or DEFAULT_PYTERRIER_BATCH
    try:
        transformer = factory(**params)
    except Exception as exc:
        raise ConfigError(f"ranker {name}: {factory_name}() failed: {type(exc).__name__}: "
                          f"{exc}") from exc
    extra = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    identity = f"{module_name}:{factory_name}({extra})@{version}"
    kind = QueryRoutedPyTerrierRanker if per_query else PyTerrierRanker
    return kind(transformer, name, identity, batch)


class HttpRanker(CountsUsage):
    """Scores from a JSON-over-HTTP service (see the module docstring for the protocol)."""

    def __init__(self, url: str, name: str, batch_size: int = DEFAULT_HTTP_BATCH,
                 timeout: float = 60.0, version: str = "", *,
                 concurrency: int = DEFAULT_CONCURRENCY, retry_for: float = DEFAULT_RETRY_FOR,
                 api_key_env: str | None = None):
        self.client = HttpClient(url, name, timeout=timeout, retry_for=retry_for,
                                 concurrency=concurrency, api_key_env=api_key_env,
                                 not_found_hint="http: posts to the URL exactly as given: "
                                 "give the scoring endpoint's full URL")
        self.url = url
        self.name = name
        self.batch_size = batch_size
        self.timeout = self.client.timeout
        self.fingerprint = f"HTTP[{url}@{version}]"
        # The engine hands over enough pairs per call to keep every request slot busy.
        self.hints = RankerHints(batch_size=batch_size * concurrency, sort_by_length=True,
                                 own_batches=True)

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        chunks = [pairs[start:start + self.batch_size]
                  for start in range(0, len(pairs), self.batch_size)]
        scores = self.client.map(self._post, chunks)
        out = np.concatenate(scores) if scores else np.empty(0, dtype=np.float64)
        return checked_scores(self.name, out, len(pairs))

    def _post(self, pairs: Sequence[Pair]) -> np.ndarray:
        payload = self.client.post_json(
            {"pairs": [{"query": q, "text": d} for q, d in pairs]})
        scores = payload.get("scores") if isinstance(payload, dict) else None
        if not isinstance(scores, list):
            raise ScoringError(f"ranker {self.name}: {self.url} answered without a 'scores' list")
        if len(scores) != len(pairs):
            raise ScoringError(f"ranker {self.name}: {self.url} returned {len(scores)} scores "
                               f"for {len(pairs)} pairs")
        return np.array([json_number(s, self.name, self.url) for s in scores],
                        dtype=np.float64)


def http_from_spec(spec: RankerSpec, p: HttpParams, env: Any) -> HttpRanker:
    name = spec.canonical
    url = spec.argument
    if url.startswith("//"):                 # "http://host/…" parsed as family "http"
        url = "http:" + url
    if not url:
        raise ConfigError(f"ranker {name}: expected http:<url>, e.g. http:http://localhost:8000/score")
    batch = p.batch_size if p.batch_size is not None else env.batch_size or DEFAULT_HTTP_BATCH
    return HttpRanker(url, name, batch_size=batch, timeout=p.timeout, version=p.version,
                      concurrency=p.concurrency, retry_for=p.retry_for,
                      api_key_env=p.api_key_env)
