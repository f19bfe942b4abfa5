"""doc2query (docT5query): expand each document with queries a T5 model generates for it,
then score the expanded document with BM25 — as the DocT5Query paper and ABNIRML's DT5Q do.

``doc2query:<hub name or directory>[+n=4][+mode=sample|greedy][+top_k=10]
[+max_new_tokens=64][+seed=S][+dtype=fp32|fp16|bf16][+stats=original|expanded][+k1=…+b=…]``,
e.g. ``doc2query:castorini/doc2query-t5-base-msmarco``.

* ``mode=sample`` (default, as docT5query): top-k sampling of ``n`` queries (ABNIRML used
  four). Each document is generated from its own seed, derived from ``seed`` (default: the
  run's ``--seed``) and the document text, so a document's expansion never depends on which
  other documents were generated with it.
* ``mode=greedy``: deterministic decoding — one greedy query for ``n=1``, otherwise the ``n``
  best beams.
* Expansions are stored per document text in ``expansions.sqlite`` beside the score cache
  (see :mod:`abnirml.rankers.families.expansion`).
* BM25 statistics come from the collection's original documents by default (no expansion of
  the whole collection needed); ``+stats=expanded`` expands every collection document first
  and takes the statistics from the expanded collection, as an index of expanded documents
  would.

:func:`build_expansion_source` gives the generator alone — the DocT5Query manipulation's
expansion source.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from abnirml.errors import ConfigError
from abnirml.rankers.base import Pair, RankerHints, RankerSpec, checked_scores
from abnirml.rankers.families.expansion import (
    ExpansionSource,
    ExpansionStore,
    default_expansion_store_path,
)
from abnirml.rankers.support.device_batching import dtype_fingerprint, parse_dtype, torch_dtype
from abnirml.rankers.support.hf import (
    ModelRef,
    load_pretrained,
    model_identity,
    resolve_model,
    set_pickle_policy,
)
from abnirml.rankers.support.torch_support import import_or_explain, import_torch

if TYPE_CHECKING:
    from abnirml.rankers.built_in import Doc2QueryParams

MODES = ("sample", "greedy")
DEFAULT_QUERIES = 4
DEFAULT_TOP_K = 10
DEFAULT_MAX_NEW_TOKENS = 64
DEFAULT_MAX_INPUT = 512
GENERATOR_PARAMS = {"n", "mode", "top_k", "max_new_tokens", "max_input_length", "seed",
                    "revision", "dtype"}


class Doc2QueryGenerator:
    """A T5 query generator; an :class:`~abnirml.rankers.families.expansion.ExpansionSource`."""

    def __init__(self, ref: ModelRef, name: str, device: str = "cpu", n: int = DEFAULT_QUERIES,
                 mode: str = "sample", top_k: int = DEFAULT_TOP_K,
                 max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                 max_input_length: int = DEFAULT_MAX_INPUT, seed: int = 0,
                 store: ExpansionStore | str | Path | None = "default", dtype: str = "fp32"):
        self._torch = import_torch(name)
        transformers = import_or_explain("transformers", name, "neural")
        if mode not in MODES:
            raise ConfigError(f"ranker {name}: mode must be sample or greedy, got {mode!r}")
        self.name = name
        self.device = device
        self.tokenizer = load_pretrained(transformers.AutoTokenizer.from_pretrained, ref, name)
        model = load_pretrained(transformers.AutoModelForSeq2SeqLM.from_pretrained, ref, name)
        self.model = model.to(self.device, torch_dtype(dtype)).eval()
        self.n, self.mode, self.top_k, self.seed = n, mode, top_k, seed
        self.max_new_tokens, self.max_input_length = max_new_tokens, max_input_length
        decoding = (f"sample,top_k={top_k},seed={seed}" if mode == "sample" else "greedy")
        self.fingerprint = (f"Doc2Query[{model_identity(ref, model.config)}][n={n},{decoding},"
                            f"max_new_tokens={max_new_tokens},max_input={max_input_length}]"
                            + dtype_fingerprint(dtype))
        if isinstance(store, ExpansionStore):
            self.store = store
        else:
            self.store = ExpansionStore(default_expansion_store_path() if store == "default"
                                        else store)
        self.generated = 0     # documents generated (not read from the store) by this object

    def _document_seed(self, text: str) -> int:
        digest = hashlib.blake2b(f"{self.seed}\x00{text}".encode("utf-8", "surrogatepass"),
                                 digest_size=8).digest()
        return int.from_bytes(digest, "little") & ((1 << 63) - 1)

    def generate(self, text: str) -> list[str]:
        """The ``n`` queries generated for one document (not cached)."""
        torch = self._torch
        inputs = self.tokenizer(text, truncation=True, max_length=self.max_input_length,
                                return_tensors="pt").to(self.device)
        options: dict[str, Any] = {"max_new_tokens": self.max_new_tokens,
                                   "num_return_sequences": self.n}
        if self.mode == "sample":
            options.update(do_sample=True, top_k=self.top_k)
        else:
            options.update(do_sample=False, num_beams=self.n)
        devices = [torch.device(self.device).index or 0] if self.device.startswith("cuda") else []
        with torch.inference_mode(), torch.random.fork_rng(devices=devices):
            torch.manual_seed(self._document_seed(text))
            output = self.model.generate(**inputs, **options)
        queries = self.tokenizer.batch_decode(output, skip_special_tokens=True)
        return [" ".join(q.split()) for q in queries]

    def expand(self, texts: Sequence[str]) -> list[str]:
        """Each text's generated queries joined by spaces; generated once, then stored."""
        unique = list(dict.fromkeys(texts))
        known = self.store.lookup(self.fingerprint, unique)
        fresh: list[tuple[str, str]] = []
        for text in unique:
            if text not in known:
                known[text] = " ".join(self.generate(text))
                fresh.append((text, known[text]))
                self.generated += 1
                if len(fresh) >= 32:
                    self.store.store(self.fingerprint, fresh)
                    fresh = []
        if fresh:
            self.store.store(self.fingerprint, fresh)
        return [known[t] for t in texts]


class Doc2QueryRanker:
    """BM25 over ``document + " " + expansion``."""

    hints = RankerHints(batch_size=256, sort_by_length=False)

    def __init__(self, generator: Doc2QueryGenerator, bm25: Any, name: str, stats_mode: str):
        self.generator = generator
        self.bm25 = bm25
        self.name = name
        self.fingerprint = (f"Doc2QueryBM25[{generator.fingerprint}][stats={stats_mode}]"
                            f"[{bm25.fingerprint}]")

    def expand(self, texts: Sequence[str]) -> list[str]:
        """The generator's expansions: a ``doc2query:`` spec also serves as the DocT5Query
        manipulation's ``doct5query_source``."""
        return self.generator.expand(texts)

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        docs = [d for _, d in pairs]
        expansions = self.generator.expand(docs)
        expanded = [(q, f"{d} {e}") for (q, d), e in zip(pairs, expansions, strict=True)]
        return checked_scores(self.name, self.bm25.score(expanded), len(pairs))


def _generator_from_spec(spec: RankerSpec, p: Doc2QueryParams, env: Any,
                         example: str) -> Doc2QueryGenerator:
    name = spec.canonical
    ref = resolve_model(spec.argument, name, p.revision, example=example)
    seed = p.seed if p.seed is not None else int(getattr(env, "seed", 0))
    device = env.device_for(name)
    return Doc2QueryGenerator(
        ref, name, device=device, dtype=parse_dtype(p.dtype, device, name), n=p.n,
        mode=p.mode, top_k=p.top_k, max_new_tokens=p.max_new_tokens,
        max_input_length=p.max_input_length, seed=seed)


EXPANSION_CHUNK = 1024


def _expanded_texts(texts: Iterable[str], generator: Doc2QueryGenerator,
                    chunk: int = EXPANSION_CHUNK) -> Iterator[str]:
    """Each passage followed by its expansion, ``chunk`` passages at a time: the statistics
    pass over a collection read from disk then holds one chunk of texts, not all of them
    (MS MARCO's 8.8 M passages are ≈ 3 GB of text)."""
    remaining = iter(texts)
    while batch := list(itertools.islice(remaining, chunk)):
        yield from (f"{t} {e}" for t, e in zip(batch, generator.expand(batch), strict=True))


def from_spec(spec: RankerSpec, p: Doc2QueryParams, env: Any) -> Doc2QueryRanker:
    from abnirml.data.stats import CollectionStats
    from abnirml.rankers.families.lexical import BM25

    set_pickle_policy(env.allow_pickle)
    mode = p.stats
    generator = _generator_from_spec(spec, p, env,
                                     "doc2query:castorini/doc2query-t5-base-msmarco")
    if mode == "original":
        stats = env.collection_stats()
    else:
        if env.collection is None:
            raise ConfigError(f"ranker {spec.canonical}: stats=expanded needs a collection")
        stats = CollectionStats.build(_expanded_texts(env.collection.doc_texts(), generator),
                                      env.analyzer)
    bm25 = BM25(stats, k1=p.k1, b=p.b, k3=p.k3, name=spec.canonical)
    return Doc2QueryRanker(generator, bm25, spec.canonical, mode)


def build_expansion_source(text: str, device: str = "cpu", seed: int = 0) -> Doc2QueryGenerator:
    """An expansion source from ``doc2query:<model>[+n=…]`` or a bare model name/directory.

    For the DocT5Query manipulation: the ``tmp.doct5query_source`` setting.
    """
    spec = RankerSpec.parse(text if text.startswith("doc2query:") else f"doc2query:{text}")
    spec.check_params(GENERATOR_PARAMS)
    from abnirml.rankers.registry import RankerEnv, parameters

    return _generator_from_spec(spec, parameters(spec), RankerEnv(device=device, seed=seed),
                                "doc2query:castorini/doc2query-t5-base-msmarco")


def as_expansion_source(value: Any, device: str = "cpu", seed: int = 0) -> ExpansionSource:
    """the ``tmp.doct5query_source`` setting as given: an expansion source object (Python
    API) or a string from ``--option tmp.doct5query_source=…`` (a model name, directory or
    ``doc2query:`` spec)."""
    if isinstance(value, ExpansionSource):
        return value
    if isinstance(value, str) and value.strip():
        return build_expansion_source(value.strip(), device=device, seed=seed)
    raise ConfigError(f"tmp.doct5query_source: expected a doc2query model name, directory or "
                      f"spec, got {value!r}")
