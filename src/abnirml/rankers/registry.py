"""From spec strings to rankers.

Each family maps to ``"module:factory"`` and is imported only when used, so naming a neural
family never costs a torch import unless that ranker is built. A factory receives the parsed
:class:`~abnirml.rankers.base.RankerSpec` and the shared :class:`RankerEnv`.

To add a family from outside the package, call :func:`register`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from abnirml.errors import AbnirmlError, ConfigError, did_you_mean, user_line
from abnirml.rankers.base import Ranker, RankerSpec, check_ranker_fields
from abnirml.text.analyzer import Analyzer

Factory = Callable[[RankerSpec, "RankerEnv"], Ranker]

_FAMILIES: dict[str, str | Factory] = {
    "bm25": "abnirml.rankers.registry:_bm25",
    "ql": "abnirml.rankers.registry:_ql",
    "tfidf": "abnirml.rankers.registry:_tfidf",
    "maxp": "abnirml.rankers.passages:build",
}


@dataclass
class RankerEnv:
    """What factories may need: the collection (for statistics), analysis, device, seed."""

    collection: Any = None
    analyzer: Analyzer = field(default_factory=Analyzer)
    device: str = "cpu"
    batch_size: int | None = None
    seed: int = 0
    allow_pickle: bool = False
    progress: bool = False
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def collection_stats(self) -> Any:
        """Statistics over the collection's documents, computed once per environment."""
        if "stats" not in self._memo:
            from abnirml.data.stats import CollectionStats

            if self.collection is None:
                raise ConfigError("lexical rankers need a collection for their statistics")
            texts = self.collection.doc_texts()
            if self.progress:
                import sys

                from tqdm.auto import tqdm

                texts = tqdm(texts, total=len(self.collection), desc="collection statistics",
                             unit="doc", file=sys.stderr, leave=False, mininterval=1.0)
            self._memo["stats"] = CollectionStats.build(texts, self.analyzer)
        return self._memo["stats"]

    def memo(self, key: str, build: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]


def register(family: str, factory: str | Factory, description: str = "") -> None:
    """Make ``family`` available as a ranker spec (``factory`` or ``"module:function"``);
    ``description`` is the line ``abnirml rankers`` shows for it."""
    if family.lower() in _BUILT_IN:
        raise ConfigError(f"ranker family {family!r} is built in; give yours another name")
    _FAMILIES[family.lower()] = factory
    if description:
        _DESCRIPTIONS[family.lower()] = description


def unregister(family: str) -> None:
    """Forget a ranker family added with :func:`register` (tests, notebooks)."""
    _FAMILIES.pop(family.lower(), None)
    _DESCRIPTIONS.pop(family.lower(), None)


def factory_of(family: str) -> str | Factory | None:
    """The factory (or ``"module:function"``) registered for ``family``, None if none is."""
    return _FAMILIES.get(family.lower())


def families() -> list[str]:
    return sorted(_FAMILIES)


def describe_family(family: str) -> str:
    """The spec form and one-line description of a family ('' for an undocumented one)."""
    return _DESCRIPTIONS.get(family.lower(), "")


def _check_factory(family: str, factory: Factory, spec: RankerSpec, env: RankerEnv) -> None:
    """A registered factory is called as ``factory(spec, env)``; one that cannot take those
    two arguments is named here rather than failing with a TypeError about a lambda."""
    import inspect

    try:
        inspect.signature(factory).bind(spec, env)
    except TypeError:
        raise ConfigError(f"ranker factory for {family!r} "
                          f"({getattr(factory, '__qualname__', factory)!s}) must take two "
                          "arguments, (spec: RankerSpec, env: RankerEnv)") from None
    except ValueError:        # no signature to read (a builtin): let the call decide
        pass


def build_ranker(spec_text: str, env: RankerEnv) -> Ranker:
    spec = RankerSpec.parse(spec_text)
    target = _FAMILIES.get(spec.family)
    if target is None:
        raise ConfigError(f"unknown ranker {spec.family!r}{did_you_mean(spec.family, families())}"
                          f"; known: {', '.join(families())}")
    if isinstance(target, str):
        module_name, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module_name), attr)
    from abnirml.rankers.hf import set_pickle_policy

    set_pickle_policy(env.allow_pickle)
    _check_factory(spec.family, target, spec, env)
    if spec.family in _BUILT_IN:
        ranker = target(spec, env)
    else:
        ranker = _call_user_factory(target, spec, env)
    check_ranker_fields(ranker, f"ranker factory for {spec.family!r}")
    if spec.display:
        name_ranker(ranker, spec.display, spec.canonical)
    return ranker


def _call_user_factory(factory: Factory, spec: RankerSpec, env: RankerEnv) -> Ranker:
    """A registered (user's) factory's own failure as one line naming its file and line:
    it is the user's code, and a traceback through abnirml would hide where."""
    try:
        return factory(spec, env)
    except AbnirmlError:
        raise
    except Exception as exc:  # the user's code: any error is theirs
        raise ConfigError(f"ranker {spec.canonical}: its factory failed{user_line(exc)}: "
                          f"{type(exc).__name__}: {exc}") from None


def name_ranker(ranker: Ranker, display: str, canonical: str) -> None:
    """Give a built ranker its display name. Only ``name`` changes: the fingerprint (and so
    the score cache) stays the model's, and ``canonical_spec`` keeps what the name stands
    for (run.json's ``spec``, seeds that must not depend on a label)."""
    try:
        ranker.name = display
        ranker.canonical_spec = canonical  # type: ignore[attr-defined]
    except AttributeError:
        raise ConfigError(f"ranker {canonical}: its class does not allow a display name "
                          f"(@{display})") from None


def _bm25(spec: RankerSpec, env: RankerEnv) -> Ranker:
    from abnirml.rankers.lexical import BM25

    spec.check_no_argument()
    spec.check_params({"k1", "b", "k3"})
    return BM25(env.collection_stats(), k1=spec.float_param("k1", 1.2, low=0),
                b=spec.float_param("b", 0.75, low=0, high=1),
                k3=spec.float_param("k3", 8.0, low=0), name=spec.canonical)


def _ql(spec: RankerSpec, env: RankerEnv) -> Ranker:
    from abnirml.rankers.lexical import QueryLikelihood

    spec.check_no_argument()
    spec.check_params({"mu"})
    mu = spec.float_param("mu", 2500.0, low=0, low_open=True)
    return QueryLikelihood(env.collection_stats(), mu=mu, name=spec.canonical)


def _tfidf(spec: RankerSpec, env: RankerEnv) -> Ranker:
    from abnirml.rankers.lexical import TFIDF

    spec.check_no_argument()
    spec.check_params({"k1", "b"})
    return TFIDF(env.collection_stats(), k1=spec.float_param("k1", 1.2, low=0),
                 b=spec.float_param("b", 0.75, low=0, high=1), name=spec.canonical)


# Neural, embedding and learned rankers and adapters; each module documents its spec.
_FAMILIES.update({
    "cross-encoder": "abnirml.rankers.cross_encoder:from_spec",
    "monot5": "abnirml.rankers.monot5:from_spec",
    "colbert": "abnirml.rankers.colbert:from_spec",
    "biencoder": "abnirml.rankers.biencoder:from_spec",
    "splade": "abnirml.rankers.splade:from_spec",
    "lm": "abnirml.rankers.causal_lm:from_spec",
    "duot5": "abnirml.rankers.pairwise:duot5_from_spec",
    "lm-pairwise": "abnirml.rankers.pairwise:lm_pairwise_from_spec",
    "doc2query": "abnirml.rankers.doc2query:from_spec",
    "wmd": "abnirml.rankers.wmd:from_spec",
    "knrm": "abnirml.rankers.learned.factories:knrm",
    "cknrm": "abnirml.rankers.learned.factories:cknrm",
    "lgbm": "abnirml.rankers.learned.factories:lgbm",
    "pyterrier": "abnirml.rankers.adapters:pyterrier_from_spec",
    "http": "abnirml.rankers.adapters:http_from_spec",
})
#: The families this package defines; :func:`register` refuses to replace one silently.
_BUILT_IN: frozenset[str] = frozenset(_FAMILIES)

# What `abnirml rankers` prints: the spec's shape with its parameters, then what it is.
_DESCRIPTIONS: dict[str, str] = {
    "bm25": "bm25[+k1=1.2][+b=0.75][+k3=8] — Terrier's BM25 over the collection's statistics",
    "ql": "ql[+mu=2500] — query likelihood with Dirichlet smoothing",
    "tfidf": "tfidf[+k1=1.2][+b=0.75] — Terrier's TF-IDF",
    "maxp": ("maxp:<spec>[+passage_length=N][+passage_stride=M][+aggregate=max|first|mean] "
             "— a ranker over a document's passages, aggregated"),
    "cross-encoder": "cross-encoder:NAME|DIR[+output=logit|prob][+max_length=512] — "
                     "monoBERT-style sequence classifier",
    "monot5": "monot5:NAME|DIR[+true=…][+false=…] — monoT5 true/false log-softmax",
    "colbert": "colbert:NAME|DIR[+query_maxlen=32][+doc_maxlen=180] — late interaction "
               "(MaxSim)",
    "biencoder": "biencoder[:NAME|DIR][+similarity=cos|dot][+query_prefix=…][+doc_prefix=…] "
                 "— sentence-transformers bi-encoder (default: all-MiniLM-L6-v2)",
    "splade": "splade[:NAME|DIR][+max_length=256][+dtype=…][+query_top_k=N][+doc_top_k=N] — "
              "learned sparse ranker (default: SPLADE-tiny)",
    "lm": "lm:NAME|DIR[+template=default|qwen3|FILE][+yes=…][+no=…][+head=auto|lm|score] — "
          "causal-LM pointwise reranker",
    "duot5": ("duot5:NAME|DIR[+rerank_depth=10][+max_length=512][+true=…][+false=…] — "
              "pairwise preference ranker (duoT5)"),
    "lm-pairwise": ("lm-pairwise:NAME|DIR[+template=default|FILE][+yes=…][+no=…]"
                    "[+rerank_depth=10][+max_length=1024] — pairwise preference from a "
                    "causal LM"),
    "doc2query": "doc2query:NAME|DIR[+n=4][+mode=sample|greedy][+top_k=10] — T5 expansions, "
                 "then BM25",
    "wmd": "wmd:glove[+stopwords=remove|keep] — negative Word Mover's Distance over GloVe",
    "knrm": "knrm[:DIR] — KNRM trained on the collection (or loaded from abnirml train)",
    "cknrm": "cknrm[:DIR] — Conv-KNRM trained on the collection (or loaded)",
    "lgbm": "lgbm[:DIR] — LightGBM LambdaMART over 16 text features (or loaded)",
    "pyterrier": "pyterrier:MODULE:FACTORY[+version=V][+batch_size=N][+k=v…] — a PyTerrier "
                 "transformer from a factory",
    "http": "http:URL[+batch_size=64][+timeout=60][+version=V] — scores from a JSON-over-HTTP "
            "service",
}
