"""``abnirml patch`` checks everything it can before any work: every number finite and
bounded, the run folder it will write into (its report rewritable) — one line each, the
file system untouched (:mod:`.fs_snapshot`)."""

from __future__ import annotations

import pytest

from .fs_snapshot import Guard

PATCH = ("patch", "--ranker", "bm25", "--probe", "tmp:append-query", "--quiet", "--no-cache")


@pytest.fixture
def cli(tmp_path, capsys):
    return Guard(tmp_path, capsys)


@pytest.mark.parametrize("flag, value, expected", [
    ("--min-difference", "nan", "--min-difference must be a finite number ≥ 0, got nan"),
    ("--min-difference", "inf", "--min-difference must be a finite number ≥ 0, got inf"),
    ("--min-difference", "-1", "--min-difference must be a finite number ≥ 0, got -1.0"),
    ("--resamples", "1000000000000", "--resamples must be 0 (no intervals) to 2,000,000"),
    ("--resamples", "-1", "--resamples must be 0 (no intervals) to 2,000,000"),
])
def test_every_number_is_finite_and_bounded_or_refused(cli, tmp_path, flag, value, expected):
    line = cli(*PATCH, "--out", tmp_path / "out", flag, value).error_line()
    assert expected in line


def test_an_edited_report_in_the_run_folder_is_refused_before_any_patching(cli, tmp_path):
    out = tmp_path / "run"
    assert cli("run", "--probe", "tmp:append-query", "--ranker", "bm25", "--no-cache",
               "--quiet", "--out", out, may_change=[out]).code == 0
    with (out / "report.md").open("a") as handle:
        handle.write("\nmy notes\n")
    # bm25 cannot be patched at all: the refusal names the report, so it came first
    line = cli(*PATCH, "--out", out).error_line()
    assert "report.md was edited or not written by abnirml" in line
