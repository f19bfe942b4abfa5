"""Word Mover's Distance over GloVe vectors (Kusner et al., 2015); score = −distance.

``wmd:glove[+stopwords=remove|keep]``.

Each text becomes a normalised bag of words (weight = term count / total count) over its
in-vocabulary GloVe words; the distance is the minimum cost of moving one bag onto the
other with Euclidean word-to-word costs, solved exactly with POT's network simplex
(``ot.emd2``). Stopwords (the run's ``--stopwords`` list) are removed by default, as
Kusner et al. did. OOV handling: words without a GloVe vector are dropped; a text left with
no known word at all is represented by the origin (one unit of mass at the zero vector), so
its distance is the weighted mean norm of the other side's vectors — finite, and larger for
texts with more distinctive words — rather than an undefined or infinite score.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from abnirml.errors import ConfigError
from abnirml.rankers.base import Pair, RankerHints, RankerSpec, checked_scores
from abnirml.rankers.families.glove import GloveVectors, glove_identity, glove_tokens, load_glove
from abnirml.rankers.support.torch_support import import_or_explain

if TYPE_CHECKING:
    from abnirml.rankers.built_in import WMDParams

Bag = tuple[np.ndarray, np.ndarray]      # (weights [n], vectors [n, dim]) in float64


class WMDRanker:
    hints = RankerHints(batch_size=2048, sort_by_length=False)

    def __init__(self, glove: GloveVectors | None = None, name: str = "wmd:glove",
                 stopwords: frozenset[str] = frozenset(), stopword_list: str = "none"):
        import importlib.util

        # POT (which imports every array backend it finds, torch included) and the vectors
        # are loaded on the first score, so a fully cached rerun pays for neither.
        if importlib.util.find_spec("ot") is None:
            import_or_explain("ot", name, "embedding")
        self._glove = glove
        self.name = name
        self.stopwords = stopwords
        identity = glove.identity if glove is not None else glove_identity(name)
        self.fingerprint = f"WMD[{identity}][stopwords={stopword_list}]"

    @property
    def glove(self) -> GloveVectors:
        if self._glove is None:
            self._glove = load_glove(self.name)
        return self._glove

    @property
    def _ot(self) -> Any:
        return import_or_explain("ot", self.name, "embedding")

    def bag(self, text: str) -> Bag:
        counts = Counter(self.glove.token_ids(glove_tokens(text, self.stopwords)))
        if not counts:
            return np.ones(1), np.zeros((1, self.glove.dim))
        rows = sorted(counts)
        weights = np.array([counts[r] for r in rows], dtype=np.float64)
        vectors = np.asarray(self.glove.vectors[rows], dtype=np.float64)
        return weights / weights.sum(), vectors

    def distance(self, a: Bag, b: Bag) -> float:
        from scipy.spatial.distance import cdist

        cost = cdist(a[1], b[1])
        return float(self._ot.emd2(a[0], b[0], cost))

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        bags: dict[str, Bag] = {}
        out = np.empty(len(pairs), dtype=np.float64)
        for i, (query, doc) in enumerate(pairs):
            qb = bags.get(query)
            if qb is None:
                qb = bags[query] = self.bag(query)
            db = bags.get(doc)
            if db is None:
                db = bags[doc] = self.bag(doc)
            out[i] = -self.distance(qb, db)
        return checked_scores(self.name, out, len(pairs))


def from_spec(spec: RankerSpec, p: WMDParams, env: Any) -> WMDRanker:
    name = spec.canonical
    if spec.argument not in ("", "glove"):
        raise ConfigError(f"ranker {name}: the only word vectors available are 'glove' "
                          "(GloVe 6B 50d, packaged)")
    mode = p.stopwords
    stops = env.analyzer.stopword_set if mode == "remove" else frozenset()
    label = env.analyzer.stopwords if mode == "remove" else "none"
    return WMDRanker(None, name=name, stopwords=stops, stopword_list=label)
