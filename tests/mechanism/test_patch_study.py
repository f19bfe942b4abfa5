"""Patching over samples: sample choice, skips, independence of order and batch size, the
command, its files and the report section."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from abnirml.cli import main
from abnirml.mechanism.study import SMALL_DIFFERENCE, patch_samples
from abnirml.mechanism.summary import summarise
from abnirml.mechanism.targets import target_for
from abnirml.rankers.registry import RankerEnv, build_ranker
from abnirml.samples import Sample
from tests._tiny_models import save_cross_encoder
from tests.helpers import reordering_bound, transformer_chain

DOCS = ["the sun light is warm and fish is good for bone",
        "bread dough will rise in a warm oven in two hours",
        "the roman empire split into east and west",
        "vitamin d is made in the sun and found in fish"]
QUERIES = ["vitamin d deficiency symptoms", "how to bake bread", "why did rome split"]


def appended_samples() -> list[Sample]:
    return [Sample(q, f"{d} {q.split()[0]}", d, {"qid": f"q{i}"})
            for i, q in enumerate(QUERIES) for d in DOCS]


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory):
    folder = save_cross_encoder(tmp_path_factory.mktemp("ce") / "model")
    return f"cross-encoder:{folder}"


@pytest.fixture(scope="module")
def target(cross_encoder):
    return target_for(build_ranker(cross_encoder, RankerEnv()))


def test_order_of_samples_changes_nothing(target):
    samples = appended_samples()
    forward = summarise(patch_samples(target, samples, "p", limit=5, min_difference=0.0))
    backward = summarise(patch_samples(target, samples[::-1], "p", limit=5,
                                       min_difference=0.0))
    assert forward == backward and forward["samples"] == 5
    assert forward["queries"] >= 2 and forward["residual"]["n"][0][-1] == 5


def test_seed_and_limit_choose_the_samples(target):
    samples = appended_samples()
    one = patch_samples(target, samples, "p", limit=3, seed=1, min_difference=0.0)
    two = patch_samples(target, samples, "p", limit=3, seed=2, min_difference=0.0)
    assert len(one.samples) == 3
    assert [s.key for s in one.samples] != [s.key for s in two.samples]


def test_unusable_pairs_are_counted_by_reason(target):
    samples = [Sample("cat", "a dog", "a dog", {"qid": "1"}),               # identical
               Sample("cat", "a dog", "a dog in the river", {"qid": "2"}),  # deletion
               *appended_samples()[:2]]
    result = patch_samples(target, samples, "p", min_difference=1e9)
    assert result.samples == [] and result.tried == 4
    assert result.skipped[SMALL_DIFFERENCE] == 2
    assert sum(result.skipped.values()) == 4
    assert any("removes tokens" in reason for reason in result.skipped)


def test_grids_have_one_row_per_layer_and_nan_for_missing_classes(target):
    result = patch_samples(target, appended_samples()[:1], "p", min_difference=0.0)
    (sample,) = result.samples
    assert sample.residual.shape == (3, 6) and sample.heads.shape == (2, 2)
    assert sample.residual[:, -1].tolist() == [1.0, 1.0, 1.0]      # all positions
    assert sample.forwards == 2 + 3 * int((~np.isnan(sample.residual[0])).sum()) + 4


def test_batch_size_does_not_change_results_on_splade_tiny():
    pytest.importorskip("safetensors")
    from abnirml.errors import ConfigError

    try:
        ranker = build_ranker("splade", RankerEnv())
    except ConfigError as exc:
        pytest.skip(f"needs the packaged SPLADE-tiny: {exc}")
    target = target_for(ranker)
    # documents that already match their query (a baseline SPLADE score above 0)
    samples = [Sample(q, f"{d} {q.split()[0]}", d, {"qid": f"q{i}"})
               for i, (q, d) in enumerate(zip(QUERIES, [DOCS[3], DOCS[1], DOCS[2]], strict=True))]
    runs = [patch_samples(target, samples, "p", batch_size=size) for size in (1, 4, None)]
    keys = [[s.key for s in r.samples] for r in runs]
    assert keys[0] == keys[1] == keys[2] and len(keys[0]) == 3
    scale = np.array([max(abs(s.base), abs(s.perturbed)) / abs(s.perturbed - s.base)
                      for s in runs[0].samples])[:, None, None]
    config = ranker.model.config
    bound = reordering_bound(transformer_chain(config, outputs=(
        config.hidden_size, config.hidden_size, config.vocab_size, config.vocab_size)))
    for grid in ("residual", "heads"):
        values = [np.stack([getattr(s, grid) for s in r.samples]) for r in runs]
        assert np.nanmax(np.abs(values[0])) > 0.01
        # differently shaped matrix products change the order of float32 sums only: the
        # patched scores agree to the reordering bound of their size (SPLADE's terms are
        # ≥ 0, so its score is their size), which the normalisation divides by
        # |perturbed − base|
        for other in values[1:]:
            assert np.nanmax(np.abs(values[0] - other) / scale) <= bound


def test_command_writes_documented_files_and_report_section(cross_encoder, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["patch", "--ranker", cross_encoder, "--probe", "tmp:append-query",
                 "--limit", "2", "--out", str(out), "--quiet", "--no-cache",
                 "--resamples", "50", "--min-difference", "0"])
    assert code == 0, capsys.readouterr().err
    assert "tmp:append-query: 2 samples" in capsys.readouterr().out
    folders = list((out / "patching").iterdir())
    assert len(folders) == 1
    folder = folders[0]
    document = json.loads((folder / "patching.json").read_text())
    assert document["format"] == 1 and document["ranker"]["spec"] == cross_encoder
    (probe,) = document["probes"]
    assert probe["samples"] == 2 and probe["layers"] == 2 and probe["heads"] == 2
    assert len(probe["residual"]["mean"]) == 3 and len(probe["heads_grid"]["mean"]) == 2
    with np.load(folder / "samples" / "tmp-append-query.npz") as arrays:
        assert arrays["residual"].shape == (2, 3, 6) and arrays["heads"].shape == (2, 2, 2)
        assert np.allclose(arrays["residual"][:, -1, -1], 1.0)
    assert "## tmp:append-query" in (folder / "patching.md").read_text()
    from abnirml.report.patching import patching_section

    section = patching_section(out)
    assert [slug.split("tmp-append-query-")[1] for slug, _ in section.tables] == [
        "residual", "heads", "residual-median", "heads-median"]
    # a second run replaces the tool's own folder
    assert main(["patch", "--ranker", cross_encoder, "--probe", "tmp:append-query",
                 "--limit", "1", "--out", str(out), "--quiet", "--no-cache",
                 "--granularity", "heads", "--min-difference", "0"]) == 0
    document = json.loads((folder / "patching.json").read_text())
    assert document["probes"][0]["samples"] == 1 and "residual" not in document["probes"][0]


def test_unalignable_probe_and_foreign_folder_are_refused_in_one_line(cross_encoder, tmp_path,
                                                                      capsys):
    code = main(["patch", "--ranker", cross_encoder, "--probe", "tmp:remove-stops",
                 "--limit", "2", "--out", str(tmp_path / "o"), "--quiet", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and "tmp:remove-stops" in err and "removes tokens" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2
    assert main(["patch", "--ranker", cross_encoder, "--probe", "tmp:append-query",
                 "--granularity", "neurons", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "granularity must be residual and/or heads" in capsys.readouterr().err
    assert main(["patch", "--ranker", "bm25", "--probe", "tmp:append-query", "--out",
                 str(tmp_path / "o"), "--quiet", "--no-cache"]) == 2
    assert "patching needs a transformer ranker" in capsys.readouterr().err
    foreign = tmp_path / "f" / "patching" / "x"
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine")
    assert main(["patch", "--ranker", f"{cross_encoder}@x", "--probe", "tmp:append-query",
                 "--out", str(tmp_path / "f"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "'notes.txt'" in err and "refusing to replace" in err
    assert (foreign / "notes.txt").read_text() == "mine"
    # a folder that looks like patching's own (its summary file) but holds a user's file too
    (foreign / "patching.json").write_text("{}")
    assert main(["patch", "--ranker", f"{cross_encoder}@x", "--probe", "tmp:append-query",
                 "--out", str(tmp_path / "f"), "--quiet"]) == 2
    assert "refusing to replace" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "mine"


def test_patching_into_a_run_folder_adds_the_report_section(cross_encoder, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--collection", "demo", "--ranker", "bm25", "--probe",
                 "tmp:append-query", "--out", str(out), "--no-cache", "--quiet",
                 "--no-effectiveness"]) == 0
    assert "activation patching" not in (out / "report.md").read_text()
    assert main(["patch", "--ranker", f"{cross_encoder}@tiny", "--probe", "tmp:append-query",
                 "--limit", "2", "--out", str(out), "--quiet", "--resamples", "20",
                 "--min-difference", "0"]) == 0
    report = (out / "report.md").read_text()
    assert "## Patching tmp:append-query — " in report and "attention heads (median)" in report
    assert (out / "tables" / "patching-tiny-tmp-append-query-heads.csv").is_file()
    assert "data:image/png" in (out / "report.html").read_text()
    # `abnirml report` rebuilds it from the files alone
    (out / "report.md").unlink()
    assert main(["report", str(out)]) == 0
    assert "## Patching tmp:append-query — " in (out / "report.md").read_text()
    # everything patching wrote is on the run folder's manifest: patching again replaces its
    # own folder, and the next run replaces the whole run folder
    assert main(["patch", "--ranker", f"{cross_encoder}@tiny", "--probe", "tmp:append-query",
                 "--limit", "2", "--out", str(out), "--quiet", "--resamples", "20",
                 "--min-difference", "0"]) == 0
    assert main(["run", "--collection", "demo", "--ranker", "bm25", "--probe",
                 "tmp:append-query", "--out", str(out), "--no-cache", "--quiet",
                 "--no-effectiveness"]) == 0, capsys.readouterr().err
    assert not (out / "patching").exists()
    capsys.readouterr()
