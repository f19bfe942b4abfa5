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
        for text in texts:
            tokens = analyzer.analyze_cached(text, evict=False)
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
        return cls(num_docs, num_tokens, dict(df), dict(cf), analyzer, h.hexdigest())
