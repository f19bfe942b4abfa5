"""Query-variation probes (``qvp:``): the same document under a varied query.

Penha et al. (ECIR 2022) measure how retrieval pipelines cope with the ways real users
phrase one information need (:mod:`.generators` makes the variations). A
textual-manipulation probe changes the document and keeps the query; these change the
query and keep the document, with the same statistics: **d1 = (q′, d), d2 = (q, d)** — the
same document scored under the varied and the original query — so a positive score means
the ranker scores documents *higher* under the variation (the table's ``query1`` column
carries q′; ``doc1`` and ``doc2`` are the same text).

Samples: for each query the variation applies to (one variation per query, seeded by
(seed, probe, qid)), every document of its pool — its top ``qvp_depth`` candidates and its
judged documents with text. Judged grades place samples in the non-relevant / relevant
subsets (the relevant subset is the paper's "score of the relevant documents");
unjudged candidates count in ``all`` only. Scoring the whole pool under both queries also
gives each query's ranking twice, so :func:`attach_ndcg_change` adds the mean nDCG@10 under
the original and the varied queries to the probe's records. Queries the variation does not
apply to are counted as ``not-applicable`` (one per query).

Options (``--option qvp.KEY=VALUE``, :class:`QueryVariationOptions`): ``qvp.depth``
(candidates per query, default 100; 0 uses the judged documents only); ``qvp.synonyms``
(``wordnet``, the default, or ``counter-fitted``) and ``qvp.counter_fitted`` (a local copy
of the counter-fitted vectors; without one they are downloaded once).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from abnirml.probes.base import KeyedProbe, ProbeContext, SampleTable
from abnirml.probes.family import SPACY
from abnirml.probes.query_variation.generators import VARIATIONS, VariationContext
from abnirml.samples import Sample, Skip
from abnirml.settings import setting

DEFAULT_DEPTH = 100
NDCG_DEPTH = 10
SYNONYM_SOURCES = ("wordnet", "counter-fitted")
#: what the ``ndcg10_*`` fields' ideal ranking is built from (recorded with them)
NDCG_IDEAL = "all judgments of the query (trec_eval)"


@dataclass(frozen=True)
class QueryVariationOptions:
    depth: int = setting(DEFAULT_DEPTH, minimum=0,
                         help="candidates per query scored under both queries (0: judged "
                              "documents only)")
    synonyms: str = setting(SYNONYM_SOURCES[0], choices=SYNONYM_SOURCES,
                            help="qvp:synonym's source: WordNet (offline, Debian's "
                                 "wordnet-base) or counter-fitted vectors (Penha et al.)")
    counter_fitted: str | None = setting(None, help="counter-fitted-vectors.txt for "
                                         "qvp.synonyms=counter-fitted (default: download)")


@dataclass(frozen=True)
class _WordNetData:
    """qvp:synonym's WordNet requirement: a data directory, not a Python module."""

    module: str = "WordNet"
    extra: str = "nlp"
    why: str = "its database files"

    def missing(self) -> bool:
        from abnirml.text.wordnet import wordnet_dir

        return wordnet_dir() is None

    def message(self, who: str) -> str:
        return (f"{who} needs the WordNet database: apt-get install wordnet-base (or "
                "'make wordnet-deps'), or set ABNIRML_WORDNET to a folder of WordNet 3.0 "
                "index.*, data.* and cntlist.rev files, or --option qvp.synonyms=counter-fitted")


WORDNET = _WordNetData()


def _options(context: ProbeContext) -> QueryVariationOptions:
    return context.family_options("qvp", QueryVariationOptions)


def _depth(context: ProbeContext) -> int:
    return int(_options(context).depth)


def variation_context(context: ProbeContext, needs: str) -> VariationContext:
    """The generators' inputs, built once per run (shared by the probes)."""
    stopwords = context.analyzer.stopword_set
    if needs == "idf":
        return VariationContext(stopwords=stopwords, idf=context.memo(
            "qvp:idf", lambda: _idf_function(context)))
    if needs == "synonyms":
        return VariationContext(stopwords=stopwords, synonyms=context.memo(
            "qvp:synonyms", lambda: _synonym_source(context)))
    return VariationContext(stopwords=stopwords)


def _synonym_source(context: ProbeContext) -> Any:
    """The configured synonym source, answers memoised per query (and, for the WordNet
    source, kept in the run's parse store: see :func:`_stored_synonyms`)."""
    from abnirml.probes.query_variation import synonyms as sources

    options = _options(context)
    if options.synonyms != "counter-fitted" and context.parse_cache is not None:
        from abnirml.text.wordnet import wordnet_dir

        folder = wordnet_dir()
        if folder is not None:
            return _stored_synonyms(context, folder, sources.context_check_available())
    return _built_synonym_source(context)


def _stored_synonyms(context: ProbeContext, wordnet: Any, checked: bool) -> Any:
    """The WordNet source's answers read from the parse store when an earlier run with the
    same inputs stored them, so that a rerun loads neither spaCy, the word vectors nor the
    sentence model. The store's key names every input of an answer: the spaCy pipeline
    (the store's own namespace), the WordNet files, the stopwords, the rule and its
    thresholds, and the packaged models' versions."""
    import hashlib
    from functools import lru_cache

    from abnirml.probes.query_variation import synonyms as sources

    stopwords = context.analyzer.stopword_set
    built: list[Any] = []

    def source() -> Any:
        if not built:
            built.append(_built_synonym_source(context))
        return built[0]

    inputs = hashlib.blake2b(digest_size=12)
    for part in (sources.ANSWERS_VERSION, str(wordnet), _files_identity(wordnet),
                 "\x00".join(sorted(stopwords)), sources.rule_identity(checked)):
        inputs.update(part.encode("utf-8", "surrogatepass") + b"\x01")
    kind = f"qvp-synonym|{inputs.hexdigest()}"

    def answer(query: str) -> Any:
        found = context.parse_cache.get_or_build(
            kind, [query], lambda missing: [source()(q) for q in missing],
            sources.encode_options, sources.decode_options)
        return found[query]

    memo = lru_cache(maxsize=None)(answer)
    memo.rule = "context" if checked else "usual-sense"          # type: ignore[attr-defined]
    return memo


def _files_identity(folder: Any) -> str:
    """Names, sizes and modification times of a folder's files: what changes when a
    database is replaced."""
    from pathlib import Path

    entries = sorted(p for p in Path(folder).iterdir() if p.is_file())
    return ";".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in entries)


def _built_synonym_source(context: ProbeContext) -> Any:
    """The configured synonym source, loaded now, answers memoised per query."""
    from functools import lru_cache

    from abnirml.errors import MissingExtra
    from abnirml.probes.query_variation import synonyms as sources

    options = _options(context)
    stopwords = context.analyzer.stopword_set
    source: sources.CounterFittedSynonyms | sources.WordNetSynonyms
    if options.synonyms == "counter-fitted":
        source = sources.load_counter_fitted(
            sources.counter_fitted_path(options.counter_fitted), stopwords)
    else:
        from abnirml.text.wordnet import load_wordnet

        wordnet = load_wordnet()
        if wordnet is None:
            raise MissingExtra(WORDNET.message("qvp:synonym"), WORDNET.extra)
        source = sources.WordNetSynonyms(wordnet, stopwords,
                                         context=sources.load_context_check())
    memo = lru_cache(maxsize=None)(source)
    memo.rule = getattr(source, "rule", "counter-fitted")        # type: ignore[attr-defined]
    return memo


def _idf_function(context: ProbeContext) -> Callable[[str], float]:
    """idf of a query word under the run's analysis and the collection's statistics — the
    ones the lexical rankers use, built once per run: the highest log(N / df) among the
    word's analysed terms (a stopword, or a word no document holds, gets 0 and is dropped
    first)."""
    env = context.ranker_env
    if env is not None and getattr(env, "analyzer", None) is not None:
        stats = env.collection_stats()
        analyzer = env.analyzer
    else:
        from abnirml.data.stats import CollectionStats

        analyzer = context.analyzer
        stats = CollectionStats.build(context.collection.doc_texts(), analyzer)

    def idf(word: str) -> float:
        values = [math.log(stats.num_docs / df) for term in analyzer.analyze(word)
                  if (df := stats.df.get(term, 0))]
        return max(values, default=0.0)

    return idf


def pools(context: ProbeContext, depth: int) -> dict[str, list[str]]:
    """qid → its documents with text: top ``depth`` candidates, then judged ones."""
    collection = context.collection

    def build() -> dict[str, list[str]]:
        ranking = context.candidate_docnos() if depth > 0 else {}
        out: dict[str, list[str]] = {}
        for qid in sorted(collection.queries):
            docs = [d for d in ranking.get(qid, [])[:depth] if d in collection.docs]
            docs += [d for d in collection.qrels.get(qid, {}) if d in collection.docs]
            if docs:
                out[qid] = list(dict.fromkeys(docs))
        return out

    return context.memo(f"qvp:pools:{depth}", build)


class _VariationMeta:
    """Rebuilds one sample's metadata on demand (a plain object, so a table built in a
    worker process can be handed back)."""

    def __init__(self, grades: list[float], qids: list[str], docnos: list[str],
                 texts: list[str], varied: np.ndarray):
        self.grades = grades
        self.qids = qids
        self.docnos = docnos
        self.texts = texts
        self.varied = varied

    def __call__(self, i: int) -> dict[str, Any]:
        g = self.grades[i]
        return {"qid": self.qids[i], "docno": self.docnos[i], "docno2": self.docnos[i],
                "grade": None if math.isnan(g) else int(g),
                "query_variation": self.texts[self.varied[i]]}


@dataclass(frozen=True)
class QueryVariationProbe(KeyedProbe):
    """One query variation applied to every query (see the module docstring)."""

    family: ClassVar[str] = "qvp"

    key: str

    @property
    def suffix(self) -> str:
        return self.key

    @property
    def label(self) -> str:
        return VARIATIONS[self.key][0]

    @property
    def requires(self) -> tuple[Any, ...]:
        return (SPACY,) if VARIATIONS[self.key][2] == "synonyms" else ()

    def unavailable(self, settings: Mapping[str, Any]) -> str | None:
        """Why ``qvp:synonym`` cannot run under ``settings`` (no WordNet database and no
        other source chosen), so that ``all`` or ``qvp`` leave it out with that reason;
        named explicitly, the run stops with the same line instead."""
        if VARIATIONS[self.key][2] != "synonyms":
            return None
        options = settings.get("qvp")
        if options is not None and options.synonyms != "wordnet":
            return None
        return WORDNET.message(self.name) if WORDNET.missing() else None

    def sample_table(self, context: ProbeContext) -> SampleTable:
        _, generate, needs = VARIATIONS[self.key]
        depth = _depth(context)
        text_context = variation_context(context, needs)
        collection = context.collection
        pool: dict[str, int] = {}
        q1: list[int] = []
        q2: list[int] = []
        docs: list[int] = []
        grades: list[float] = []
        qids: list[str] = []
        docnos: list[str] = []
        skipped: Counter[str] = Counter()
        synonym_counts: Counter[str] = Counter()
        for qid, pool_docs in pools(context, depth).items():
            query = collection.queries[qid]
            if text_context.synonyms is not None:
                found = text_context.synonyms(query)
                synonym_counts["content_words"] += found.content_words
                synonym_counts["without_synonym"] += found.without_synonym
            varied = generate(query, text_context, context.rng(f"{self.name}\x00{qid}"))
            if varied is None:
                skipped["not-applicable"] += 1
                continue
            if varied == query:
                skipped["unchanged"] += 1
                continue
            v = pool.setdefault(varied, len(pool))
            o = pool.setdefault(query, len(pool))
            judged = collection.qrels.get(qid, {})
            for docno in pool_docs:
                q1.append(v)
                q2.append(o)
                docs.append(pool.setdefault(collection.docs[docno], len(pool)))
                grade = judged.get(docno)
                grades.append(float("nan") if grade is None else float(grade))
                qids.append(qid)
                docnos.append(docno)
        doc_index = np.asarray(docs, dtype=np.int64)
        texts = list(pool)
        query_texts = np.asarray(q2, dtype=np.int64)
        varied_texts = np.asarray(q1, dtype=np.int64)

        record: dict[str, Any] = {"qvp_depth": depth}
        if text_context.synonyms is not None:
            record["synonym_source"] = _options(context).synonyms
            record["synonym_rule"] = getattr(text_context.synonyms, "rule", "")
            record["synonym_content_words"] = synonym_counts["content_words"]
            record["synonym_words_without"] = synonym_counts["without_synonym"]

        meta = _VariationMeta(grades, qids, docnos, texts, varied_texts)
        return SampleTable(texts=texts, query=query_texts, doc1=doc_index, doc2=doc_index.copy(),
                           grade=np.asarray(grades, dtype=np.float64), skipped=skipped,
                           meta=meta, query1=varied_texts,
                           extra={"qids": np.asarray(qids, dtype=object),
                                  "qrels": {q: collection.qrels.get(q, {}) for q in
                                            dict.fromkeys(qids)},
                                  "record": record})

    def samples(self, context: ProbeContext) -> Iterator[Sample | Skip]:
        """The samples, with the varied query in ``meta["query_variation"]`` (the engine
        uses :meth:`sample_table`, which scores doc1 under that query)."""
        table = self.sample_table(context)
        for reason, count in table.skipped.items():
            for _ in range(count):
                yield Skip(reason)
        for i in range(len(table)):
            yield table.sample(i)


def available() -> list[QueryVariationProbe]:
    return [QueryVariationProbe(key) for key in VARIATIONS]


# --------------------------------------------------------------------------- nDCG@10


def ndcg_at(scores: np.ndarray, gains: np.ndarray, docnos: np.ndarray, k: int = NDCG_DEPTH,
            ideal_gains: np.ndarray | None = None) -> float:
    """nDCG@k of ranking ``scores`` with linear gains; NaN when the ideal holds no positive
    gain. The ideal ranking is built from ``ideal_gains`` — trec_eval's choice, every
    judgment of the query, including documents the pool lacks — or, when None, from the
    pool's own gains. Tied scores are ordered as trec_eval (and so the effectiveness table,
    through ir_measures) orders them: by docno, descending."""
    docno_rank = np.unique(np.asarray(docnos), return_inverse=True)[1].reshape(-1)
    order = np.lexsort((-docno_rank, -scores))[:k]
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = float((gains[order] * discounts[:order.size]).sum())
    pool = gains if ideal_gains is None else np.asarray(ideal_gains, dtype=np.float64)
    ideal = np.sort(np.maximum(pool, 0.0))[::-1][:k]
    idcg = float((ideal * discounts[:ideal.size]).sum())
    return dcg / idcg if idcg > 0 else float("nan")


def ndcg_change(table: SampleTable, score1: np.ndarray, score2: np.ndarray
                ) -> dict[str, Any]:
    """Mean nDCG@10 under the original query (score2) and the variation (score1), and their
    difference, over the queries with a relevant judgment. The ideal ranking is trec_eval's
    (every judgment of the query, ``NDCG_IDEAL``), so a query whose relevant documents lack
    text scores below 1 even when ranked perfectly, exactly as trec_eval would score it."""
    qids = table.extra["qids"]
    qrels = table.extra.get("qrels", {})
    gains = np.nan_to_num(table.grade, nan=0.0)
    meta = table.meta
    assert meta is not None, "a variation table rebuilds each sample's metadata"
    docnos = np.array([meta(i)["docno"] for i in range(len(table))], dtype=object)
    before, after = [], []
    for qid in dict.fromkeys(qids.tolist()):
        mask = qids == qid
        judged = qrels.get(qid)
        ideal = None if judged is None else np.array(list(judged.values()), dtype=np.float64)
        original = ndcg_at(score2[mask], gains[mask], docnos[mask].astype(str),
                           ideal_gains=ideal)
        if math.isnan(original):
            continue
        before.append(original)
        after.append(ndcg_at(score1[mask], gains[mask], docnos[mask].astype(str),
                             ideal_gains=ideal))
    fields: dict[str, Any] = {"ndcg10_ideal": NDCG_IDEAL}
    if not before:
        return {**fields, "ndcg10_original": None, "ndcg10_variation": None,
                "ndcg10_change": None, "ndcg10_queries": 0}
    b, a = float(np.mean(before)), float(np.mean(after))
    return {**fields, "ndcg10_original": round(b, 6), "ndcg10_variation": round(a, 6),
            "ndcg10_change": round(a - b, 6), "ndcg10_queries": len(before)}


def attach_ndcg_change(result: Any) -> None:
    """Add the nDCG@10 fields to every qvp record (all subsets: they describe the rankings)."""
    cache: dict[tuple[str, str], dict[str, Any]] = {}
    for record in result.records:
        if record.get("family") != "qvp" or record["probe"] not in result.tables:
            continue
        key = (record["probe"], record["ranker"])
        if key not in cache:
            scores = result.probe_scores[key]
            if getattr(scores, "preferences", False):
                # a pairwise or listwise ranker's preference against ½ ranks nothing
                cache[key] = {"ndcg10_ideal": NDCG_IDEAL, "ndcg10_original": None,
                              "ndcg10_variation": None, "ndcg10_change": None,
                              "ndcg10_queries": 0}
            else:
                cache[key] = ndcg_change(result.tables[record["probe"]], scores.score1,
                                         scores.score2)
        record.update(cache[key])
