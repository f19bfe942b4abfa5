"""Collection statistics (N, average length, df and cf per term), in the data layer so that
both rankers (BM25, QL) and probes (axiom term weights, query variation) can use them."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from abnirml.text.analyzer import Analyzer


@dataclass(frozen=True)
class CollectionStats:
    num_docs: int
    num_tokens: int
    df: dict[str, int]
    cf: dict[str, int]
    analyzer: Analyzer
    digest: str

    @property
    def avg_doc_length(self) -> float:
        return self.num_tokens / self.num_docs if self.num_docs else 0.0

    @classmethod
    def build(cls, texts: Iterable[str], analyzer: Analyzer) -> CollectionStats:
        """One streaming pass over the document texts (nothing kept but the counts)."""
        df: Counter[str] = Counter()
        cf: Counter[str] = Counter()
        num_docs = num_tokens = 0
        h = hashlib.blake2b(digest_size=10)
        h.update(analyzer.signature.encode())
        # Counting flat lists goes through Counter's C fast path; buffers bound the memory.
        cf_buffer: list[str] = []
        df_buffer: list[str] = []
        # The memo keeps the analyses for the rankers and measures that follow, as long as it
        # can hold the whole collection. Once the pass outgrows it, what it holds is only the
        # first documents of the file, rarely the ones probes score, at ~700 bytes each
        # (50,000 texts: ~35 MiB): forget those and stop adding.
        remembered: list[str] = []
        for text in texts:
            keep = num_docs < analyzer.memo_size
            tokens = analyzer.analyze_cached(text, evict=False, keep=keep)
            if keep:
                remembered.append(text)
            elif remembered:
                analyzer.forget(remembered)
                remembered = []
            cf_buffer.extend(tokens)
            df_buffer.extend(set(tokens))
            num_docs += 1
            num_tokens += len(tokens)
            h.update(text.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
            if len(cf_buffer) >= 1_000_000:
                cf.update(cf_buffer)
                df.update(df_buffer)
                cf_buffer.clear()
                df_buffer.clear()
        cf.update(cf_buffer)
        df.update(df_buffer)
        del cf_buffer, df_buffer
        # Plain dicts (a Counter answers 0 for a missing term), converted one at a time so
        # that three tables, not four, exist at once: with a million terms each is ~40 MiB.
        df_dict = dict(df)
        del df
        cf_dict = dict(cf)
        del cf
        return cls(num_docs, num_tokens, df_dict, cf_dict, analyzer, h.hexdigest())
