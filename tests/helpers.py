"""Builders for small hand-made collections used across tests, and the one-error-line check
of a failing command."""

from __future__ import annotations

from pathlib import Path

from abnirml.data.collection import Collection


def make_collection(queries: dict[str, str], docs: dict[str, str],
                    qrels: dict[str, dict[str, int]], name: str = "tiny") -> Collection:
    return Collection(name=name, queries=queries, docs=docs, qrels=qrels,
                      skipped={"judged_without_text": 0})


def write_collection_dir(root: Path, queries: dict[str, str], docs: dict[str, str],
                         qrels: dict[str, dict[str, int]],
                         runs: dict[str, dict[str, list[tuple[str, float]]]] | None = None
                         ) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "queries.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in queries.items()),
                                      encoding="utf-8")
    (root / "passages.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in docs.items()),
                                       encoding="utf-8")
    (root / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, j in qrels.items()
                                            for d, g in j.items()), encoding="utf-8")
    if runs:
        (root / "runs").mkdir(exist_ok=True)
        for name, run in runs.items():
            lines = [f"{q} Q0 {d} {i + 1} {s} {name}\n" for q, ranking in run.items()
                     for i, (d, s) in enumerate(ranking)]
            (root / "runs" / f"{name}.run").write_text("".join(lines), encoding="utf-8")
    return root


def one_error_line(capsys, *args: str) -> str:
    """Run the CLI expecting exit 2 and exactly one ``abnirml: error:`` line; return it."""
    from abnirml.cli import main

    code = main(list(args))
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2, err
    errors = [line for line in err if line.startswith("abnirml: error: ")]
    assert len(errors) == 1 and "Traceback" not in "\n".join(err), err
    return errors[0]
