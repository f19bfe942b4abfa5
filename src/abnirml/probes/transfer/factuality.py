"""Factuality probes from Natural Questions (ABNIRML journal version, §2.2.3).

d1 is a passage that contains the question's answer; d2 is the same passage with every
occurrence of the answer replaced by *another* NQ answer of the same entity type and the
same number of non-stopword tokens; the query is the question. A positive score means the
ranker prefers the factually correct passage. There is one probe per entity type (PER, GPE,
LOC, NORP, ORG — spaCy's PERSON, GPE, LOC, NORP, ORG).

Decisions (the paper leaves them open):

* The answer is the record's first answer string; its type is the label of the single
  spaCy entity found in it, and only when that entity covers every content token (an
  answer such as "Paris and Rome" has no single type and is left out).
* Substitutes are drawn, seeded per (question, passage), from the *distinct* answers of the
  same (type, length) class, excluding every accepted answer of the question (otherwise d2
  would still be correct). None left: ``no-substitute``.
* ``answer-in-question``: a content word of the answer occurs in the question ("this or
  that" questions give the answer away); ``answer-not-in-text``: the passage does not
  contain the answer (matched case-insensitively, any white space between words).

These discards are counted by the probe of the answer's type; answers without a type belong
to no probe and are not counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from abnirml.data.pairs import TextPair
from abnirml.data.transfer import Source
from abnirml.data.transfer.nq import NQRecord
from abnirml.probes.base import ProbeContext
from abnirml.probes.transfer.queries import seeded_index
from abnirml.samples import Sample, Skip
from abnirml.text.tokenize import terms

#: probe suffix → spaCy entity label
ENTITY_TYPES = {"per": "PERSON", "gpe": "GPE", "loc": "LOC", "norp": "NORP", "org": "ORG"}
ANSWER_IN_QUESTION = "answer-in-question"
ANSWER_NOT_IN_TEXT = "answer-not-in-text"
NO_SUBSTITUTE = "no-substitute"


@dataclass(frozen=True, slots=True)
class AnswerClass:
    """An answer's entity type (probe suffix, or None) and non-stopword token count."""

    group: str | None
    length: int


def content_terms(text: str, stopwords: frozenset[str]) -> list[str]:
    return [t for t in terms(text) if t not in stopwords]


#: spaCy components answer classification leaves out
UNUSED_COMPONENTS = ("parser", "lemmatizer")


def classify_answers(answers: Iterable[str], stopwords: frozenset[str],
                     cache: Any = None) -> dict[str, AnswerClass]:
    """Entity type and length of each distinct answer string, in order (spaCy NER, batched;
    kept across runs in ``cache``, a :class:`~abnirml.probes.parse_cache.ParseCache`)."""
    from abnirml.probes.parse_cache import stopwords_key, store_or_memory

    kind = (f"dtp:nq-answer-class;disabled={','.join(UNUSED_COMPONENTS)};"
            f"stopwords={stopwords_key(stopwords)}")
    return store_or_memory(cache).get_or_build(
        kind, list(answers), lambda todo: _classify(todo, stopwords),
        lambda c: [c.group, c.length], _decode_class)


def _classify(answers: list[str], stopwords: frozenset[str]) -> list[AnswerClass]:
    from abnirml.text.nlp import load_pipeline

    nlp = load_pipeline()
    disable = [p for p in UNUSED_COMPONENTS if p in nlp.pipe_names]
    labels = {label: short for short, label in ENTITY_TYPES.items()}
    out: list[AnswerClass] = []
    for answer, doc in zip(answers, nlp.pipe(answers, batch_size=256, disable=disable),
                           strict=True):
        content = [t.i for t in doc if not (t.is_punct or t.is_space)
                   and t.lower_ not in stopwords]
        group = None
        if len(doc.ents) == 1 and content:
            ent = doc.ents[0]
            if all(ent.start <= i < ent.end for i in content):
                group = labels.get(ent.label_)
        out.append(AnswerClass(group, len(content_terms(answer, stopwords))))
    return out


def _decode_class(value: Any) -> AnswerClass:
    try:
        group, length = value
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not a stored answer class: {exc}") from None
    if not (group is None or isinstance(group, str)) or not isinstance(length, int):
        raise ValueError("not a stored answer class")
    return AnswerClass(group, length)


def answer_pattern(answer: str) -> re.Pattern[str]:
    """The answer as a case-insensitive whole-word pattern, any white space between words."""
    words = [re.escape(w) for w in answer.split()]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


def factual_pairs(records: Iterable[NQRecord], stopwords: frozenset[str], seed: int,
                  cache: Any = None) -> Iterator[TextPair | Skip]:
    """Factual / counterfactual passage pairs of every entity type (group = type suffix)."""
    records = [r for r in records if r.answers]
    classes = classify_answers((r.answers[0] for r in records), stopwords, cache)
    pool: dict[AnswerClass, list[str]] = {}
    for answer, cls in classes.items():
        if cls.group is not None:
            pool.setdefault(cls, []).append(answer)
    for cls, answers in pool.items():
        distinct = {a.casefold(): a for a in sorted(answers)}
        pool[cls] = sorted(distinct.values())
    for record in records:
        answer = record.answers[0]
        cls = classes[answer]
        if cls.group is None:
            continue
        tag = {"group": cls.group, "key": record.key}
        if set(content_terms(answer, stopwords)) & set(terms(record.question)):
            for _ in record.passages:
                yield Skip(ANSWER_IN_QUESTION, tag)
            continue
        pattern = answer_pattern(answer)
        accepted = {a.casefold() for a in record.answers}
        substitutes = [a for a in pool[cls] if a.casefold() not in accepted]
        for passage in record.passages:
            if not pattern.search(passage.text):
                yield Skip(ANSWER_NOT_IN_TEXT, tag)
                continue
            if not substitutes:
                yield Skip(NO_SUBSTITUTE, tag)
                continue
            key = f"{record.key}:{passage.pid}"
            substitute = substitutes[seeded_index(seed, key, len(substitutes))]
            changed = pattern.sub(substitute.replace("\\", "\\\\"), passage.text)
            yield TextPair(key=key, doc1=passage.text, doc2=changed, query=record.question,
                           group=cls.group,
                           meta={"answer": answer, "substitute": substitute,
                                 "entity": ENTITY_TYPES[cls.group], "passage": passage.pid})


def nq_source() -> Source[NQRecord]:
    from abnirml.data.transfer.hub import NQ_IRDS, irds_nq
    from abnirml.data.transfer.nq import load_nq

    return Source("nq", lambda folder, _keep: load_nq(folder), lambda _keep: irds_nq(),
                  f"irds:{NQ_IRDS}")


@dataclass(frozen=True)
class FactualityProbe:
    """Factual (d1) vs counterfactual (d2) passages whose answer has entity type ``group``."""

    name: str
    characteristic: str
    dataset: str
    group: str
    symmetric: bool = False
    family: str = "dtp"

    @property
    def data_folder(self) -> str:
        """The folder under the transfer-data location this probe reads (report's hint)."""
        return nq_source().folder

    def samples(self, context: ProbeContext) -> Iterator[Sample | Skip]:
        from abnirml.probes.transfer.pairs import load_items, transfer_items, transfer_samples

        def build() -> tuple[list[Any] | None, Skip | None]:
            return load_items(lambda: list(factual_pairs(
                transfer_items(context, nq_source()), context.analyzer.stopword_set,
                context.seed, context.parse_cache)))

        items, missing = context.memo("dtp:nq-pairs", build)
        if missing is not None:
            yield missing
            return
        yield from transfer_samples(items or [], context, group=self.group)
