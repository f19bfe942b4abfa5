"""A small reader for the WordNet 3.0 database files (Princeton's ``index.*``, ``data.*``,
``cntlist.rev``).

The query-variation synonym probe needs one thing from WordNet: for a lemma and a part of
speech, its senses, how often each was tagged, and the other words of each sense. No PyPI package
ships the English WordNet data for offline use, but Debian's ``wordnet-base`` does
(``/usr/share/wordnet``; ``make wordnet-deps`` installs it as root), so this module reads
those files directly instead of depending on NLTK and its downloader.

File format (``wndb(5WN)``): an index line is
``lemma pos synset_cnt p_cnt [ptr_symbol…] sense_cnt tagsense_cnt offset…`` with the
offsets in sense-frequency order; ``tagsense_cnt`` says how many of the senses were seen in
the semantically tagged corpora — 0 means the order of the senses is no evidence of which is
the most frequent. A data line at byte ``offset`` of ``data.<pos>`` is
``offset lex_filenum ss_type w_cnt word lex_id [word lex_id…] …`` with ``w_cnt`` in hex.

Tag counts (``cntlist.rev``, ``cntlist(5WN)``): a line ``sense_key sense_number tag_cnt``
says how often the ``sense_number``-th sense of the key's lemma (``lemma%ss_type:…``, with
``ss_type`` 1 noun, 2 verb, 3 adjective, 4 adverb, 5 adjective satellite) was seen in the
tagged corpora. A word's sense order comes from these counts; the synonym rule reads them
to ask whether a word has a usual sense at all, and whether its synonym's usual sense is the
same one.

Morphology (``morphy(7WN)``): an inflected form maps to its lemmas through the exception
lists (``noun.exc``, ``verb.exc``, …: irregular forms such as "huntsmen" → "huntsman" are
not always listed) and the detachment rules (``-s`` → ``-``, ``-men`` → ``-man``, ``-ies``
→ ``-y``, …), keeping only results that are lemmas. :meth:`WordNet.plural` inverts that: it
writes a noun's plural with the most specific rule that applies and returns it only when
morphy maps it back to the noun, so no form is made that WordNet would not read as the word.
"""

from __future__ import annotations

import math
import os
from functools import lru_cache
from pathlib import Path

#: Where Debian (and most Unix packages) install the database; ``ABNIRML_WORDNET`` overrides.
DEFAULT_DIRS = ("/usr/share/wordnet", "/usr/local/share/wordnet", "/usr/share/wordnet-3.0")
ENV_VAR = "ABNIRML_WORDNET"
#: WordNet's parts of speech and their file suffixes
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
#: the tag counts per sense, read by the synonym rule (part of every WordNet 3.0 release)
COUNTS_FILE = "cntlist.rev"
#: a sense key's ss_type digit → part of speech (5: adjective satellite)
SS_TYPES = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}
#: the normal quantile of the two-sided 95 % interval whose lower end decides "the usual sense"
Z_95 = 1.959963984540054
#: morphy's detachment rules per part of speech: (inflected ending, lemma ending)
DETACHMENT = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
          ("shes", "sh"), ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
          ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}


def wordnet_dir() -> Path | None:
    """The first directory holding the database files, or None (``$ABNIRML_WORDNET`` first)."""
    candidates = [os.environ[ENV_VAR]] if os.environ.get(ENV_VAR) else []
    for folder in (*candidates, *DEFAULT_DIRS):
        path = Path(folder)
        if all((path / f"{kind}.{suffix}").is_file()
               for suffix in POS_FILES.values() for kind in ("index", "data")) \
                and (path / COUNTS_FILE).is_file():
            return path
    return None


class WordNet:
    """Senses and their words, read lazily from one database directory."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._index: dict[str, dict[str, tuple[int, ...]]] = {}
        self._tagged: dict[str, dict[str, int]] = {}
        self._synsets: dict[tuple[str, int], tuple[str, ...]] = {}
        self._exceptions: dict[str, dict[str, tuple[str, ...]]] = {}
        self._counts: dict[tuple[str, str, int], int] | None = None

    def _offsets(self, pos: str) -> dict[str, tuple[int, ...]]:
        if pos not in self._index:
            table: dict[str, tuple[int, ...]] = {}
            tagged: dict[str, int] = {}
            path = self.folder / f"index.{POS_FILES[pos]}"
            with path.open(encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if line.startswith(" "):            # the licence header
                        continue
                    fields = line.split()
                    synset_count, pointer_count = int(fields[2]), int(fields[3])
                    offsets = fields[4 + pointer_count + 2:]
                    table[fields[0]] = tuple(int(o) for o in offsets[:synset_count])
                    tagged[fields[0]] = int(fields[4 + pointer_count + 1])
            self._index[pos] = table
            self._tagged[pos] = tagged
        return self._index[pos]

    def tagged_senses(self, lemma: str, pos: str) -> int:
        """How many of ``lemma``'s senses as ``pos`` were seen in WordNet's tagged corpora
        (0: its sense order is no evidence of frequency)."""
        self._offsets(pos)
        return self._tagged[pos].get(lemma.lower().replace(" ", "_"), 0)

    def sense_counts(self, lemma: str, pos: str) -> tuple[int, ...]:
        """How often each of ``lemma``'s senses as ``pos`` (in index order) was tagged in
        WordNet's corpora (``cntlist.rev``); 0 for a sense never seen."""
        if self._counts is None:
            table: dict[tuple[str, str, int], int] = {}
            path = self.folder / COUNTS_FILE
            with path.open(encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    fields = line.split()
                    if len(fields) != 3 or "%" not in fields[0]:
                        continue
                    word, kind = fields[0].split("%", 1)
                    key = (word.lower(), SS_TYPES.get(kind[:1], ""), int(fields[1]))
                    table[key] = table.get(key, 0) + int(fields[2])
            self._counts = table
        name = lemma.lower().replace(" ", "_")
        return tuple(self._counts.get((name, pos, rank), 0)
                     for rank in range(1, len(self.senses(lemma, pos)) + 1))

    def usual_sense(self, lemma: str, pos: str) -> int | None:
        """The offset of ``lemma``'s usual sense as ``pos``, or None when it has none: the
        sense that holds the majority of the lemma's tagged occurrences at 95 % confidence
        (the Wilson lower bound of its share is above one half). Four occurrences, all in
        one sense, are the least that make it usual; "find" (159 of 705 in its first
        sense), "part" (113 of 234), "just" (95 of 355 for "exactly") and a word seen once
        or never have none, since what the word means is not known without its context."""
        counts = self.sense_counts(lemma, pos)
        total = sum(counts)
        if not total:
            return None
        best = max(range(len(counts)), key=lambda rank: (counts[rank], -rank))
        share, z2 = counts[best] / total, Z_95 * Z_95
        centre = share + z2 / (2 * total)
        spread = Z_95 * math.sqrt(share * (1 - share) / total + z2 / (4 * total * total))
        if (centre - spread) / (1 + z2 / total) <= 0.5:
            return None
        return self.senses(lemma, pos)[best]

    def exceptions(self, pos: str) -> dict[str, tuple[str, ...]]:
        """``<pos>.exc``: irregular inflected form → its lemmas (empty when absent)."""
        if pos not in self._exceptions:
            table: dict[str, tuple[str, ...]] = {}
            path = self.folder / f"{POS_FILES[pos]}.exc"
            if path.is_file():
                for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                    fields = line.split()
                    if len(fields) >= 2:
                        table[fields[0]] = tuple(fields[1:])
            self._exceptions[pos] = table
        return self._exceptions[pos]

    def morphy(self, form: str, pos: str) -> list[str]:
        """The lemmas ``form`` can be an inflection of (``form`` itself when it is one),
        by the exception list and then the detachment rules, as WordNet's morphy reads it."""
        form = form.lower().replace(" ", "_")
        found = [form] if self.senses(form, pos) else []
        found += [lemma for lemma in self.exceptions(pos).get(form, ())
                  if self.senses(lemma, pos)]
        for ending, replacement in DETACHMENT[pos]:
            if form.endswith(ending) and len(form) > len(ending):
                lemma = form[:len(form) - len(ending)] + replacement
                if self.senses(lemma, pos):
                    found.append(lemma)
        return list(dict.fromkeys(found))

    def plural(self, noun: str) -> str | None:
        """``noun``'s plural: its irregular form from ``noun.exc`` when listed, else the
        regular form of the most specific rule ("-man" → "-men", "-y" after a consonant →
        "-ies", "-ss/-x/-z/-ch/-sh" → "+es", else "+s") — and only when morphy maps that
        form back to ``noun``; None otherwise (the caller skips the word), and for a noun in
        a single "-s" without an exception entry ("series": the rules cannot tell)."""
        noun = noun.lower()
        irregular = [form for form, lemmas in self.exceptions("n").items()
                     if noun.replace(" ", "_") in lemmas and form != noun]
        if irregular:
            form = sorted(irregular)[0]
        elif noun.endswith("man"):
            form = noun[:-3] + "men"
        elif noun.endswith("y") and noun[-2:-1] not in "aeiou":
            form = noun[:-1] + "ies"
        elif noun.endswith("s") and not noun.endswith("ss"):
            return None                      # "series", "species": the plural is unknown
        elif noun.endswith(("ss", "x", "z", "ch", "sh")):
            form = noun + "es"
        else:
            form = noun + "s"
        return form if noun.replace(" ", "_") in self.morphy(form, "n") else None

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

    def synonyms(self, lemma: str, pos: str, senses: int = 1, mutual: int = 2,
                 tagged: bool = True) -> list[str]:
        """Words that mean what ``lemma`` means as ``pos``.

        With ``tagged`` (the rule ``qvp:synonym`` uses), the tag counts decide: the other
        words of ``lemma``'s usual sense (:meth:`usual_sense`) for which that sense is their
        usual sense too, most tagged in it first. A word and its synonym must both be read
        in that sense unless their context says otherwise: "exactly" and "just" share a
        sense, but "just" mostly means "only"; "food" and "nutrient" share one, but
        "nutrient" was tagged once; "miscarriage" was never tagged, so the failure of
        justice its index lists first is not known to be what it means.

        Without ``tagged``: the other words of its first ``senses`` senses in index order,
        keeping a word only if that sense is among its own first ``mutual`` senses (0: every
        word)."""
        own = lemma.lower()
        if tagged:
            usual = self.usual_sense(lemma, pos)
            if usual is None:
                return []
            found = [(self.sense_counts(word, pos)[self.senses(word, pos).index(usual)], word)
                     for word in dict.fromkeys(self.words(pos, usual))
                     if word != own and self.usual_sense(word, pos) == usual]
            found.sort(key=lambda pair: -pair[0])           # stable: WordNet's order on ties
            return [word for _, word in found]
        out: list[str] = []
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
