"""Offline, a missing model or ir_datasets download fails at once with one line, exit 2."""

import socket
import sys
import types

import pytest

from abnirml.cli import main
from abnirml.errors import ConfigError, InputError
from abnirml.rankers.support import hf


class RecordingLoader:
    """A ``from_pretrained`` stand-in: records every call, never finds the model."""

    def __init__(self):
        self.calls = []

    def __call__(self, name, **kwargs):
        self.calls.append((name, kwargs))
        raise OSError(f"{name} is not in the cache")


@pytest.fixture()
def fresh_hub_check(monkeypatch):
    monkeypatch.setattr(hf, "_hub_reachable", {})
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)


def _refuse_connections(monkeypatch):
    attempts = []

    def refuse(address, timeout=None):
        attempts.append((address, timeout))
        raise OSError("network is unreachable")

    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


def test_unreachable_hub_means_one_cache_lookup_and_no_download(monkeypatch, fresh_hub_check):
    attempts = _refuse_connections(monkeypatch)
    load = RecordingLoader()
    ref = hf.resolve_model("org/missing-model", "cross-encoder:org/missing-model")
    with pytest.raises(ConfigError) as error:
        hf.load_pretrained(load, ref, "cross-encoder:org/missing-model")
    assert load.calls == [("org/missing-model", {"local_files_only": True})]
    assert attempts == [(("huggingface.co", 443), hf.HUB_CHECK_TIMEOUT)]
    message = str(error.value)
    assert "\n" not in message
    assert "huggingface.co cannot be reached" in message
    assert "huggingface-cli download org/missing-model" in message
    # the answer is kept: a second model does not wait on the network again
    with pytest.raises(ConfigError):
        hf.load_pretrained(RecordingLoader(), ref, "x")
    assert len(attempts) == 1


@pytest.mark.parametrize("variable", ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"])
def test_offline_variables_skip_even_the_connection_check(monkeypatch, fresh_hub_check,
                                                          variable):
    attempts = _refuse_connections(monkeypatch)
    monkeypatch.setenv(variable, "1")
    load = RecordingLoader()
    ref = hf.resolve_model("org/missing-model", "monot5:org/missing-model")
    with pytest.raises(ConfigError, match="HF_HUB_OFFLINE is set"):
        hf.load_pretrained(load, ref, "monot5:org/missing-model")
    assert [kwargs for _, kwargs in load.calls] == [{"local_files_only": True}]
    assert attempts == []


def test_reachable_hub_is_tried_once_after_the_cache(monkeypatch, fresh_hub_check):
    monkeypatch.setattr(socket, "create_connection", lambda address, timeout=None:
                        types.SimpleNamespace(close=lambda: None))
    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.example:8080")
    assert hf.hub_host() == ("mirror.example", 8080)
    load = RecordingLoader()
    ref = hf.resolve_model("org/missing-model", "r")
    with pytest.raises(ConfigError, match="hub could not provide it"):
        hf.load_pretrained(load, ref, "r")
    assert [kwargs for _, kwargs in load.calls] == [{"local_files_only": True}, {}]


def test_cli_hub_model_offline_is_one_line_exit_2(monkeypatch, fresh_hub_check, tmp_path,
                                                   capsys):
    pytest.importorskip("transformers")
    attempts = _refuse_connections(monkeypatch)
    monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
    code = main(["run", "--ranker", "cross-encoder:abnirml-test/not-a-model", "--probe",
                 "mmp:tf:length", "--no-cache", "--quiet", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1, err
    assert err[0].startswith("abnirml: error: ranker cross-encoder:abnirml-test/not-a-model: "
                             "model 'abnirml-test/not-a-model' is not a local directory")
    assert len(attempts) == 1


# --- ir_datasets -----------------------------------------------------------------------------

def _offline_irds(monkeypatch, failure):
    """An ir_datasets stand-in whose data must be downloaded, and the download fails."""
    module = types.ModuleType("ir_datasets")

    class Dataset:
        def has_queries(self):
            return True

        has_qrels = has_docs = has_queries

        def queries_iter(self):
            raise failure

    module.load = lambda name: Dataset()
    monkeypatch.setitem(sys.modules, "ir_datasets", module)


def _requests_style_failure(host):
    """What ir_datasets raises offline: RuntimeError holding requests' ConnectionErrors."""
    inner = ConnectionError(f"HTTPSConnectionPool(host='{host}', port=443): Max retries "
                            "exceeded (Caused by NameResolutionError(...))")
    return RuntimeError("All download sources failed", [("RequestsDownload(...)", inner)])


def test_irds_offline_is_one_line_naming_the_host(monkeypatch, tmp_path, capsys):
    _offline_irds(monkeypatch, _requests_style_failure("trec.nist.gov"))
    code = main(["run", "--collection", "irds:msmarco-passage/trec-dl-2019/judged",
                 "--ranker", "bm25", "--probe", "mmp:tf:length", "--no-cache", "--quiet",
                 "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == ["abnirml: error: ir_datasets could not download "
                   "'msmarco-passage/trec-dl-2019/judged' (trec.nist.gov cannot be reached): "
                   "it needs the network, or a local ir_datasets copy (~/.ir_datasets, or "
                   "$IR_DATASETS_HOME)"]
    assert not (tmp_path / "o").exists()


def test_irds_other_failures_are_one_line_too(monkeypatch):
    from abnirml.data.collection import load_collection

    _offline_irds(monkeypatch, ValueError("corrupt archive\nsecond line"))
    with pytest.raises(InputError) as error:
        load_collection("irds:some/dataset")
    assert str(error.value) == ("ir_datasets could not provide 'some/dataset': ValueError: "
                                "corrupt archive")


def test_irds_download_log_lines_are_held_back_on_failure(monkeypatch, capsys):
    irds_log = pytest.importorskip("ir_datasets.log")
    from abnirml.data.irds import read_irds

    logger = irds_log.easy()

    class Dataset:
        def has_queries(self):
            return True

        has_qrels = has_docs = has_queries

        def queries_iter(self):
            logger.info("download error: HTTPSConnectionPool(host='x.org', port=443) failed")
            logger.warn("Download failed: HTTPSConnectionPool(host='x.org', port=443)")
            raise _requests_style_failure("x.org")

    module = types.ModuleType("ir_datasets")
    module.load = lambda name: Dataset()
    monkeypatch.setitem(sys.modules, "ir_datasets", module)
    with pytest.raises(InputError, match=r"\(x.org cannot be reached\)"):
        read_irds("a/b")
    captured = capsys.readouterr()
    assert "download" not in (captured.err + captured.out).lower()
    assert irds_log.TqdmHandler.emit.__name__ == "emit"       # the handler is restored
    assert irds_log.TqdmHandler.emit.__module__ == "ir_datasets.log"
