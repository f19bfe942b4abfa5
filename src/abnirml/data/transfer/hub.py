"""Online copies of the transfer datasets: Hugging Face ``datasets`` and ``ir_datasets``.

Used only when ``dtp.online`` setting is set and the local folder is absent. Both
libraries are optional (the ``transfer`` extra) and imported here, lazily.
Only hub copies that carry what a probe needs are wired in:

=============  ==================================  =============================================
source         id (config) — splits                 fields used
=============  ==================================  =============================================
mrpc           ``nyu-mll/glue`` (mrpc) — train,     sentence1, sentence2, label (1 = paraphrase)
               validation (the test labels are hidden)
jfleg          ``jhu-clsp/jfleg`` — validation,     sentence, corrections (4 references); there
               test                                  is no spell-checked copy on the hub
turkcorpus     ``community-datasets/turk``           original, simplifications (8)
               (simplification) — validation, test
asset          ``facebook/asset`` (simplification)   original, simplifications (10)
               — validation, test
xsum           ``EdinburghNLP/xsum`` — train,        id, summary, document; the hub copy has no
               validation, test                      titles, so the query is a shared noun chunk
nq             ir_datasets                           questions with answers, passages judged
               ``dpr-w100/natural-questions/dev``    relevant (the DPR positives)
=============  ==================================  =============================================

GYAFC (licensed through Yahoo), WNC and CNN / Daily Mail with headlines have no hub copy
with the needed fields; they are read from local files only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from abnirml.data.pairs import TextPair
from abnirml.data.transfer import SUB_SAMPLED, Item, Keep
from abnirml.data.transfer.nq import NQRecord, Passage
from abnirml.errors import ConfigError, InputError, install_hint
from abnirml.samples import Skip

MRPC = ("nyu-mll/glue", "mrpc", ("train", "validation"))
JFLEG = ("jhu-clsp/jfleg", None, ("validation", "test"))
TURK = ("community-datasets/turk", "simplification", ("validation", "test"))
ASSET = ("facebook/asset", "simplification", ("validation", "test"))
XSUM = ("EdinburghNLP/xsum", None, ("train", "validation", "test"))
NQ_IRDS = "dpr-w100/natural-questions/dev"


def hf_rows(dataset_id: str, config: str | None,
            splits: Sequence[str]) -> Iterator[tuple[str, int, Mapping[str, Any]]]:
    """``(split, index, row)`` for every row of the named splits."""
    try:
        import datasets
    except ImportError:
        raise ConfigError("online transfer data needs Hugging Face datasets: "
                          f"{install_hint('transfer')}") from None
    for split in splits:
        try:
            rows = datasets.load_dataset(dataset_id, config, split=split)
        except Exception as exc:  # the library raises many types for one cause: unavailable
            raise InputError(f"Hugging Face dataset {dataset_id} ({split}) is unavailable: "
                             f"{exc}") from None
        for index, row in enumerate(rows):
            yield split, index, row


def _field(row: Mapping[str, Any], name: str, dataset_id: str) -> Any:
    if name not in row:
        raise InputError(f"Hugging Face dataset {dataset_id}: rows lack field {name!r}")
    return row[name]


def _pair(keep: Keep, pair: TextPair) -> Item:
    return pair if keep(pair.key) else Skip(SUB_SAMPLED)


def hub_mrpc(keep: Keep) -> Iterator[Item]:
    name, config, splits = MRPC
    for split, index, row in hf_rows(name, config, splits):
        if int(_field(row, "label", name)) != 1:
            continue
        yield _pair(keep, TextPair(key=f"{split}:{row.get('idx', index)}",
                                   doc1=str(_field(row, "sentence1", name)).strip(),
                                   doc2=str(_field(row, "sentence2", name)).strip()))


def _hub_references(spec: tuple[str, str | None, tuple[str, ...]], keep: Keep, source: str,
                    references: str, tag: str) -> Iterator[Item]:
    """Every reference rewrite (d1) against the row's source sentence (d2), keyed
    ``split:row:<tag><n>`` with rows counted from 1, as the local readers count lines."""
    name, config, splits = spec
    for split, index, row in hf_rows(name, config, splits):
        original = str(_field(row, source, name)).strip()
        for ref, text in enumerate(_field(row, references, name)):
            yield _pair(keep, TextPair(key=f"{split}:{index + 1}:{tag}{ref}",
                                       doc1=str(text).strip(), doc2=original))


def hub_jfleg(keep: Keep) -> Iterator[Item]:
    return _hub_references(JFLEG, keep, "sentence", "corrections", "ref")


def hub_turk(keep: Keep) -> Iterator[Item]:
    return _hub_references(TURK, keep, "original", "simplifications", "simp")


def hub_asset(keep: Keep) -> Iterator[Item]:
    return _hub_references(ASSET, keep, "original", "simplifications", "simp")


def hub_xsum(keep: Keep) -> Iterator[Item]:
    name, config, splits = XSUM
    for _, index, row in hf_rows(name, config, splits):
        ident = str(row.get("id", index))
        if not keep(ident):
            yield Skip(SUB_SAMPLED)
            continue
        summary = " ".join(str(_field(row, "summary", name)).split())
        body = " ".join(str(_field(row, "document", name)).split())
        if not summary or not body:
            yield Skip("empty-text", {"key": ident})
            continue
        yield TextPair(key=ident, doc1=summary, doc2=body, group="xsum")


def irds_nq(dataset_id: str = NQ_IRDS) -> Iterator[NQRecord]:
    """NQ records from ir_datasets: each question with its answers and relevant passages."""
    try:
        import ir_datasets
    except ImportError:
        raise ConfigError(f"online NQ data needs ir_datasets: {install_hint('irds')}") \
            from None
    dataset = ir_datasets.load(dataset_id)
    positives: dict[str, list[str]] = {}
    for row in dataset.qrels_iter():
        if int(row.relevance) > 0:
            positives.setdefault(row.query_id, []).append(row.doc_id)
    store = dataset.docs_store()
    for query in dataset.queries_iter():
        answers = tuple(a.strip() for a in getattr(query, "answers", ()) if a.strip())
        doc_ids = sorted(positives.get(query.query_id, []))
        if not answers or not doc_ids:
            continue
        docs = store.get_many(doc_ids)
        passages = tuple(Passage(pid=d, text=" ".join(docs[d].text.split()),
                                 title=getattr(docs[d], "title", ""))
                         for d in doc_ids if d in docs)
        yield NQRecord(key=f"irds:{query.query_id}", question=query.text.strip(),
                       answers=answers, passages=passages)
