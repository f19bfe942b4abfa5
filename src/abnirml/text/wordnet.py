"""A small reader for the WordNet 3.0 database files (Princeton's ``index.*``/``data.*``).

The query-variation synonym probe needs one thing from WordNet: for a lemma and a part of
speech, its senses in frequency order and the other words of each sense. No PyPI package
ships the English WordNet data for offline use, but Debian's ``wordnet-base`` does
(``/usr/share/wordnet``; ``make wordnet-deps`` installs it as root), so this module reads
those files directly instead of depending on NLTK and its downloader.

File format (``wndb(5WN)``): an index line is
``lemma pos synset_cnt p_cnt [ptr_symbol…] sense_cnt tagsense_cnt offset…`` with the
offsets in sense-frequency order; a data line at byte ``offset`` of ``data.<pos>`` is
``offset lex_filenum ss_type w_cnt word lex_id [word lex_id…] …`` with ``w_cnt`` in hex.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

#: Where Debian (and most Unix packages) install the database; ``ABNIRML_WORDNET`` overrides.
DEFAULT_DIRS = ("/usr/share/wordnet", "/usr/local/share/wordnet", "/usr/share/wordnet-3.0")
ENV_VAR = "ABNIRML_WORDNET"
#: WordNet's parts of speech and their file suffixes
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}


def wordnet_dir() -> Path | None:
    """The first directory holding the database files, or None (``$ABNIRML_WORDNET`` first)."""
    candidates = [os.environ[ENV_VAR]] if os.environ.get(ENV_VAR) else []
    for folder in (*candidates, *DEFAULT_DIRS):
        path = Path(folder)
        if all((path / f"{kind}.{suffix}").is_file()
               for suffix in POS_FILES.values() for kind in ("index", "data")):
            return path
    return None


class WordNet:
    """Senses and their words, read lazily from one database directory."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._index: dict[str, dict[str, tuple[int, ...]]] = {}
        self._synsets: dict[tuple[str, int], tuple[str, ...]] = {}

    def _offsets(self, pos: str) -> dict[str, tuple[int, ...]]:
        if pos not in self._index:
            table: dict[str, tuple[int, ...]] = {}
            path = self.folder / f"index.{POS_FILES[pos]}"
            with path.open(encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if line.startswith(" "):            # the licence header
                        continue
                    fields = line.split()
                    synset_count, pointer_count = int(fields[2]), int(fields[3])
                    offsets = fields[4 + pointer_count + 2:]
                    table[fields[0]] = tuple(int(o) for o in offsets[:synset_count])
            self._index[pos] = table
        return self._index[pos]

    def senses(self, lemma: str, pos: str) -> tuple[int, ...]:
        """Byte offsets of ``lemma``'s senses as ``pos`` (most frequent first); () if none."""
        return self._offsets(pos).get(lemma.lower().replace(" ", "_"), ())

    def words(self, pos: str, offset: int) -> tuple[str, ...]:
        """The words of one sense, lowercased, multi-word lemmas with spaces."""
        key = (pos, offset)
        if key not in self._synsets:
            with (self.folder / f"data.{POS_FILES[pos]}").open("rb") as handle:
                handle.seek(offset)
                fields = handle.readline().decode("utf-8", errors="replace").split()
            count = int(fields[3], 16)
            raw = fields[4:4 + 2 * count:2]
            # adjectives may carry a syntactic marker: "big(a)", "galore(ip)"
            self._synsets[key] = tuple(w.split("(")[0].replace("_", " ").lower() for w in raw)
        return self._synsets[key]

    def synonyms(self, lemma: str, pos: str, senses: int = 1, mutual: int = 2) -> list[str]:
        """The other words of ``lemma``'s first ``senses`` senses as ``pos``, in order,
        without repeats, keeping a word only if that sense is also among its own first
        ``mutual`` senses (0: keep every word). The mutual check drops words whose usual
        meaning is another one: "find" shares a sense with "happen", which mostly means
        "occur"; "knob" with "boss", which mostly means a person."""
        out: list[str] = []
        own = lemma.lower()
        for offset in self.senses(lemma, pos)[:senses]:
            for word in self.words(pos, offset):
                if word == own or word in out:
                    continue
                if mutual and offset not in self.senses(word, pos)[:mutual]:
                    continue
                out.append(word)
        return out


@lru_cache(maxsize=1)
def load_wordnet() -> WordNet | None:
    """The installed WordNet, or None when no database directory is found."""
    folder = wordnet_dir()
    return WordNet(folder) if folder is not None else None
