"""Dataset-transfer probes (ABNIRML journal version §2.2.3, Table 3).

A dataset built for another task supplies pairs of texts that differ in one characteristic;
d1 has it (fluent, formal, simpler, neutral, succinct, factual) and d2 does not, so a
positive score means the ranker prefers the text with the characteristic. The paraphrase
probe is symmetric (neither text is "better"): it counts how often |R(q,d1) − R(q,d2)| > δ.

From pairs to samples (:func:`~.pairs.transfer_samples`), with every discard
counted by reason:

1. pairs outside the probe's subset (``group``) are ignored — they belong to a sibling probe;
2. ``identical`` — both texts equal after collapsing white space (no signal);
   ``duplicate`` — the same two texts already formed a sample of this probe;
3. ``capped`` — beyond the ``dtp.max_pairs`` option (a seeded, order-independent choice;
   unset by default), for quick runs;
4. the query: the source's own (title, question) or a shared noun chunk, see
   :mod:`.queries` (``no-shared-chunk``, ``no-query-overlap``).

Sources whose data is absent yield one ``Skip("no-data", {"where": …})``; the report then
says where the data was expected. Options (:class:`~.pairs.TransferOptions`):
``dtp.data`` (the directory holding ``mrpc/``, ``jfleg/`` …), ``dtp.online`` (fall back to
hub copies), ``dtp.sample_rate`` (fraction of news articles kept, default 0.1 as in the
paper), ``dtp.max_pairs``, read with ``context.family_options("dtp", TransferOptions)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from abnirml.data.pairs import read_pairs_file
from abnirml.data.transfer import Item, Keep, Source, check_transfer_data, keep_all
from abnirml.errors import ConfigError
from abnirml.probes.base import ProbeContext
from abnirml.probes.transfer.pairs import (
    NEWS_SAMPLE_RATE,
    TransferOptions,
    hash_fraction,
    load_items,
    transfer_items,
    transfer_samples,
)
from abnirml.samples import Sample, Skip


@dataclass(frozen=True)
class TransferProbe:
    """A probe over one pair source (optionally one subset of it).

    ``characteristic`` and ``dataset`` label the row of the Table-3 layout.
    """

    name: str
    characteristic: str
    dataset: str
    source: Source[Item]
    symmetric: bool = False
    group: str | None = None
    sample_rate: float | None = None
    family: str = "dtp"

    @property
    def data_folder(self) -> str:
        """The folder under the transfer-data location this probe reads (report's hint)."""
        return self.source.folder

    def _keep(self, context: ProbeContext) -> Keep:
        if self.sample_rate is None:
            return keep_all
        given = context.family_options("dtp", TransferOptions).sample_rate
        rate = self.sample_rate if given is None else given
        return lambda key: hash_fraction(key) < rate

    def samples(self, context: ProbeContext) -> Iterator[Sample | Skip]:
        keep = self._keep(context)
        items, missing = load_items(lambda: transfer_items(context, self.source, keep))
        if missing is not None:
            yield missing
            return
        yield from transfer_samples(items or [], context, self.symmetric, self.group)


@dataclass(frozen=True)
class PairsFileProbe:
    """A user's transfer probe over a TSV / JSONL pairs file (see :mod:`abnirml.data.pairs`)."""

    name: str
    path: str
    symmetric: bool = False
    characteristic: str = field(default="")
    dataset: str = field(default="")
    family: str = "dtp"

    def samples(self, context: ProbeContext) -> Iterator[Sample | Skip]:
        yield from transfer_samples(read_pairs_file(self.path), context,
                                    self.symmetric)


def pairs_probe(name: str, path: str | Path, symmetric: bool = False) -> PairsFileProbe:
    """A transfer probe from a pairs file, ready for :func:`abnirml.probes.probe_registry.register`.

    >>> from abnirml.probes.probe_registry import register
    >>> register(pairs_probe("dtp:mine", "pairs.tsv"))            # doctest: +SKIP
    """
    if not name.startswith("dtp:") or len(name) <= 4 or any(c.isspace() for c in name):
        raise ConfigError(f"transfer probe name {name!r} must look like dtp:<name> "
                          "(no spaces)")
    label = name[4:]
    return PairsFileProbe(name=name, path=str(path), symmetric=symmetric,
                          characteristic=label, dataset=Path(path).name)


__all__ = ["PairsFileProbe", "TransferProbe", "available", "check_transfer_data",
           "hash_fraction", "pairs_probe", "transfer_samples"]


# --- the catalogue ------------------------------------------------------------------------

def _sources() -> dict[str, Source[Item]]:
    from abnirml.data.transfer import corpora, hub, news

    return {
        "mrpc": Source("mrpc", corpora.load_mrpc, hub.hub_mrpc, "nyu-mll/glue:mrpc"),
        "jfleg": Source("jfleg", corpora.load_jfleg, hub.hub_jfleg, "jhu-clsp/jfleg"),
        "jfleg-spellchecked": Source("jfleg", corpora.load_jfleg_spellchecked),
        "gyafc": Source("gyafc", corpora.load_gyafc),
        "turkcorpus": Source("turkcorpus", corpora.load_simplification, hub.hub_turk,
                             "community-datasets/turk:simplification"),
        "asset": Source("asset", corpora.load_simplification, hub.hub_asset,
                        "facebook/asset:simplification"),
        "wnc": Source("wnc", corpora.load_wnc),
        "xsum": Source("xsum", news.load_xsum, hub.hub_xsum, "EdinburghNLP/xsum"),
        "cnn": Source("cnndm", partial(news.load_cnndm, sources=("cnn",))),
        "dailymail": Source("cnndm", partial(news.load_cnndm, sources=("dailymail",))),
    }


def available() -> list[Any]:
    from abnirml.probes.transfer.factuality import ENTITY_TYPES, FactualityProbe

    s = _sources()
    probes: list[Any] = [
        TransferProbe("dtp:paraphrase-mrpc", "Paraphrase", "MRPC", s["mrpc"], symmetric=True),
        TransferProbe("dtp:fluency-jfleg", "Fluency", "JFLEG", s["jfleg"]),
        TransferProbe("dtp:fluency-jfleg-spellchecked", "Fluency", "JFLEG spellchecked",
                      s["jfleg-spellchecked"]),
        TransferProbe("dtp:formality-gyafc", "Formality", "GYAFC", s["gyafc"]),
        TransferProbe("dtp:formality-gyafc-em", "Formality", "GYAFC entertainment",
                      s["gyafc"], group="em"),
        TransferProbe("dtp:formality-gyafc-fr", "Formality", "GYAFC family", s["gyafc"],
                      group="fr"),
        TransferProbe("dtp:simplicity-turkcorpus", "Simplicity", "TurkCorpus", s["turkcorpus"]),
        TransferProbe("dtp:simplicity-asset", "Simplicity", "ASSET", s["asset"]),
        TransferProbe("dtp:neutrality-wnc", "Neutrality", "WNC", s["wnc"]),
        TransferProbe("dtp:succinctness-xsum", "Succinctness", "XSum", s["xsum"],
                      sample_rate=NEWS_SAMPLE_RATE),
        TransferProbe("dtp:succinctness-cnn", "Succinctness", "CNN", s["cnn"],
                      sample_rate=NEWS_SAMPLE_RATE),
        TransferProbe("dtp:succinctness-dailymail", "Succinctness", "Daily Mail",
                      s["dailymail"], sample_rate=NEWS_SAMPLE_RATE),
    ]
    probes += [FactualityProbe(f"dtp:factuality-nq-{short}", "Factuality",
                               f"NQ {short.upper()}", short) for short in ENTITY_TYPES]
    return probes
