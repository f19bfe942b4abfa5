"""Ranking-bias probes: one controlled pair ⟨q, d1, d2⟩ per judged passage (or per
judged-relevant passage and a foil drawn for it), for the shortcuts Fayyaz et al. (ACL 2025,
ColDeR) found in dense retrievers and Alaofi et al. (SIGIR-AP 2024) in LLM assessors.

Sign: d1 is the edited text or the foil, d2 the original or the judged-relevant passage,
so a positive score means the ranker prefers the edit (the engine's effect is
R(q, d1) − R(q, d2)); each probe's ``paper_direction`` is the sign that shows the bias its
source reports (``bias:literal-match`` and ``bias:brevity`` show it as a negative score).

Which passages: the single-passage probes that ask about any passage (literal match,
repetition, injected instruction) use every judged passage with text, broken down by grade
like the manipulation probes; early evidence and brevity, whose claims are about relevant
evidence, use the judged-relevant passages (grade ≥ ``bias.relevant_grade``); the *foil*
probes pair each judged-relevant passage (d2) with a foil made from one judged non-relevant
passage of the same query (grade ≤ ``bias.nonrelevant_grade``), drawn once per relevant
passage and shared by the three foil probes, so their win rates compare the same pairs.
Records of the foil probes carry the foil win rate (:mod:`abnirml.evaluation.analyses.foil_wins`);
``bias:unedited-foil`` gives the rate of the same pairs before any edit, the baseline the
edited foils' rates are read against.

Randomness: every draw comes from a generator seeded by (run seed, what is drawn, qid,
docno), so a sample never depends on which other samples or probes run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from abnirml.errors import ConfigError
from abnirml.probes.base import KeyedProbe, ProbeContext, SampleTable, table_from_samples
from abnirml.probes.bias import edits as e
from abnirml.probes.family import SPACY, Requirement
from abnirml.samples import Sample, Skip
from abnirml.settings import setting

FAMILY = "bias"
#: the probe whose pairs ``bias:brevity`` rebuilds (on relevant passages, with donors judged
#: only for other queries): its seeds are shared, so both probes write the same texts
ADD_NONREL = "tmp:add-nonrel-sentence"
OTHER_QUERY = "other-query"

FAYYAZ = ("Fayyaz et al., Collapse of Dense Retrievers: Short, Early, and Literal Biases "
          "Outranking Factual Evidence (ACL 2025)")
ALAOFI = ("Alaofi et al., LLMs can be Fooled into Labelling a Document as Relevant "
          "(SIGIR-AP 2024)")
BASELINE = "none: the baseline the foil probes' win rates are read against"


def _instructions_file(value: Any, key: str) -> Any:
    """A phrasing file is read when the option is given, so a bad file stops the run before
    any work (its file and line named)."""
    if value is not None:
        from abnirml.probes.bias.instructions import read_phrasings

        read_phrasings(value)
    return value


@dataclass(frozen=True)
class BiasOptions:
    sample: int | None = setting(None, minimum=1,
                                 help="use N judged passages drawn at random (seeded) instead "
                                      "of all; foils still come from every judged passage")
    relevant_grade: int = setting(2, minimum=0,
                                  help="the lowest grade of a judged-relevant passage (TREC "
                                       "DL: 2)")
    nonrelevant_grade: int = setting(0, minimum=0,
                                     help="the highest grade of a judged non-relevant passage "
                                          "(foils; brevity's donors are judged exactly this)")
    stuffing_k: int = setting(3, minimum=1, maximum=100,
                              help="how many times keyword stuffing appends the query's words")
    foil_repeats: int = setting(2, minimum=1, maximum=100,
                                help="how many times the biased foil states the query's words "
                                     "before its sentence (ColDeR: 2)")
    instructions: str | None = setting(None, check=_instructions_file,
                                       help="a file of instruction phrasings, one per line "
                                            "(default: the four built-in ones)")

    def __post_init__(self) -> None:
        if self.nonrelevant_grade >= self.relevant_grade:
            raise ConfigError(f"bias.nonrelevant_grade={self.nonrelevant_grade} must be below "
                              f"bias.relevant_grade={self.relevant_grade}: a passage cannot "
                              "be a foil and the relevant passage at once")


@dataclass(frozen=True)
class BiasSpec:
    """One probe: what it builds, where its claim comes from, which sign shows the bias."""

    key: str
    label: str
    definition: str
    source: str
    #: +1: the bias the source reports shows as a positive score; −1: as a negative one;
    #: 0: the probe claims no bias (the unedited baseline of the foils)
    paper_direction: int
    #: d1 is a foil and d2 a judged-relevant passage: records carry the foil win rate
    foil: bool
    #: what export-triples may take from the pair ("doc2": the relevant / original wins)
    prefers: str | None
    #: the key findings' sentence when the score is positive / negative
    up: str
    down: str


SPECS: tuple[BiasSpec, ...] = (
    BiasSpec("early-evidence", "Early evidence",
             "a judged-relevant passage of two or more sentences whose sentence that best "
             "matches the query (most distinct query terms, then most occurrences) is moved to "
             "the start (d1) vs to the end (d2); the other sentences keep their order, so "
             "both texts hold the same characters", FAYYAZ, +1, False, None,
             "Prefers a relevant passage with its best-matching sentence first over the same "
             "sentences with it last",
             "Prefers a relevant passage with its best-matching sentence last over the same "
             "sentences with it first"),
    BiasSpec("literal-match", "Literal match",
             "a judged passage with every word that is also a query word replaced by the "
             "synonym the synonym rule picks for it in the query (d1) vs the passage (d2)",
             FAYYAZ, -1, False, None,
             "Prefers a passage whose query words were replaced by synonyms over the literal "
             "original",
             "Prefers the literal passage over the same passage with its query words replaced "
             "by synonyms"),
    BiasSpec("repetition", "Repetition",
             "a judged passage with the rarest query term it holds (fewest documents) written "
             "once more where it first occurs (d1) vs the passage (d2)", FAYYAZ, +1, False,
             None,
             "Prefers a passage with its rarest query term repeated once more",
             "Prefers a passage over the same passage with its rarest query term repeated"),
    BiasSpec("brevity", "Brevity",
             "a judged-relevant passage followed by one sentence of a passage judged "
             "non-relevant only for other queries (d1) vs the passage (d2): the pairs of "
             "tmp:add-nonrel-sentence with tmp.nonrel_donor=other-query, on relevant passages",
             FAYYAZ, -1, False, "doc2",
             "Prefers a relevant passage lengthened by an unrelated sentence over the passage "
             "itself",
             "Prefers a relevant passage over the same passage lengthened by an unrelated "
             "sentence"),
    BiasSpec("unedited-foil", "Unedited foil (baseline)",
             "the judged non-relevant passage the foil probes start from, unedited (d1), vs "
             "the judged-relevant passage of the same query it is paired with (d2): the rate "
             "the edited foils' win rates are to be read against", BASELINE, 0, True, "doc2",
             "Prefers a judged non-relevant passage over a judged-relevant one of the same "
             "query",
             "Prefers a judged-relevant passage over a judged non-relevant one of the same "
             "query"),
    BiasSpec("keyword-stuffing", "Keyword stuffing",
             "a judged non-relevant passage of the query with the query's words appended "
             "bias.stuffing_k times (d1) vs a judged-relevant passage of the same query (d2)",
             ALAOFI, +1, True, "doc2",
             "Prefers a non-relevant passage stuffed with the query's words over a relevant "
             "passage",
             "Prefers a relevant passage over a non-relevant one stuffed with the query's "
             "words"),
    BiasSpec("injected-instruction", "Injected instruction",
             "a judged passage with one instruction sentence appended (d1: a phrasing drawn "
             "from the built-in set or bias.instructions) vs the passage (d2)", ALAOFI, +1,
             False, None,
             "Prefers a passage carrying an instruction to rank it first over the passage "
             "itself",
             "Prefers a passage over the same passage carrying an instruction to rank it "
             "first"),
    BiasSpec("injected-instruction-foil", "Injected instruction (foil)",
             "a judged non-relevant passage of the query with one instruction sentence "
             "appended (d1) vs a judged-relevant passage of the same query (d2)", ALAOFI, +1,
             True, "doc2",
             "Prefers a non-relevant passage carrying an instruction to rank it first over a "
             "relevant passage",
             "Prefers a relevant passage over a non-relevant one carrying an instruction to "
             "rank it first"),
    BiasSpec("biased-foil", "Biased foil",
             "ColDeR's foil: the best-matching sentence of a judged non-relevant passage of "
             "the query, after the query's words in quotes bias.foil_repeats times (short, "
             "early, repeated, literal, without the answer) (d1) vs a judged-relevant passage "
             "of the same query (d2)", FAYYAZ, +1, True, "doc2",
             "Prefers ColDeR's short, early, repetitive, literal foil over a relevant passage",
             "Prefers a relevant passage over ColDeR's short, early, repetitive, literal "
             "foil"),
)
BY_KEY = {spec.key: spec for spec in SPECS}


@dataclass(frozen=True)
class BiasProbe(KeyedProbe):
    """One ranking-bias probe (see the module docstring)."""

    family: ClassVar[str] = FAMILY

    spec: BiasSpec

    @property
    def suffix(self) -> str:
        return self.spec.key

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def definition(self) -> str:
        return self.spec.definition

    @property
    def source(self) -> str:
        return self.spec.source

    @property
    def paper_direction(self) -> int:
        return self.spec.paper_direction

    @property
    def foil(self) -> bool:
        return self.spec.foil

    @property
    def prefers(self) -> str | None:
        return self.spec.prefers

    @property
    def requires(self) -> tuple[Requirement, ...]:
        """The literal-match probe tags queries with spaCy to find their synonyms."""
        return (SPACY,) if self.spec.key == "literal-match" else ()

    def unavailable(self, settings: Mapping[str, Any]) -> str | None:
        """Why literal match cannot run: no WordNet database while the synonym source is
        WordNet (``qvp.synonyms``, shared with ``qvp:synonym``); None for the others."""
        if self.spec.key != "literal-match":
            return None
        options = settings.get("qvp")
        if options is not None and options.synonyms != "wordnet":
            return None
        from abnirml.probes.query_variation.probes import WORDNET

        return WORDNET.message(self.name) if WORDNET.missing() else None

    def samples(self, context: ProbeContext) -> Iterator[Sample | Skip]:
        build = _BUILDERS[self.spec.key]
        yield from build(self, context)

    def sample_table(self, context: ProbeContext) -> SampleTable:
        table = table_from_samples(self.samples(context), self.name)
        record: dict[str, Any] = ({"paper_direction": self.spec.paper_direction}
                                  if self.spec.paper_direction else {})
        if self.spec.key == "literal-match":
            record.update(_synonym_record(context))
        table.extra["record"] = record
        return table


def available() -> list[BiasProbe]:
    return [BiasProbe(spec) for spec in SPECS]


# --------------------------------------------------------------------------- shared inputs


def options(context: ProbeContext) -> BiasOptions:
    return context.family_options(FAMILY, BiasOptions)


def judged_pairs(context: ProbeContext) -> list[tuple[str, str, int]]:
    """The judged (qid, docno, grade) every bias probe starts from: all with text, or a
    seeded ``bias.sample`` of them (the same for every probe)."""

    def build() -> list[tuple[str, str, int]]:
        pairs = list(context.collection.judged())
        size = options(context).sample
        if size is None or size >= len(pairs):
            return pairs
        chosen = context.rng("bias:sample").choice(len(pairs), size=size, replace=False)
        return [pairs[i] for i in sorted(chosen.tolist())]

    return context.memo("bias:judged", build)


def _missing_text(context: ProbeContext) -> Iterator[Skip]:
    if options(context).sample is None:
        for _ in range(int(getattr(context.collection, "skipped", {})
                           .get("judged_without_text", 0))):
            yield Skip("missing-text")


def _query_terms(context: ProbeContext, query: str) -> frozenset[str]:
    return frozenset(context.analyzer.analyze(query))


def _relevant(context: ProbeContext) -> Iterator[tuple[str, str, int]]:
    floor = options(context).relevant_grade
    return ((q, d, g) for q, d, g in judged_pairs(context) if g >= floor)


def foil_pool(context: ProbeContext) -> dict[str, list[str]]:
    """qid → its judged non-relevant passages with text (every judgment, not the sample)."""
    ceiling = options(context).nonrelevant_grade

    def build() -> dict[str, list[str]]:
        pool: dict[str, list[str]] = {}
        for qid, docno, grade in context.collection.judged():
            if grade <= ceiling:
                pool.setdefault(qid, []).append(docno)
        return pool

    return context.memo(f"bias:foils:{ceiling}", build)


def foil_for(context: ProbeContext, qid: str, relevant: str) -> str | None:
    """The non-relevant passage (docno) the foil probes pair with one relevant passage:
    drawn once per (qid, relevant docno), so every foil probe compares the same passages."""
    found = foil_pool(context).get(qid)
    if not found:
        return None
    return found[int(context.rng(f"bias:foil\x00{qid}\x00{relevant}").integers(len(found)))]


def _phrasings(context: ProbeContext) -> tuple[str, ...]:
    from abnirml.probes.bias.instructions import PHRASINGS, read_phrasings

    path = options(context).instructions
    return context.memo(f"bias:phrasings:{path}",
                        lambda: PHRASINGS if path is None else read_phrasings(path))


def _document_frequency(context: ProbeContext) -> Mapping[str, int]:
    """df per analysed term: the statistics the lexical rankers of the run use."""

    def build() -> Mapping[str, int]:
        env = context.ranker_env
        if env is not None and getattr(env, "analyzer", None) is not None:
            df: Mapping[str, int] = env.collection_stats().df   # the env is untyped
            return df
        from abnirml.data.stats import CollectionStats

        return CollectionStats.build(context.collection.doc_texts(), context.analyzer).df

    return context.memo("bias:df", build)


def _synonyms(context: ProbeContext) -> Any:
    """The run's synonym source, the one ``qvp:synonym`` uses (``qvp.synonyms``): query →
    its replaceable words and their synonyms."""
    from abnirml.probes.query_variation.probes import variation_context

    return variation_context(context, "synonyms").synonyms


def _synonym_record(context: ProbeContext) -> dict[str, Any]:
    """Which synonym source and rule ran, and how many content words of the probe's queries
    had a synonym (over each query once)."""
    from abnirml.probes.query_variation.probes import QueryVariationOptions

    source = _synonyms(context)
    content = without = 0
    queries = context.collection.queries
    for qid in dict.fromkeys(q for q, _, _ in judged_pairs(context)):
        found = source(queries[qid])
        content += found.content_words
        without += found.without_synonym
    return {"synonym_source": context.family_options("qvp", QueryVariationOptions).synonyms,
            "synonym_rule": getattr(source, "rule", ""), "synonym_content_words": content,
            "synonym_words_without": without}


# --------------------------------------------------------------------------- builders


Built = Iterator[Sample | Skip]


def _early_evidence(probe: BiasProbe, context: ProbeContext) -> Built:
    collection = context.collection
    analyze = context.analyzer.analyze
    for qid, docno, grade in _relevant(context):
        query, text = collection.queries[qid], collection.docs[docno]
        meta = {"qid": qid, "docno": docno, "judged_grade": grade}
        placed = e.early_and_late(text, _query_terms(context, query), analyze)
        if isinstance(placed, str):
            yield Skip(placed, meta)
        else:
            yield Sample(query, placed[0], placed[1], meta)


def _word_tags(context: ProbeContext, texts: list[str]) -> dict[str, dict[int, str]]:
    """text → {character offset: coarse POS tag} of its spaCy tokens, for ``texts`` parsed
    in batches or read back from the run's parse store — the manipulation probes' parses
    (same pipeline and kind), so a run holding both parses each passage once."""
    from abnirml.probes.manipulation.edits import parse_texts
    from abnirml.probes.manipulation.probes import PARSE_KIND
    from abnirml.probes.parse_cache import store_or_memory
    from abnirml.text.parsed import ParsedText

    def parse(batch: list[str]) -> list[ParsedText]:
        return [ParsedText.from_doc(doc) for doc in parse_texts(batch)]

    found = store_or_memory(context.parse_cache).get_or_build(
        PARSE_KIND, texts, parse, ParsedText.to_json, ParsedText.from_json)
    return {text: {t.idx: t.pos_ for t in found[text]} for text in texts}


def _query_replacements(context: ProbeContext, query: str) -> dict[str, tuple[str, str]]:
    """The query's replaceable words (lowercase) → (synonym, the word's POS in the query)."""
    from abnirml.text.nlp import parse

    def build() -> dict[str, tuple[str, str]]:
        choices = _synonyms(context)(query).choices
        if not choices:
            return {}
        tags = {t.idx: t.pos_ for t in parse(query)}
        return {query[a:b].lower(): (new, tags.get(a, "")) for (a, b), new in choices}

    return context.memo(f"bias:replacements:{query}", build)


def _literal_match(probe: BiasProbe, context: ProbeContext) -> Built:
    """Only passage words the tagger reads as the query word's part of speech are replaced:
    a synonym for the noun "cost" ("price") would break "floors can cost $2"."""
    collection = context.collection
    yield from _missing_text(context)
    chosen: list[tuple[str, str, int, dict[str, tuple[str, str]]]] = []
    for qid, docno, grade in judged_pairs(context):
        chosen.append((qid, docno, grade,
                       _query_replacements(context, collection.queries[qid])))
    wanted = [collection.docs[docno] for _, docno, _, found in chosen if found and any(
        word.lower() in found for word in _words(collection.docs[docno]))]
    tags = _word_tags(context, list(dict.fromkeys(wanted)))
    for qid, docno, grade, found in chosen:
        query, text = collection.queries[qid], collection.docs[docno]
        meta = {"qid": qid, "docno": docno, "docno2": docno, "grade": grade}
        if not found:
            yield Skip("no-synonym", meta)
            continue
        edited, replaced = e.replace_words(text, {w: new for w, (new, _) in found.items()},
                                           _same_tag(tags.get(text, {}), found))
        if not replaced:
            yield Skip("no-query-word", meta)
        else:
            yield Sample(query, edited, text, {**meta, "replaced": replaced})


def _same_tag(at: Mapping[int, str], found: Mapping[str, tuple[str, str]]
              ) -> Callable[[int, str], bool]:
    """Whether the passage word at a character offset has the query word's POS tag."""

    def allowed(start: int, word: str) -> bool:
        return at.get(start) == found[word][1]

    return allowed


def _words(text: str) -> list[str]:
    from abnirml.text.tokenize import term_spans

    return [text[a:b] for a, b in term_spans(text)]


def _repetition(probe: BiasProbe, context: ProbeContext) -> Built:
    collection = context.collection
    analyze = context.analyzer.analyze
    df = _document_frequency(context)
    yield from _missing_text(context)
    for qid, docno, grade in judged_pairs(context):
        query, text = collection.queries[qid], collection.docs[docno]
        meta = {"qid": qid, "docno": docno, "docno2": docno, "grade": grade}
        term = e.rarest_term(analyze(query), analyze(text), df)
        repeated = None if term is None else e.repeat_in_place(text, term, analyze)
        if repeated is None:
            yield Skip("no-query-term", meta)
        else:
            yield Sample(query, repeated, text, {**meta, "term": term})


def _brevity(probe: BiasProbe, context: ProbeContext) -> Built:
    from abnirml.probes.manipulation import edits as m
    from abnirml.probes.manipulation.probes import donor_pool

    collection = context.collection
    donors, fallback = donor_pool(context, OTHER_QUERY, options(context).nonrelevant_grade)
    donated = m.ManipulationContext(donors=donors, fallback_donors=fallback)
    for qid, docno, grade in _relevant(context):
        query, text = collection.queries[qid], collection.docs[docno]
        meta = {"qid": qid, "docno": docno, "docno2": docno, "grade2": grade}
        # the seed of tmp:add-nonrel-sentence: with other-query donors it writes these texts
        rng = context.rng(f"{ADD_NONREL}\x00{qid}\x00{docno}")
        longer = m.add_nonrel_sentence(query, text, donated, rng)
        if longer is None:
            yield Skip("no-donor", meta)
        else:
            yield Sample(query, longer, text, meta)


def _with_foil(context: ProbeContext) -> Iterator[tuple[str, str, str, dict[str, Any]]
                                                  | Skip]:
    """(query, foil source text, relevant text, meta) per judged-relevant passage."""
    collection = context.collection
    for qid, docno, grade in _relevant(context):
        meta: dict[str, Any] = {"qid": qid, "docno2": docno, "grade2": grade}
        foil = foil_for(context, qid, docno)
        if foil is None:
            yield Skip("no-nonrelevant-passage", meta)
            continue
        # the foil is an edit of this passage, not the passage: not d1's docno
        meta.update(foil_source=foil, foil_source_grade=collection.qrels[qid][foil])
        yield collection.queries[qid], collection.docs[foil], collection.docs[docno], meta


def _keyword_stuffing(probe: BiasProbe, context: ProbeContext) -> Built:
    k = options(context).stuffing_k
    analyze = context.analyzer.analyze
    for item in _with_foil(context):
        if isinstance(item, Skip):
            yield item
            continue
        query, foil, relevant, meta = item
        words = e.content_words(query, analyze)
        if not words:
            yield Skip("no-query-term", meta)
        else:
            yield Sample(query, e.stuffed(foil, words, k), relevant, {**meta, "k": k})


def _phrasing(context: ProbeContext, key: str) -> str:
    phrasings = _phrasings(context)
    return phrasings[int(context.rng(key).integers(len(phrasings)))]


def _injected_instruction(probe: BiasProbe, context: ProbeContext) -> Built:
    collection = context.collection
    yield from _missing_text(context)
    for qid, docno, grade in judged_pairs(context):
        query, text = collection.queries[qid], collection.docs[docno]
        instruction = _phrasing(context, f"{probe.name}\x00{qid}\x00{docno}")
        meta = {"qid": qid, "docno": docno, "docno2": docno, "grade": grade,
                "instruction": instruction}
        yield Sample(query, e.append_text(text, instruction), text, meta)


def _injected_instruction_foil(probe: BiasProbe, context: ProbeContext) -> Built:
    for item in _with_foil(context):
        if isinstance(item, Skip):
            yield item
            continue
        query, foil, relevant, meta = item
        instruction = _phrasing(context, f"{probe.name}\x00{meta['qid']}\x00{meta['docno2']}")
        yield Sample(query, e.append_text(foil, instruction), relevant,
                     {**meta, "instruction": instruction})


def _unedited_foil(probe: BiasProbe, context: ProbeContext) -> Built:
    for item in _with_foil(context):
        if isinstance(item, Skip):
            yield item
        else:
            query, foil, relevant, meta = item
            yield Sample(query, foil, relevant, {**meta, "docno1": meta["foil_source"]})


def _biased_foil(probe: BiasProbe, context: ProbeContext) -> Built:
    repeats = options(context).foil_repeats
    analyze = context.analyzer.analyze
    for item in _with_foil(context):
        if isinstance(item, Skip):
            yield item
            continue
        query, foil, relevant, meta = item
        words = e.content_words(query, analyze)
        if not words:
            yield Skip("no-query-term", meta)
            continue
        made = e.biased_foil(foil, words, repeats, _query_terms(context, query), analyze)
        yield Sample(query, made, relevant, meta)


_BUILDERS = {
    "early-evidence": _early_evidence,
    "literal-match": _literal_match,
    "repetition": _repetition,
    "brevity": _brevity,
    "unedited-foil": _unedited_foil,
    "keyword-stuffing": _keyword_stuffing,
    "injected-instruction": _injected_instruction,
    "injected-instruction-foil": _injected_instruction_foil,
    "biased-foil": _biased_foil,
}

