"""The packaged demo transfer corpus (``--transfer-data demo``): it ships as package data,
every ``dtp:*`` probe draws samples from it with the expected discards, and BM25 runs on it
through the command line."""

import json
import tomllib
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from abnirml.cli import main
from abnirml.data.transfer import DEMO, check_transfer_data, demo_transfer_path, transfer_root
from abnirml.probes.transfer.probes import available
from abnirml.samples import Sample, Skip
from tests._contexts import probe_context

pytest.importorskip("spacy")

REPO = Path(__file__).resolve().parents[3]
FOLDERS = ("mrpc", "jfleg", "turkcorpus", "asset", "gyafc", "wnc", "xsum", "cnndm", "nq")

#: probe → (samples, discards by reason). Every pair of the demo corpus becomes a sample
#: except one repeated JFLEG correction and one repeated TurkCorpus simplification.
EXPECTED = {
    "dtp:paraphrase-mrpc": (36, {}),
    "dtp:fluency-jfleg": (39, {"duplicate": 1}),
    "dtp:fluency-jfleg-spellchecked": (39, {"duplicate": 1}),
    "dtp:formality-gyafc": (72, {}),
    "dtp:formality-gyafc-em": (36, {}),
    "dtp:formality-gyafc-fr": (36, {}),
    "dtp:simplicity-turkcorpus": (39, {"duplicate": 1}),
    "dtp:simplicity-asset": (40, {}),
    "dtp:neutrality-wnc": (36, {}),
    "dtp:succinctness-xsum": (30, {}),
    "dtp:succinctness-cnn": (16, {}),
    "dtp:succinctness-dailymail": (16, {}),
    "dtp:factuality-nq-per": (8, {}),
    "dtp:factuality-nq-gpe": (9, {}),
    "dtp:factuality-nq-loc": (10, {}),
    "dtp:factuality-nq-norp": (8, {}),
    "dtp:factuality-nq-org": (10, {}),
}


def _count_lines(path: Path) -> int:
    return sum(1 for line in path.read_text("utf-8").splitlines() if line.strip())


def raw_pair_counts(root: Path) -> dict[str, int]:
    """Pairs per probe counted straight from the files (before any discard)."""
    mrpc = sum(line.startswith("1\t") for name in ("train", "test")
               for line in (root / "mrpc" / f"msr_paraphrase_{name}.txt").read_text().splitlines())
    jfleg = sum(_count_lines(root / "jfleg" / f"{s}.src") * len(list(
        (root / "jfleg").glob(f"{s}.ref*"))) for s in ("dev", "test"))

    def aligned(folder: str) -> int:
        return sum(_count_lines(orig) * len(list(orig.parent.glob(orig.stem + ".simp.*")))
                   for orig in (root / folder).glob("*.orig"))

    gyafc = {}
    for genre, group in (("Entertainment_Music", "em"), ("Family_Relationships", "fr")):
        base = root / "gyafc" / "GYAFC_Corpus" / genre
        gyafc[group] = sum(_count_lines(base / split / src) * 4 for split in ("tune", "test")
                           for src in ("informal", "formal"))
    return {
        "dtp:paraphrase-mrpc": mrpc,
        "dtp:fluency-jfleg": jfleg,
        "dtp:fluency-jfleg-spellchecked": jfleg,
        "dtp:formality-gyafc": gyafc["em"] + gyafc["fr"],
        "dtp:formality-gyafc-em": gyafc["em"],
        "dtp:formality-gyafc-fr": gyafc["fr"],
        "dtp:simplicity-turkcorpus": aligned("turkcorpus"),
        "dtp:simplicity-asset": aligned("asset"),
        "dtp:neutrality-wnc": _count_lines(root / "wnc" / "bias_data" / "WNC" / "biased.full"),
        "dtp:succinctness-xsum": len(list((root / "xsum").rglob("*.summary"))),
        "dtp:succinctness-cnn": len(list((root / "cnndm" / "cnn").rglob("*.story"))),
        "dtp:succinctness-dailymail": len(list((root / "cnndm" / "dailymail").rglob("*.story"))),
        # one passage per NQ record, every answer typed: the five probes share the records
        "nq": sum(len(r["positive_ctxs"]) for r in json.loads(
            (root / "nq" / "biencoder-nq-dev.json").read_text("utf-8"))),
    }


@pytest.fixture(scope="module")
def probe_results():
    """(samples, discards) of every catalogue transfer probe, with the Python option."""
    context = probe_context(collection=None, options={"dtp.data": "demo"})
    out = {}
    for probe in available():
        items = list(probe.samples(context))
        out[probe.name] = ([i for i in items if isinstance(i, Sample)],
                           Counter(i.reason for i in items if isinstance(i, Skip)))
    return out


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo-dtp") / "out"
    assert main(["run", "--collection", "demo", "--transfer-data", "demo", "--probe", "dtp:*",
                 "--ranker", "bm25", "--no-cache", "--out", str(out), "--quiet"]) == 0
    return out


def test_package_data_is_found_through_importlib_resources():
    root = resources.files("abnirml.data").joinpath("demo_transfer")
    assert root.is_dir()
    assert all(root.joinpath(folder).is_dir() for folder in FOLDERS)
    assert demo_transfer_path() == Path(str(root))
    assert transfer_root(DEMO) == demo_transfer_path()
    assert check_transfer_data("demo") == "demo"  # kept as given: the report says "demo"


def test_pyproject_package_data_covers_every_nested_file():
    """Every file of the corpus (down to GYAFC_Corpus/<genre>/<split>/) matches a
    package-data glob, so it is in the wheel."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["abnirml"]
    package = REPO / "src" / "abnirml"
    shipped = {p for pattern in patterns for p in package.glob(pattern) if p.is_file()}
    files = {p for p in (package / "data" / "demo_transfer").rglob("*") if p.is_file()}
    assert files and files <= shipped
    assert max(len(p.relative_to(package).parts) for p in files) >= 7  # the GYAFC tree


def test_demo_corpus_is_small():
    files = [p for p in demo_transfer_path().rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 300_000


def test_every_transfer_probe_has_samples_with_the_expected_discards(probe_results):
    assert set(probe_results) == set(EXPECTED)
    raw = raw_pair_counts(demo_transfer_path())
    for name, (samples, skips) in probe_results.items():
        expected_n, expected_skips = EXPECTED[name]
        assert (len(samples), dict(skips)) == (expected_n, expected_skips), name
        assert "no-data" not in skips and "sub-sampled" not in skips, name
        if name in raw:  # every pair in the files is either a sample or a counted discard
            assert len(samples) + sum(skips.values()) == raw[name], name
    factuality = [probe_results[f"dtp:factuality-nq-{t}"] for t in ("per", "gpe", "loc", "norp",
                                                                     "org")]
    assert sum(len(s) + sum(k.values()) for s, k in factuality) == raw["nq"]


def test_samples_carry_their_source_queries(probe_results):
    gyafc, _ = probe_results["dtp:formality-gyafc"]
    assert all(s.meta["query_source"] == "given" and s.query.endswith("?") for s in gyafc)
    for name in ("dtp:succinctness-xsum", "dtp:succinctness-cnn",
                 "dtp:succinctness-dailymail"):
        samples, _ = probe_results[name]
        assert all(s.meta["query_source"] == "given" for s in samples), name
        assert all(len(s.doc1) < len(s.doc2) for s in samples), name  # summary vs body
    mrpc, _ = probe_results["dtp:paraphrase-mrpc"]
    assert all(s.meta["query_source"] == "noun-chunk" for s in mrpc)
    for short in ("per", "gpe", "loc", "norp", "org"):
        samples, _ = probe_results[f"dtp:factuality-nq-{short}"]
        for s in samples:
            answer, substitute = s.meta["answer"].casefold(), s.meta["substitute"].casefold()
            assert answer in s.doc1.casefold() and answer not in s.doc2.casefold()
            assert substitute in s.doc2.casefold()
            assert s.meta["answer"] != s.meta["substitute"]


def test_bm25_runs_on_the_demo_corpus_through_the_cli(cli_run):
    records = [json.loads(line) for line in (cli_run / "results.jsonl").read_text().splitlines()]
    by_probe = {r["probe"]: r for r in records if r["subset"] == "all"}
    assert set(by_probe) == set(EXPECTED)
    for name, (n, skips) in EXPECTED.items():
        record = by_probe[name]
        assert record["ranker"] == "bm25" and record["n"] == n, name
        assert {k: v for k, v in record["skipped"].items() if v} == skips, name
    paraphrase = by_probe["dtp:paraphrase-mrpc"]
    assert paraphrase["symmetric"] and 0.0 <= paraphrase["score"] <= 1.0
    assert json.loads((cli_run / "run.json").read_text())["options"]["dtp.data"] == "demo"
    report = (cli_run / "report.md").read_text()
    assert "data not found" not in report
    assert "| Paraphrase | MRPC |" in report and "| Factuality | NQ PER |" in report
