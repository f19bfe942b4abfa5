"""A served reranker's rerank API as a pointwise ranker.

``rerank-api:URL+model=NAME[+protocol=cohere|tei][+batch_size=32][+concurrency=8]
[+timeout=60][+retry_for=60][+api_key_env=VAR][+version=V]``.

``URL`` is the full endpoint, exactly as the server serves it — vLLM answers on both
``/rerank`` and ``/v1/rerank``, Infinity on ``/rerank``, Cohere on ``/v2/rerank`` — so
nothing is guessed or appended. With ``protocol=cohere`` (the Cohere/Jina shape vLLM,
Infinity and hosted APIs speak) each request is ``{"model", "query", "documents", "top_n"}``
and the answer ``{"results": [{"index", "relevance_score"}, …]}``; with ``protocol=tei``
(Hugging Face Text Embeddings Inference's own route) it is ``{"query", "texts"}`` answered
by ``[{"index", "score"}, …]``. One request holds one query and up to ``+batch_size`` of its
documents; up to ``+concurrency`` requests are in flight. Every document must come back
exactly once with a JSON number. The fingerprint names the URL, the model, the protocol and
``+version`` (change it when the served weights change), never the API key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from abnirml.errors import ConfigError, ScoringError
from abnirml.rankers.base import Pair, RankerHints, RankerSpec, checked_scores
from abnirml.rankers.support.http_client import (
    DEFAULT_CONCURRENCY,
    DEFAULT_RETRY_FOR,
    DEFAULT_TIMEOUT,
    CountsUsage,
    HttpClient,
    json_number,
    shown_json,
)

if TYPE_CHECKING:
    from abnirml.rankers.built_in import RerankApiParams

DEFAULT_BATCH = 32
PROTOCOLS = ("cohere", "tei")


class RerankApiRanker(CountsUsage):
    """Scores from ``POST URL`` in the rerank API's shape (see the module docstring)."""

    def __init__(self, url: str, name: str, model: str = "", *, protocol: str = "cohere",
                 batch_size: int = DEFAULT_BATCH, timeout: float = DEFAULT_TIMEOUT,
                 concurrency: int = DEFAULT_CONCURRENCY, retry_for: float = DEFAULT_RETRY_FOR,
                 api_key_env: str | None = None, version: str = ""):
        if protocol not in PROTOCOLS:
            raise ConfigError(f"ranker {name}: protocol must be cohere or tei, got {protocol!r}")
        if protocol == "cohere" and not model:
            raise ConfigError(f"ranker {name}: +model=NAME is required (the model name the "
                              "server expects)")
        self.client = HttpClient(url, name, timeout=timeout, retry_for=retry_for,
                                 concurrency=concurrency, api_key_env=api_key_env,
                                 not_found_hint=_not_found_hint(url))
        self.url = url
        self.name = name
        self.model = model
        self.protocol = protocol
        self.batch_size = batch_size
        self.fingerprint = f"RerankAPI[{url}|model={model}|{protocol}@{version}]"
        self.hints = RankerHints(batch_size=batch_size * concurrency * 2, own_batches=True)

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        """One request per query and ``batch_size`` of its documents, ``concurrency`` at once."""
        by_query: dict[str, list[int]] = {}
        for i, (query, _) in enumerate(pairs):
            by_query.setdefault(query, []).append(i)
        requests = [(query, idx[start:start + self.batch_size])
                    for query, idx in by_query.items()
                    for start in range(0, len(idx), self.batch_size)]
        out = np.empty(len(pairs), dtype=np.float64)

        def send(request: tuple[str, list[int]]) -> None:
            query, idx = request
            out[idx] = self._post(query, [pairs[i][1] for i in idx])

        self.client.map(send, requests)
        return checked_scores(self.name, out, len(pairs))

    def _post(self, query: str, documents: list[str]) -> np.ndarray:
        if self.protocol == "tei":
            answer = self.client.post_json({"query": query, "texts": documents})
            results, key = answer, "score"
        else:
            answer = self.client.post_json({"model": self.model, "query": query,
                                            "documents": documents,
                                            "top_n": len(documents)})
            results = answer.get("results") if isinstance(answer, dict) else None
            key = "relevance_score"
        if not isinstance(results, list):
            shape = "a list" if self.protocol == "tei" else "a 'results' list"
            raise ScoringError(f"ranker {self.name}: {self.url} answered without {shape}")
        scores = np.full(len(documents), np.nan)
        seen = 0
        for item in results:
            if not isinstance(item, dict):
                raise ScoringError(f"ranker {self.name}: {self.url} returned result "
                                   f"{shown_json(item, 20)}; each result must be an object "
                                   f"with 'index' and '{key}'")
            index = item.get("index")
            if (isinstance(index, bool) or not isinstance(index, int)
                    or not 0 <= index < len(documents) or not np.isnan(scores[index])):
                raise ScoringError(f"ranker {self.name}: {self.url} returned result index "
                                   f"{shown_json(index, 20)} for {len(documents)} documents "
                                   "(each index 0.. must come back once)")
            value = json_number(item.get(key), self.name, self.url, key)
            if np.isnan(value):
                raise ScoringError(f"ranker {self.name}: {self.url} returned no {key} for "
                                   f"document {index}")
            scores[index] = value
            seen += 1
        if seen != len(documents):
            raise ScoringError(f"ranker {self.name}: {self.url} returned {seen} results for "
                               f"{len(documents)} documents")
        return scores


def _not_found_hint(url: str) -> str:
    """What a 404 from ``url`` most likely means: a base URL given where the endpoint's
    full URL belongs (nothing is appended to it)."""
    import urllib.parse

    path = urllib.parse.urlsplit(url).path or "/"
    base = url.rstrip("/")
    return (f"rerank-api posted to {path} exactly as given: it expects the endpoint's full "
            f"URL, e.g. {base}/v1/rerank (vLLM) or {base}/rerank (Infinity, TEI)")


def from_spec(spec: RankerSpec, p: RerankApiParams, env: Any) -> RerankApiRanker:
    name = spec.canonical
    url = spec.argument
    if url.startswith("//"):                 # "http://host/…" split at the first ':'
        url = "http:" + url
    if not url:
        raise ConfigError(f"ranker {name}: expected rerank-api:<endpoint URL>+model=NAME, "
                          "e.g. rerank-api:http://localhost:8000/v1/rerank+model=BAAI/"
                          "bge-reranker-v2-m3")
    return RerankApiRanker(url, name, p.model, protocol=p.protocol, batch_size=p.batch_size,
                           timeout=p.timeout, concurrency=p.concurrency,
                           retry_for=p.retry_for, api_key_env=p.api_key_env,
                           version=p.version)
