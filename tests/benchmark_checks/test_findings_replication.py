"""benchmarks/findings_replication.py: the two halves share no query and cover all of them,
and a finding holds only where the other half agrees in sign and its interval excludes 0."""

from __future__ import annotations

from benchmarks.findings_replication import halves, holds_effect


def test_the_halves_split_the_queries_by_alternate_ids(tmp_path):
    folder = tmp_path / "dl"
    folder.mkdir()
    ids = ["1133167", "19335", "47923", "87181", "104861"]
    (folder / "queries.tsv").write_text("".join(f"{q}\tquery {q}\n" for q in ids),
                                        encoding="utf-8")
    files = halves(folder, tmp_path / "out")
    a, b = (files[n].read_text(encoding="utf-8").split() for n in "AB")
    assert a == ["19335", "87181", "1133167"] and b == ["47923", "104861"]


def test_a_finding_holds_only_with_the_same_sign_and_an_interval_beyond_zero():
    assert holds_effect({"score": 0.6, "ci_low": 0.2, "ci_high": 0.9}, up=True)
    assert not holds_effect({"score": 0.6, "ci_low": -0.1, "ci_high": 0.9}, up=True)
    assert not holds_effect({"score": -0.6, "ci_low": -0.9, "ci_high": -0.2}, up=True)
    assert holds_effect({"score": -0.6, "ci_low": -0.9, "ci_high": -0.2}, up=False)
    assert not holds_effect(None, up=True)
    assert not holds_effect({"score": None}, up=False)
