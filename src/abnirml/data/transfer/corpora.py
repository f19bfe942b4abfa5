"""Sentence-level parallel corpora: MRPC, JFLEG, TurkCorpus / ASSET, WNC and GYAFC.

Every split found in the folder is used (the probes describe a model, they do not train
one, so there is no reason to hold a split out). Multi-reference corpora give one pair per
reference: each human rewrite is its own witness of the characteristic, as in the paper's
JFLEG probe ("each fluent text as a d1 paired with the non-fluent d2"). Pairs whose two
texts are identical, or that repeat an earlier pair, are discarded by the probe and counted.

Formats (one sentence per line where files are line-aligned):

* ``mrpc/msr_paraphrase_{train,test}.txt`` — TSV with header
  ``Quality  #1 ID  #2 ID  #1 String  #2 String``; pairs with Quality 1 are paraphrases.
* ``jfleg/{dev,test}.src`` (or ``.spellchecked.src``) and ``{dev,test}.ref0..3``.
* ``turkcorpus/<split>.truecase.detok.orig`` + ``.simp.0..7``;
  ``asset/asset.<split>.orig`` + ``.simp.0..9`` — any ``X.orig`` with its ``X.simp.N``.
* ``wnc/`` — ``biased.full`` (searched recursively; else ``biased.word.*``): TSV
  ``id  src_tok  tgt_tok  src_raw  tgt_raw  …``; src is the biased sentence, tgt the neutral.
* ``gyafc/`` — the ``GYAFC_Corpus`` tree (the folder itself or a child of it):
  ``<Genre>/{tune,test}/{formal,informal}`` with ``{informal,formal}.ref0..3``; genres
  ``Entertainment_Music`` (group ``em``) and ``Family_Relationships`` (``fr``). Queries come
  from the linked Yahoo Answers question when ``gyafc/questions.tsv`` (L6 id ⟶ question
  subject) and ``<Genre>/<split>/<src>.qids`` (one L6 id per source line, ``_`` for none)
  are present; a line without a question is then discarded as ``no-question``. Without
  them the probe falls back to the shared-noun-chunk query (said in docs/guide/transfer.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from abnirml.data.pairs import DataNotFound, TextPair, read_aligned
from abnirml.data.transfer import SUB_SAMPLED, Item, Keep
from abnirml.data.trec import read_lines
from abnirml.errors import InputError
from abnirml.samples import Skip

MRPC_HEADER = ("quality", "#1 id", "#2 id", "#1 string", "#2 string")
MRPC_FILES = ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt")
GYAFC_GENRES = {"Entertainment_Music": "em", "Family_Relationships": "fr"}
GYAFC_SPLITS = ("tune", "test")
GYAFC_REFERENCES = 4
NO_QUESTION = "no-question"


def _pair_or_skip(keep: Keep, pair: TextPair) -> Item:
    """The pair, or the reason it is dropped (tagged with its group so that subset probes
    count only their own discards)."""
    if not keep(pair.key):
        return Skip(SUB_SAMPLED, {"group": pair.group})
    if not pair.doc1 or not pair.doc2:
        return Skip("empty-text", {"key": pair.key, "group": pair.group})
    return pair


# --- MRPC ---------------------------------------------------------------------------------

def load_mrpc(folder: Path, keep: Keep) -> Iterator[Item]:
    """Paraphrase pairs (Quality = 1) of every MRPC split present."""
    files = [folder / name for name in MRPC_FILES if (folder / name).is_file()]
    if not files:
        raise DataNotFound(str(folder / "msr_paraphrase_{train,test}.txt"))
    for path in files:
        split = path.stem.rsplit("_", 1)[-1]
        lines = read_lines(path)
        number, header = next(lines, (1, ""))
        names = tuple(h.strip().lower() for h in header.split("\t"))
        if names != MRPC_HEADER:
            raise InputError("expected the MRPC header 'Quality, #1 ID, #2 ID, #1 String, "
                             "#2 String' (tab-separated)", path=path, line=number)
        for number, line in lines:
            for cells in _mrpc_records(line.split("\t"), path, number):
                quality = cells[0].strip()
                if quality not in ("0", "1"):
                    raise InputError(f"Quality must be 0 or 1, found {quality!r}", path=path,
                                     line=number)
                if quality == "0":
                    continue
                id1, id2 = cells[1].strip(), cells[2].strip()
                yield _pair_or_skip(keep, TextPair(
                    key=f"{split}:{id1}:{id2}", doc1=cells[3].strip(), doc2=cells[4].strip(),
                    meta={"split": split, "id1": id1, "id2": id2}))


_JOINED = re.compile(r"^(.*\S)([01])$", re.DOTALL)


def _mrpc_records(cells: list[str], path: Path, number: int) -> list[list[str]]:
    """One line's records. The public train file has a line where a missing newline joins
    two records (9 fields, the second record's Quality glued to the first one's last
    string); such a line is split back rather than rejected."""
    if len(cells) == 5:
        return [cells]
    match = _JOINED.match(cells[4]) if len(cells) == 9 else None
    if match is None:
        raise InputError(f"expected 5 tab-separated fields, found {len(cells)}",
                         path=path, line=number)
    return [[*cells[:4], match.group(1)], [match.group(2), *cells[5:]]]


# --- JFLEG --------------------------------------------------------------------------------

def load_jfleg(folder: Path, keep: Keep, spellchecked: bool = False) -> Iterator[Item]:
    """Each of the four fluent references (d1) against the original (d2) — or against the
    spell-checked original, which isolates fluency from spelling."""
    suffix = "spellchecked.src" if spellchecked else "src"
    splits = [s for s in ("dev", "test") if (folder / f"{s}.{suffix}").is_file()]
    if not splits:
        raise DataNotFound(str(folder / f"{{dev,test}}.{suffix}"))
    for split in splits:
        refs = sorted(folder.glob(f"{split}.ref[0-9]*"), key=_numeric_suffix)
        if not refs:
            raise InputError(f"no {split}.ref0..3 reference files beside {split}.{suffix}",
                             path=folder)
        for number, (source, *references) in read_aligned([folder / f"{split}.{suffix}",
                                                           *refs]):
            for index, reference in enumerate(references):
                yield _pair_or_skip(keep, TextPair(
                    key=f"{split}:{number}:ref{index}", doc1=reference, doc2=source,
                    meta={"split": split, "line": number, "reference": index}))


def load_jfleg_spellchecked(folder: Path, keep: Keep) -> Iterator[Item]:
    return load_jfleg(folder, keep, spellchecked=True)


# --- TurkCorpus / ASSET -------------------------------------------------------------------

def load_simplification(folder: Path, keep: Keep) -> Iterator[Item]:
    """Each simplification (d1) against its original sentence (d2), for every ``X.orig``."""
    originals = sorted(folder.glob("*.orig"))
    if not originals:
        raise DataNotFound(str(folder / "*.orig"))
    for original in originals:
        prefix = original.name[: -len(".orig")]
        simps = sorted(folder.glob(f"{glob_escape(prefix)}.simp.*"), key=_numeric_suffix)
        if not simps:
            raise InputError(f"no {prefix}.simp.N files beside it", path=original)
        for number, (source, *simplified) in read_aligned([original, *simps]):
            for index, text in enumerate(simplified):
                yield _pair_or_skip(keep, TextPair(
                    key=f"{prefix}:{number}:simp{index}", doc1=text, doc2=source,
                    meta={"split": prefix, "line": number, "reference": index}))


# --- WNC ----------------------------------------------------------------------------------

def load_wnc(folder: Path, keep: Keep) -> Iterator[Item]:
    """Neutralised sentence (d1) against the biased original (d2)."""
    files = sorted(folder.rglob("biased.full")) or sorted(folder.rglob("biased.word.*"))
    if not files:
        raise DataNotFound(str(folder / "biased.full"))
    for path in files:
        for number, line in read_lines(path):
            cells = line.split("\t")
            if len(cells) < 5:
                raise InputError("expected at least 5 tab-separated fields "
                                 f"(id, src_tok, tgt_tok, src_raw, tgt_raw), found {len(cells)}",
                                 path=path, line=number)
            rev_id = cells[0].strip()
            yield _pair_or_skip(keep, TextPair(
                key=f"{path.name}:{number}:{rev_id}", doc1=cells[4].strip(),
                doc2=cells[3].strip(), meta={"rev_id": rev_id}))


# --- GYAFC --------------------------------------------------------------------------------

def load_gyafc(folder: Path, keep: Keep) -> Iterator[Item]:
    """Formal (d1) against informal (d2) rewrites of Yahoo Answers sentences, both directions
    (informal originals with formal references, formal originals with informal ones)."""
    root = folder / "GYAFC_Corpus" if (folder / "GYAFC_Corpus").is_dir() else folder
    genres = [g for g in GYAFC_GENRES if (root / g).is_dir()]
    if not genres:
        raise DataNotFound(str(root / "{Entertainment_Music,Family_Relationships}"))
    questions = _read_questions(folder / "questions.tsv")
    for genre in genres:
        for split in GYAFC_SPLITS:
            base = root / genre / split
            for src, other in (("informal", "formal"), ("formal", "informal")):
                source = base / src
                if not source.is_file():
                    continue
                refs = [base / f"{other}.ref{i}" for i in range(GYAFC_REFERENCES)
                        if (base / f"{other}.ref{i}").is_file()]
                if not refs:
                    raise InputError(f"no {other}.ref0..3 reference files beside it", path=source)
                qids = base / f"{src}.qids"
                linked = questions is not None and qids.is_file()
                files = [source, *refs] + ([qids] if linked else [])
                for number, texts in read_aligned(files):
                    original, rewrites = texts[0], texts[1:1 + len(refs)]
                    query = None
                    if linked and questions is not None:
                        query = questions.get(texts[-1]) if texts[-1] not in ("", "_") else None
                        if not query:
                            for _ in rewrites:
                                yield Skip(NO_QUESTION, {"line": number,
                                                         "group": GYAFC_GENRES[genre]})
                            continue
                    for index, rewrite in enumerate(rewrites):
                        formal, informal = ((original, rewrite) if src == "formal"
                                            else (rewrite, original))
                        yield _pair_or_skip(keep, TextPair(
                            key=f"{genre}:{split}:{src}:{number}:ref{index}", doc1=formal,
                            doc2=informal, query=query, group=GYAFC_GENRES[genre],
                            meta={"genre": genre, "split": split, "original": src,
                                  "line": number, "reference": index}))


def _read_questions(path: Path) -> dict[str, str] | None:
    if not path.is_file():
        return None
    out: dict[str, str] = {}
    for number, line in read_lines(path):
        ident, sep, text = line.partition("\t")
        if not sep or not ident.strip():
            raise InputError("expected 'yahoo_l6_id<TAB>question'", path=path, line=number)
        out[ident.strip()] = text.strip()
    return out


# --- helpers ------------------------------------------------------------------------------

def _numeric_suffix(path: Path) -> tuple[int, str]:
    match = re.search(r"(\d+)$", path.name)
    return (int(match.group(1)) if match else -1, path.name)


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)
