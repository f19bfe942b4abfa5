"""Textual-manipulation probes (ABNIRML Table 2 and §2.2.2 of the journal version, the
duplication test of Rennings et al., and Rau & Kamps' query-term masking).

Every judged (query, document) pair whose document text is known gives one sample:
**d1 = the manipulated text, d2 = the original document**, so that a positive score means
the ranker prefers the manipulated text — the sign of the papers' tables. (The engine's
effect is R(q, d1) − R(q, d2).) ``meta`` holds ``qid``, ``docno`` (of the original, which is
also ``docno2``) and ``grade``, which places the sample in the all / non-relevant / relevant
subsets. A manipulation that does not apply is skipped as ``not-applicable``; one that
leaves the text identical is skipped as ``unchanged``; judged documents without text are
counted as ``missing-text``.

Randomness: each sample draws from its own generator, seeded by (run seed, probe name, qid,
docno), so a sample never depends on which other samples or probes are built.

Probe options (``--option tmp.KEY=VALUE``), typed and validated in
:class:`~abnirml.probes.built_in.ManipulationOptions`:

``tmp.sample``
    Use N judged pairs drawn at random (seeded) instead of all — the same pairs for every
    manipulation probe. Handy for expensive rankers.
``tmp.typo_rate``
    Probability that a word with a known misspelling is misspelt (default 0.1; see
    :func:`~abnirml.probes.manipulation.edits.typos`).
``tmp.mask_token``
    The token Only-Q / Drop-Q put in place of terms (default ``[MASK]``). Probe texts are
    shared by all rankers of a run, so one token serves them all; the masking analysis
    (``abnirml masking``) uses each ranker's own ``hints.mask_token`` instead.
``tmp.doct5query_file`` / ``tmp.doct5query_source``
    DocT5Query expansions (see :mod:`abnirml.probes.manipulation.doct5query`).
``tmp.nonrel_donor``
    Where ``add-nonrel-sentence`` takes its sentence (see :data:`DONOR_MODES`).
``tmp.nonrel_grade``
    The judged grade of donor documents (default 0). On a 1–4 scale such as ANTIQUE's no
    document is graded 0; the original ABNIRML code used grade 1 there (``AddSent(rel=1)``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from abnirml.probes.base import KeyedProbe, ProbeContext, SampleTable
from abnirml.probes.family import CODESPELL, Requirement
from abnirml.probes.family import SPACY as SPACY_MODULE
from abnirml.probes.manipulation import edits as m
from abnirml.probes.manipulation import original_edits as mo
from abnirml.probes.parse_cache import store_or_memory
from abnirml.samples import Sample, Skip
from abnirml.settings import setting
from abnirml.text.parsed import ParsedText

SPACY = "spacy"
TYPOS = "typos"
EXPANSIONS = "expansions"
DONORS = "donors"


#: Where ``add-nonrel-sentence`` takes its sentence from (``--option tmp.nonrel_donor=…``):
#: ``same-query`` — a grade-0 document of the same query (ABNIRML's choice, the default);
#: ``other-query`` — a grade-0 document judged only for other queries;
#: ``no-query-terms`` — a grade-0 document without any of the query's terms (same query
#: when one exists, else any query's).
DONOR_MODES = ("same-query", "other-query", "no-query-terms")


@dataclass(frozen=True)
class ManipulationOptions:
    sample: int | None = setting(None, minimum=1,
                                 help="use N judged pairs drawn at random (seeded)")
    typo_rate: float = setting(0.1, minimum=0.0, maximum=1.0,
                               help="probability that a word with a known misspelling is "
                                    "misspelt")
    mask_token: str = setting("[MASK]", help="the token Only-Q / Drop-Q put in place of terms")
    doct5query_file: str | None = setting(None, help="DocT5Query expansions file")
    doct5query_source: Any = setting(None, help="a ranker spec or object that writes expansions")
    nonrel_donor: str = setting(DONOR_MODES[0], choices=DONOR_MODES,
                                help="donors of add-nonrel-sentence: same-query (ABNIRML), "
                                     "other-query or no-query-terms")
    nonrel_grade: int = setting(0, minimum=0,
                                help="the judged grade of add-nonrel-sentence's donor "
                                     "documents (1 for ANTIQUE's 1-4 scale)")


@dataclass(frozen=True)
class Spec:
    key: str
    label: str
    function: m.Manipulation
    needs: frozenset[str] = frozenset()
    #: the manipulation damages the text, so the original document should still win
    #: (training-triple export, ``abnirml.triples``); False: a ranker may rightly be
    #: indifferent to it, or it adds query text, so it makes no claim
    damaging: bool = False


def _spec(key: str, label: str, function: m.Manipulation, *needs: str,
          damaging: bool = False) -> Spec:
    return Spec(key, label, function, frozenset(needs), damaging)


#: Every manipulation probe, in the order of the papers' tables. Names are public.
SPECS: tuple[Spec, ...] = (
    _spec("remove-stops", "Remove stopwords", m.remove_stops),
    _spec("remove-punct", "Remove punctuation", m.remove_punct),
    _spec("remove-stops-punct", "Remove stops/punct.", m.remove_stops_punct),
    _spec("lemmatize", "Lemmatize", m.lemmatize, SPACY),
    _spec("shuffle-words", "Shuf. words", m.shuffle_words, damaging=True),
    _spec("shuffle-words-in-sentences", "Shuf. words (in sents.)", m.shuffle_words_in_sentences,
          damaging=True),
    _spec("shuffle-prepositions", "Shuf. prepositions", m.shuffle_prepositions, SPACY,
          damaging=True),
    _spec("shuffle-sentences", "Shuf. sent. order", m.shuffle_sentences, damaging=True),
    _spec("reverse-words", "Reverse words", m.reverse_words, damaging=True),
    _spec("reverse-sentences", "Reverse sent. order", m.reverse_sentences, damaging=True),
    _spec("swap-noun-chunks", "Swap noun chunks", m.swap_noun_chunks, SPACY, damaging=True),
    _spec("replace-with-query", "Replace with query", m.replace_with_query),
    _spec("add-doct5query", "Add DocT5Query terms", m.add_doct5query, EXPANSIONS),
    _spec("add-nonrel-sentence", "Add non-rel. sent.", m.add_nonrel_sentence, DONORS,
          damaging=True),
    _spec("prepend-query", "Prepend query", m.prepend_query),
    _spec("append-query", "Append query", m.append_query),
    _spec("typos", "Typos", m.typos, TYPOS, damaging=True),
    _spec("duplicate-k2", "Duplicate (k = 2)", m.duplicate(2)),
    _spec("duplicate-k3", "Duplicate (k = 3)", m.duplicate(3)),
    _spec("duplicate-k4", "Duplicate (k = 4)", m.duplicate(4)),
    _spec("only-query", "Only-Q (mask non-query terms)", m.only_query),
    _spec("drop-query", "Drop-Q (mask query terms)", m.drop_query, damaging=True),
    # the original ABNIRML code's further manipulations (original_edits)
    _spec("case-fold", "Case fold", mo.case_fold),
    _spec("delete-sentence-start", "Delete first sent.", mo.delete_sentence("start")),
    _spec("delete-sentence-end", "Delete last sent.", mo.delete_sentence("end")),
    _spec("delete-sentence-random", "Delete random sent.", mo.delete_sentence("random")),
    _spec("add-nonrel-sentence-start", "Add non-rel. sent. (start)",
          mo.add_nonrel_sentence_start, DONORS, damaging=True),
    _spec("shuffle-words-keep-noun-chunks", "Shuf. words (keep NPs)",
          mo.shuffle_words_keep_noun_chunks, SPACY, damaging=True),
    _spec("shuffle-words-in-sentences-keep-noun-chunks", "Shuf. words (in sents., keep NPs)",
          mo.shuffle_words_in_sentences_keep_noun_chunks, SPACY, damaging=True),
    _spec("reverse-noun-chunks", "Reverse noun chunks", mo.reverse_noun_chunks, SPACY,
          damaging=True),
    _spec("swap-number-chunks", "Swap number noun chunks", mo.swap_number_chunks, SPACY,
          damaging=True),
    _spec("typos-nostops", "Typos (no stopwords)", m.typos_no_stopwords, TYPOS, damaging=True),
)


@dataclass(frozen=True)
class ManipulationProbe(KeyedProbe):
    """One manipulation applied to every judged document (see the module docstring)."""

    family: ClassVar[str] = "tmp"

    spec: Spec

    @property
    def suffix(self) -> str:
        return self.spec.key

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def prefers(self) -> str | None:
        """``"doc2"`` (the original) after a damaging manipulation, else None (no claim)."""
        return "doc2" if self.spec.damaging else None

    @property
    def requires(self) -> tuple[Requirement, ...]:
        """Optional dependencies, checked before a run starts."""
        return tuple(req for need, req in ((SPACY, SPACY_MODULE), (TYPOS, CODESPELL))
                     if need in self.spec.needs)

    def unavailable(self, settings: Mapping[str, Any]) -> str | None:
        """Why this probe has nothing to measure under a run's typed ``settings`` (family
        key → options), or None. Only ``tmp:add-doct5query`` can lack its input: without
        expansions every sample would be skipped, so a pattern such as ``all`` leaves it
        out instead of reporting an empty row."""
        if EXPANSIONS not in self.spec.needs:
            return None
        options = settings.get("tmp")
        if options is not None and (options.doct5query_file or options.doct5query_source):
            return None
        return ("no DocT5Query expansions were given; add --option tmp.doct5query_file=PATH "
                "(or tmp.doct5query_source) to include it")

    def samples(self, context: ProbeContext) -> Iterator[Sample | Skip]:
        collection = context.collection
        judged = judged_pairs(context)
        text_context = manipulation_context(context, self.spec.needs)
        if EXPANSIONS in self.spec.needs and not text_context.expansions:
            warnings.warn(f"{self.name}: no DocT5Query expansions, so every sample is skipped "
                          "as not-applicable; pass --option tmp.doct5query_file=PATH (JSON lines "
                          '{"docno", "expansion"} or docno<TAB>text) or a tmp.doct5query_source',
                          stacklevel=2)
        for _ in range(missing_text(context)):
            yield Skip("missing-text")
        function = self.spec.function
        for qid, docno, grade in judged:
            query = collection.queries[qid]
            original = collection.docs[docno]
            meta = {"qid": qid, "docno": docno, "docno2": docno, "grade": grade}
            rng = context.rng(f"{self.name}\x00{qid}\x00{docno}")
            manipulated = function(query, original, text_context, rng)
            if manipulated is None:
                yield Skip("not-applicable", meta)
            elif manipulated == original:
                yield Skip("unchanged", meta)
            else:
                yield Sample(query, manipulated, original, meta)


@dataclass(frozen=True)
class DonorProbe(ManipulationProbe):
    """``add-nonrel-sentence``: also reports how often the donated sentence holds a query term.

    A donor sentence that shares a term with the query is not "non-relevant" to a lexical
    ranker: on TREC DL that is the common case for same-query donors and flips BM25's sign
    against the paper. The rate and the donor choice (``--option tmp.nonrel_donor=…``) go into
    every result record of the probe.
    """

    def sample_table(self, context: ProbeContext) -> SampleTable:
        from abnirml.probes.base import table_from_samples

        table = table_from_samples(self.samples(context))
        table.extra["record"] = {"nonrel_donor": donor_mode(context),
                                 "donor_query_term_rate": donor_query_term_rate(table, context)}
        return table


def available() -> list[ManipulationProbe]:
    return [DonorProbe(spec) if DONORS in spec.needs else ManipulationProbe(spec)
            for spec in SPECS]


# --------------------------------------------------------------------------- shared inputs


def judged_pairs(context: ProbeContext) -> list[tuple[str, str, int]]:
    """The judged pairs every manipulation probe uses (all, or a seeded ``tmp_sample``)."""

    def build() -> list[tuple[str, str, int]]:
        pairs = list(context.collection.judged())
        size = context.family_options("tmp", ManipulationOptions).sample
        if size is None or size >= len(pairs):
            return pairs
        chosen = context.rng("tmp:sample").choice(len(pairs), size=size, replace=False)
        return [pairs[i] for i in sorted(chosen.tolist())]

    return context.memo("tmp:judged", build)


def missing_text(context: ProbeContext) -> int:
    if context.family_options("tmp", ManipulationOptions).sample:
        return 0
    return int(getattr(context.collection, "skipped", {}).get("judged_without_text", 0))


def manipulation_context(context: ProbeContext, needs: frozenset[str]) -> m.ManipulationContext:
    """The :class:`~.edits.ManipulationContext` a probe needs, from shared parts."""
    settings = context.family_options("tmp", ManipulationOptions)
    base = context.memo("tmp:base", lambda: m.ManipulationContext(
        stopwords=context.analyzer.stopword_set, stem=context.analyzer.stem,
        mask_token=settings.mask_token, typo_rate=settings.typo_rate))
    extra: dict[str, Any] = {}
    if SPACY in needs:
        extra["parses"] = spacy_parses(context)
    if TYPOS in needs:
        from abnirml.text.typos import load_misspellings

        extra["typo_map"] = load_misspellings()
    if EXPANSIONS in needs:
        extra["expansions"] = context.memo("tmp:expansions", lambda: _expansions(context))
    if DONORS in needs:
        donors, fallback = donor_pool(context, donor_mode(context), settings.nonrel_grade)
        extra["donors"] = donors
        extra["fallback_donors"] = fallback
    return replace(base, **extra) if extra else base


#: how the manipulations' parses are made (the parse store's key): NER off, tokens + chunks
PARSE_KIND = f"tmp:tokens+noun-chunks;disabled={','.join(m.SPACY_UNUSED)}"


def spacy_parses(context: ProbeContext) -> dict[str, ParsedText]:
    """What the manipulations read from spaCy parses of every judged document used: made
    once per run in batches, or read back from the run's parse store."""

    def parse(texts: list[str]) -> list[ParsedText]:
        return [ParsedText.from_doc(doc) for doc in m.parse_texts(texts)]

    def build() -> dict[str, ParsedText]:
        docs = context.collection.docs
        texts = list(dict.fromkeys(docs[d] for _, d, _ in judged_pairs(context)))
        found = store_or_memory(context.parse_cache).get_or_build(
            PARSE_KIND, texts, parse, ParsedText.to_json, ParsedText.from_json)
        return {text: found[text] for text in texts}

    return context.memo("tmp:spacy-parses", build)


def _expansions(context: ProbeContext) -> dict[str, str]:
    from abnirml.probes.manipulation.doct5query import expansions_for

    docnos = dict.fromkeys(d for _, d, _ in judged_pairs(context))
    settings = context.family_options("tmp", ManipulationOptions)
    found, _ = expansions_for(settings.doct5query_file, settings.doct5query_source,
                              context.collection, docnos, env=context.ranker_env)
    return found




def donor_mode(context: ProbeContext) -> str:
    return context.family_options("tmp", ManipulationOptions).nonrel_donor


def donor_pool(context: ProbeContext, mode: str, donor_grade: int
               ) -> tuple[dict[str, list[str]], list[str]]:
    """Donor document texts judged ``donor_grade`` per query text under a donor ``mode``
    (:data:`DONOR_MODES`), and the fallback for queries without; built once per run and
    (mode, grade), so another probe that asks for the same donors shares them."""
    return context.memo(f"tmp:donors:{mode}:{donor_grade}",
                        lambda: _donors(context, mode, donor_grade))


def _donors(context: ProbeContext, mode: str, donor_grade: int
            ) -> tuple[dict[str, list[str]], list[str]]:
    collection = context.collection
    per_query: dict[str, list[str]] = {}
    judged_texts: dict[str, set[str]] = {}
    everywhere: dict[str, None] = {}
    for qid, docno, grade in collection.judged():
        text = collection.docs[docno]
        query = collection.queries[qid]
        judged_texts.setdefault(query, set()).add(text)
        if grade != donor_grade:
            continue
        per_query.setdefault(query, []).append(text)
        everywhere.setdefault(text)
    pool = list(everywhere)
    if mode == "same-query":
        return per_query, pool
    if mode == "other-query":
        return {q: [t for t in pool if t not in judged_texts[q]] for q in judged_texts}, []
    analyzer = context.analyzer
    terms_of = {t: set(analyzer.analyze_cached(t)) for t in pool}
    chosen: dict[str, list[str]] = {}
    for query in judged_texts:
        keys = set(analyzer.analyze(query))
        same = [t for t in per_query.get(query, ()) if not keys & terms_of[t]]
        chosen[query] = same or [t for t in pool if not keys & terms_of[t]]
    return chosen, []


def donor_query_term_rate(table: SampleTable, context: ProbeContext) -> float | None:
    """Share of samples whose appended sentence shares an analysed term with the query."""
    if not len(table):
        return None
    analyzer = context.analyzer
    hits = 0
    for i in range(len(table)):
        query = table.texts[table.query[i]]
        original = table.texts[table.doc2[i]]
        appended = table.texts[table.doc1[i]][len(original):]
        hits += bool(set(analyzer.analyze(query)) & set(analyzer.analyze(appended)))
    return round(hits / len(table), 6)
