"""Writers for tiny transfer corpora in their public release formats (used by the tests)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path


def lines(path: Path, rows: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{r}\n" for r in rows), encoding="utf-8")
    return path


def write_mrpc(folder: Path, rows: list[tuple[int, str, str, str, str]],
               name: str = "msr_paraphrase_test.txt") -> Path:
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    return lines(folder / name, [header] + ["\t".join(map(str, r)) for r in rows])


def write_jfleg(folder: Path, split: str, source: list[str], refs: list[list[str]],
                spellchecked: list[str] | None = None) -> None:
    lines(folder / f"{split}.src", source)
    if spellchecked is not None:
        lines(folder / f"{split}.spellchecked.src", spellchecked)
    for i, ref in enumerate(refs):
        lines(folder / f"{split}.ref{i}", ref)


def write_simplification(folder: Path, prefix: str, original: list[str],
                         simplified: list[list[str]]) -> None:
    lines(folder / f"{prefix}.orig", original)
    for i, simp in enumerate(simplified):
        lines(folder / f"{prefix}.simp.{i}", simp)


def write_wnc(folder: Path, rows: list[tuple[str, str, str]]) -> Path:
    """rows: (rev_id, biased, neutral) → the 7-column biased.full layout."""
    out = []
    for rev, biased, neutral in rows:
        out.append("\t".join([rev, biased.lower(), neutral.lower(), biased, neutral,
                              "NN VB", "ROOT"]))
    return lines(folder / "bias_data" / "WNC" / "biased.full", out)


def write_gyafc(folder: Path, genre: str, split: str, informal: list[str],
                formal_refs: list[list[str]], formal: list[str],
                informal_refs: list[list[str]], qids: dict[str, list[str]] | None = None
                ) -> None:
    base = folder / "GYAFC_Corpus" / genre / split
    lines(base / "informal", informal)
    lines(base / "formal", formal)
    for i, ref in enumerate(formal_refs):
        lines(base / f"formal.ref{i}", ref)
    for i, ref in enumerate(informal_refs):
        lines(base / f"informal.ref{i}", ref)
    for src, ids in (qids or {}).items():
        lines(base / f"{src}.qids", ids)


def write_xsum(folder: Path, ident: str, title: str, summary: str, body: list[str]) -> Path:
    text = (f"[SN]URL[SN]\nhttp://www.bbc.co.uk/news/{ident}\n\n[SN]TITLE[SN]\n{title}\n\n"
            f"[SN]FIRST-SENTENCE[SN]\n{summary}\n\n[SN]RESTBODY[SN]\n" + "\n".join(body) + "\n")
    path = folder / "bbc-summary-data" / f"{ident}.summary"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_story(folder: Path, source: str, ident: str, body: list[str],
                highlights: list[str]) -> Path:
    text = "\n\n".join(body) + "\n\n" + "".join(f"@highlight\n\n{h}\n\n" for h in highlights)
    path = folder / source / "stories" / f"{ident}.story"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def nq_record(question: str, answers: list[str], passages: list[str]) -> dict:
    return {"dataset": "nq_dev_psgs_w100", "question": question, "answers": answers,
            "positive_ctxs": [{"title": "T", "text": t, "passage_id": str(100 + i)}
                              for i, t in enumerate(passages)],
            "negative_ctxs": [], "hard_negative_ctxs": []}


def write_nq(folder: Path, records: list[dict], name: str = "biencoder-nq-dev.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if ".jsonl" in name:
        text = "".join(json.dumps(r) + "\n" for r in records)
    else:
        text = json.dumps(records, indent=1)
    if name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path
