"""How fast the host builds a cross-encoder's inputs once each text's token ids are stored.

On the DL19 battery of ``benchmarks/gpu.py`` (``mmp:*`` + 13 manipulations + 4 axioms), with
the packaged MiniLM's tokenizer (the real bert-base-uncased vocabulary) and a cross-encoder
of the test models' size fed as on an accelerator (65,536-token budget, 8,192-pair engine
calls cut into the stream's ramped pieces), it measures:

* **tokenizing the unique texts** into the token store (one ``encode_batch_fast`` call per
  8,192 texts, every core): what a first run with this tokenizer pays, overlapped with the
  device;
* **the host feed**: the ranker's own ``_prepare`` over every pair of the battery, with the
  store filled — looking up both texts of each pair, lengths and truncation, sorting and
  packing into token budgets, filling each padded batch (ids, token types, mask) by NumPy
  gathers, wrapping them as tensors. Its CPU time (every thread) gives pairs/s per core.

It then proves it built every input: a digest of every batch's ids, token types and masks,
row by row, equal to the same digest of the tokenizer's own pair encoding
(``tokenizer(q, d, truncation=True, max_length=512)``) of the same rows.

Run: ``python benchmarks/host_feed.py [--data DIR|demo] [--repeats 3]``; the last line is
``host feed: N pairs/s per core`` (the best of the repeats).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pieces_of(pairs: list, engine_pairs: int, chunk: int) -> list[list]:
    """The pieces the ranker prepares: engine calls cut as :func:`ramped_pieces` cuts them."""
    from abnirml.rankers.support.device_batching import ramped_pieces

    calls = [pairs[s:s + engine_pairs] for s in range(0, len(pairs), engine_pairs)]
    return [list(piece) for _, piece in ramped_pieces(calls, chunk)]


def _hash_batch(h: Any, tensors: dict[str, Any], indices: Any, start: int) -> None:
    """Add one padded batch to digest ``h``: its rows' pair positions (``indices`` within
    the piece that starts at pair ``start``), their lengths, and the ids, token types and
    mask of every real (unpadded) position."""
    import numpy as np

    arrays = {k: v.numpy() if hasattr(v, "numpy") else v for k, v in tensors.items()}
    mask = arrays["attention_mask"].astype(bool)
    h.update((np.asarray(indices, dtype=np.int64) + start).tobytes())
    h.update(mask.sum(axis=1).astype(np.int64).tobytes())
    for key in ("input_ids", "token_type_ids", "attention_mask"):
        h.update(np.ascontiguousarray(arrays[key][mask], dtype=np.int64).tobytes())


def digest_batches(prepared: list[tuple[int, list]]) -> str:
    """A digest of every row of every batch: its pair's position, ids, types and mask."""
    h = hashlib.blake2b(digest_size=16)
    for start, batches in prepared:
        for batch in batches:
            _hash_batch(h, batch.tensors, batch.indices, start)
    return h.hexdigest()


def reference_digest(tokenizer: Any, pairs: list, prepared: list[tuple[int, list]],
                     max_length: int) -> str:
    """The same digest over the tokenizer's own pair encoding of the same rows."""
    from abnirml.rankers.support.device_batching import TokenColumns

    h = hashlib.blake2b(digest_size=16)
    for start, batches in prepared:
        rows = [row for batch in batches for row in batch.indices.tolist()]
        part = pairs[start:start + max(rows) + 1] if rows else []
        encoded = tokenizer([q for q, _ in part], [d for _, d in part], truncation=True,
                            max_length=max_length)
        columns = TokenColumns.from_lists({k: encoded[k] for k in
                                           ("input_ids", "token_type_ids", "attention_mask")})
        for batch in batches:
            _hash_batch(h, columns.padded(batch.indices, {}), batch.indices, start)
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    from benchmarks.gpu import BATTERY, DEFAULT_DATA, build_model, sample_building, vocab_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=65_536)
    args = parser.parse_args(argv)
    if args.data != "demo" and not (Path(args.data) / "queries.tsv").is_file():
        print(f"no collection at {args.data}: using the demo collection")
        args.data = "demo"

    from abnirml.rankers.registry import RankerEnv, build_ranker
    from abnirml.rankers.support.device_batching import CHUNK_PAIRS, ENGINE_PAIRS

    build_s, pairs = sample_building(args.data, BATTERY)
    with tempfile.TemporaryDirectory(prefix="abnirml-feed-") as tmp:
        model = build_model("micro", vocab_dir(None), Path(tmp) / "micro")
        ranker: Any = build_ranker(f"cross-encoder:{model}+max_tokens={args.max_tokens}",
                                   RankerEnv())
        ranker._ready()
        store, _ = ranker._joiner
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        wall, cpu = time.perf_counter(), time.process_time()
        for s in range(0, len(texts), CHUNK_PAIRS):
            store.view(texts[s:s + CHUNK_PAIRS])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
        print(f"battery: {len(pairs):,} unique pairs, {len(texts):,} unique texts on "
              f"{args.data} (sample building {build_s:.1f} s); host: {cores} cores, load "
              f"average {os.getloadavg()[0]:.1f}")
        print(f"tokenizing the unique texts into the store: {wall:.2f} s wall, {cpu:.2f} CPU-s "
              f"({len(texts) / wall:,.0f} texts/s; {len(texts) / cpu:,.0f} per CPU-s)")
        pieces = pieces_of(pairs, ENGINE_PAIRS, CHUNK_PAIRS)
        best_cpu = float("inf")
        prepared: list[tuple[int, list]] = []
        for repeat in range(args.repeats):
            prepared = []
            wall, cpu = time.perf_counter(), time.process_time()
            start = 0
            for piece in pieces:
                prepared.append((start, ranker._prepare(piece)))
                start += len(piece)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            best_cpu = min(best_cpu, cpu)
            batches = sum(len(b) for _, b in prepared)
            print(f"feed {repeat + 1}: {len(pairs):,} pairs in {batches:,} batches, "
                  f"{wall:.3f} s wall, {cpu:.3f} CPU-s ({len(pairs) / wall:,.0f} pairs/s wall)")
        assert start == len(pairs)
        mine = digest_batches(prepared)
        theirs = reference_digest(ranker.tokenizer, pairs, prepared, ranker.max_length)
        rows = sum(len(b.indices) for _, batches in prepared for b in batches)
        print(f"every input built: {rows:,} rows; digest {mine} — the tokenizer's own pair "
              f"encoding: {theirs} ({'identical' if mine == theirs else 'DIFFERENT'})")
        if mine != theirs or rows != len(pairs):
            return 1
        print(f"host feed: {len(pairs) / best_cpu:,.0f} pairs/s per core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
