"""News summarisation corpora for the succinctness probes: XSum and CNN / Daily Mail.

The summary is d1, the article body d2 and the headline the query. Both corpora are large,
so the probes read a deterministic 10 % of the articles (see
:func:`abnirml.probes.transfer.probes.hash_fraction`); ``keep`` is consulted with the article id
before the article file is opened.

Formats:

* ``xsum/`` — the XSum release's ``*.summary`` files (searched recursively, e.g.
  ``bbc-summary-data/``), each with ``[SN]URL[SN]``, ``[SN]TITLE[SN]``,
  ``[SN]FIRST-SENTENCE[SN]`` (the summary) and ``[SN]RESTBODY[SN]`` sections; the id is the
  file name without ``.summary``.
* ``cnndm/`` — the DeepMind Q&A story release: ``cnn/stories/*.story`` and
  ``dailymail/stories/*.story`` (any ``*.story`` below ``cnn/`` or ``dailymail/``): the
  body, then each summary bullet after an ``@highlight`` line. Stories carry no headline;
  put ``titles.tsv`` (``story_id<TAB>headline``) in ``cnndm/``, ``cnndm/cnn/`` or
  ``cnndm/dailymail/``. Without any titles file the probe falls back to the shared-noun-chunk
  query; with one, a story missing from it is discarded as ``no-title``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from abnirml.data.pairs import DataNotFound, TextPair
from abnirml.data.transfer import SUB_SAMPLED, Item, Keep
from abnirml.data.trec import read_lines
from abnirml.errors import InputError
from abnirml.samples import Skip

_SECTION = re.compile(r"\[SN\]([A-Z-]+)\[SN\]")
XSUM_SECTIONS = ("TITLE", "FIRST-SENTENCE", "RESTBODY")
CNNDM_SOURCES = ("cnn", "dailymail")
NO_TITLE = "no-title"


def load_xsum(folder: Path, keep: Keep) -> Iterator[Item]:
    files = sorted(folder.rglob("*.summary"))
    if not files:
        raise DataNotFound(str(folder / "*.summary"))
    for path in files:
        ident = path.name[: -len(".summary")]
        if not keep(ident):
            yield Skip(SUB_SAMPLED)
            continue
        sections = parse_xsum(_read_text(path), path)
        title, summary, body = (sections[name] for name in XSUM_SECTIONS)
        if not summary or not body:
            yield Skip("empty-text", {"key": ident})
            continue
        if not title:
            yield Skip(NO_TITLE, {"key": ident})
            continue
        yield TextPair(key=ident, doc1=summary, doc2=body, query=title, group="xsum",
                       meta={"id": ident, "url": sections.get("URL", "")})


def parse_xsum(text: str, path: Path | None = None) -> dict[str, str]:
    """The ``[SN]NAME[SN]`` sections of one XSum file, white space collapsed."""
    parts = _SECTION.split(text)
    sections = {parts[i]: _collapse(parts[i + 1]) for i in range(1, len(parts) - 1, 2)}
    missing = [name for name in XSUM_SECTIONS if name not in sections]
    if missing:
        raise InputError(f"not an XSum .summary file: no [SN]{missing[0]}[SN] section", path=path)
    return sections


def load_cnndm(folder: Path, keep: Keep,
               sources: tuple[str, ...] = CNNDM_SOURCES) -> Iterator[Item]:
    found = False
    for source in sources:
        base = folder / source
        if not base.is_dir():
            continue
        stories = sorted(base.rglob("*.story"))
        found = found or bool(stories)
        titles = _read_titles([folder / "titles.tsv", base / "titles.tsv"])
        for path in stories:
            ident = path.name[: -len(".story")]
            if not keep(ident):
                yield Skip(SUB_SAMPLED)
                continue
            body, highlights = parse_story(_read_text(path))
            if not body or not highlights:
                yield Skip("empty-text", {"key": ident})
                continue
            query = None
            if titles is not None:
                query = titles.get(ident)
                if not query:
                    yield Skip(NO_TITLE, {"key": ident})
                    continue
            yield TextPair(key=f"{source}:{ident}", doc1=" ".join(highlights), doc2=body,
                           query=query, group=source, meta={"id": ident, "source": source})
    if not found:
        names = sources[0] if len(sources) == 1 else "{" + ",".join(sources) + "}"
        raise DataNotFound(str(folder / names / "stories" / "*.story"))


def parse_story(text: str) -> tuple[str, list[str]]:
    """A CNN/DM story's body and its summary bullets (each ending with a full stop)."""
    body, *bullets = text.split("@highlight")
    sentences = []
    for bullet in bullets:
        sentence = _collapse(bullet)
        if sentence:
            sentences.append(sentence if sentence[-1] in ".!?\"'" else sentence + ".")
    return _collapse(body), sentences


def _read_titles(paths: list[Path]) -> dict[str, str] | None:
    titles: dict[str, str] | None = None
    for path in paths:
        if not path.is_file():
            continue
        titles = titles or {}
        for number, line in read_lines(path):
            ident, sep, title = line.partition("\t")
            if not sep or not ident.strip():
                raise InputError("expected 'story_id<TAB>headline'", path=path, line=number)
            titles[ident.strip()] = title.strip()
    return titles


def _read_text(path: Path) -> str:
    try:
        return path.read_text("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"invalid UTF-8 byte at offset {exc.start}", path=path) from None


def _collapse(text: str) -> str:
    return " ".join(text.split())
