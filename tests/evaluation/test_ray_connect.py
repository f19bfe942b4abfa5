"""Joining a Ray cluster fails in bounded time and one line: token files named with their
path and what is wrong with them, listeners that are not Ray recognised by their answer
(stand-ins on 127.0.0.1 started and stopped here), ``auto`` resolved, ``ray://`` without
Ray Client, SIGTERM kept, a dead node's reports not printed.

The checks against a real cluster are in test_ray_cluster.py."""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from abnirml.errors import ConfigError
from abnirml.evaluation.execution import ray_connect
from abnirml.evaluation.execution.ray_connect import (
    AUTH_FIX,
    HTTP2_PREFACE,
    check_listener,
    check_token,
    connection_problem,
)
from tests.helpers import one_error_line

ROOT = Path(__file__).resolve().parents[2]

GCS_RETRY_LINE = ("[2026-01-01 00:00:00,000 W 1 1] gcs_client.cc:210: Failed to get cluster "
                  "ID from GCS server: Unauthenticated: RPC error: InvalidAuthToken: "
                  "Authentication token is missing or incorrect\n")
FIX = ("; write the cluster's token there ('ray get-auth-token' on its head prints it) or "
       "set RAY_AUTH_TOKEN to it")


# -- token files ----------------------------------------------------------------------------


@pytest.fixture
def token_env(monkeypatch, tmp_path):
    """Token auth on, no token in the environment, HOME a fresh folder."""
    for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return monkeypatch


def _problem(target="the Ray cluster at head:6379", **kwargs) -> str:
    with pytest.raises(ConfigError) as raised:
        check_token(target, **kwargs)
    return str(raised.value)


HEAD = "Ray token auth is on (RAY_AUTH_MODE=token) for the Ray cluster at head:6379, but "


@pytest.mark.parametrize(("make", "problem"), [
    (lambda p: None, "does not exist"),
    (lambda p: p.mkdir(), "is a directory, not a file holding the token"),
    (lambda p: p.write_text(""), "is empty"),
    (lambda p: p.write_text("\n  \nabc123\n"),
     "has an empty first line (Ray reads the token from the first line)"),
    (lambda p: p.symlink_to(p.with_name("gone")), "is a broken symbolic link"),
])
def test_a_token_file_that_cannot_work_is_named_with_its_path(token_env, tmp_path, make,
                                                              problem):
    path = tmp_path / "token"
    make(path)
    token_env.setenv("RAY_AUTH_TOKEN_PATH", str(path))
    assert _problem() == f"{HEAD}RAY_AUTH_TOKEN_PATH names {path}, which {problem}{FIX}"


def test_an_unreadable_token_file_says_why(token_env, tmp_path):
    """(Tests run as root here, where no mode bit keeps a file unreadable: the refusal is
    made by the stand-in ``open``.)"""
    path = tmp_path / "token"
    path.write_text("abc\n")
    token_env.setenv("RAY_AUTH_TOKEN_PATH", str(path))

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    token_env.setattr(ray_connect, "open", refused, raising=False)
    assert _problem() == (f"{HEAD}RAY_AUTH_TOKEN_PATH names {path}, which cannot be read "
                          f"(Permission denied){FIX}")


def test_the_default_token_file_is_named_when_nothing_else_is_set(token_env, tmp_path):
    default = tmp_path / "home" / ".ray" / "auth_token"
    assert _problem() == (f"{HEAD}RAY_AUTH_TOKEN and RAY_AUTH_TOKEN_PATH are not set and the "
                          f"default token file {default} does not exist{FIX}")
    default.parent.mkdir(parents=True)
    default.write_text("")
    assert "the default token file" in _problem() and _problem().endswith(f"is empty{FIX}")
    default.write_text("abc123\n")
    check_token("the Ray cluster at head:6379")


def test_tokens_ray_would_find_pass(token_env, tmp_path):
    path = tmp_path / "token"
    path.write_text("  abc123  \nmore\n")
    token_env.setenv("RAY_AUTH_TOKEN_PATH", str(path))
    check_token("x")
    token_env.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "missing"))
    token_env.setenv("RAY_AUTH_TOKEN", "abc")          # first in Ray's order: the file unread
    check_token("x")
    token_env.delenv("RAY_AUTH_TOKEN")
    for mode in ("disabled", "k8s"):                   # no token wanted
        token_env.setenv("RAY_AUTH_MODE", mode)
        check_token("x")
    token_env.delenv("RAY_AUTH_MODE")
    check_token("x")
    token_env.setenv("RAY_AUTH_MODE", "token")
    token_env.delenv("RAY_AUTH_TOKEN_PATH")
    check_token("the Ray that --ray local starts", default_file_optional=True)   # Ray writes it


def test_a_token_file_problem_is_refused_before_anything_loads(token_env, tmp_path, capsys,
                                                               monkeypatch):
    token_env.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path))
    from abnirml.data import collection

    def no_loading(*args, **kwargs):
        raise AssertionError("the collection was loaded")

    monkeypatch.setattr(collection, "load_collection", no_loading)
    line = one_error_line(capsys, "run", "--quiet", "--no-cache", "--ray", "10.0.0.5:6379")
    assert line == (f"abnirml: error: Ray token auth is on (RAY_AUTH_MODE=token) for the Ray "
                    f"cluster at 10.0.0.5:6379, but RAY_AUTH_TOKEN_PATH names {tmp_path}, "
                    f"which is a directory, not a file holding the token{FIX}")
    token_env.setenv("RAY_ADDRESS", "10.0.0.7:6379")
    line = one_error_line(capsys, "run", "--quiet", "--no-cache", "--ray", "auto")
    assert "for the Ray cluster at 10.0.0.7:6379 (--ray auto), but" in line


# -- listeners that are not Ray -------------------------------------------------------------


@contextlib.contextmanager
def _listener(answer: bytes | None = None, close: bool = False):
    """A loopback listener: ``answer`` sent to each connection once the client has spoken,
    ``close`` closes it at once, neither: accepted and held, silent."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            if close:
                connection.close()
                continue
            held.append(connection)
            if answer is not None:
                with contextlib.suppress(OSError):
                    connection.recv(64)
                    connection.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}", held
    finally:
        stop.set()
        thread.join(5)
        for connection in held:
            connection.close()
        server.close()


@contextlib.contextmanager
def _http_server():
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _listener_problem(address: str, timeout: float = 2.0) -> str:
    with pytest.raises(ConfigError) as raised:
        check_listener(address, address, timeout=timeout)
    return str(raised.value)


def test_a_grpc_server_passes_the_preface_check():
    settings = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00" + b"\x00\x03\x00\x00\x00\x64"
    with _listener(settings) as (address, _):
        check_listener(address, address, timeout=5)


def test_an_http_server_is_not_taken_for_ray():
    with _http_server() as address:
        problem = _listener_problem(address)
    assert problem.startswith(f"the listener at {address} is not a Ray cluster: it answered "
                              "as an HTTP/1 server (")
    assert problem.endswith("give the address of the head's GCS (ray start --head --port, "
                            "6379 by default) or of its Ray Client server (ray://HOST:10001)")


def test_a_silent_listener_is_given_up_after_the_timeout():
    with _listener() as (address, held):
        started = time.monotonic()
        problem = _listener_problem(address, timeout=1.0)
        waited = time.monotonic() - started
    assert "it accepted the connection but sent nothing within 1 s" in problem
    assert held and waited >= 1.0          # it did wait for an answer, and then stopped


@pytest.mark.parametrize(("listener", "said"), [
    ({"close": True}, "it closed the connection without answering"),
    ({"answer": b"\x15\x03\x03\x00\x02\x02\x46"}, "it answered as a TLS server"),
    ({"answer": b"SSH-2.0-OpenSSH_9.6\r\n"},
     "it answered 'SSH-2.0-OpenSSH_9.6', not as an HTTP/2 server"),
])
def test_other_listeners_are_described_by_their_answer(listener, said):
    # these listeners answer (or close) at once: a long wait costs nothing unless the
    # machine is too busy to run the listener's thread within the default 2 s. A listener
    # that closes is named so whether the close arrives as an end of stream or a reset.
    with _listener(**listener) as (address, _):
        assert said in _listener_problem(address, timeout=60.0)


def test_nothing_listening_is_one_line():
    with socket.socket() as probe:          # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert _listener_problem(f"127.0.0.1:{port}").startswith(
        f"cannot reach the Ray cluster at 127.0.0.1:{port} (Connection refused)")


def test_the_preface_is_http2s():
    """RFC 9113 §3.4: the 24-octet preface, then a SETTINGS frame (type 4, stream 0)."""
    assert HTTP2_PREFACE[:24] == b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    frame = HTTP2_PREFACE[24:]
    assert len(frame) == 9 and frame[3] == 0x4 and frame[5:] == b"\0\0\0\0"


def _run_against(address: str, tmp_path: Path, **popen) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update({"PYTHONPATH": str(ROOT / "src"), "HOME": str(tmp_path)})
    return subprocess.Popen(
        [sys.executable, "-m", "abnirml", "run", "--ranker", "bm25", "--probe",
         "tmp:prepend-query", "--no-cache", "--quiet", "--out", str(tmp_path / "out"),
         "--ray", address], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, **popen)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["http", "silent"])
def test_a_run_against_a_listener_that_is_not_ray_ends_in_one_line(tmp_path, kind):
    """Ray's own driver waits for minutes on either (an HTTP server answers its gRPC
    with 400s, a silent socket with nothing); the run ends with one line naming the
    address."""
    server = _http_server() if kind == "http" else _listener()
    with server as served:
        address = served if kind == "http" else served[0]
        process = _run_against(address, tmp_path)
        _, err = process.communicate(timeout=600)
    assert process.returncode == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"abnirml: error: the listener at {address} is not a Ray cluster: "), err


@pytest.mark.slow
def test_sigterm_while_joining_ends_the_run_and_blames_no_ranker(tmp_path):
    """SIGTERM while the driver waits for a listener's answer: the process ends by the
    signal, as it would without Ray (Ray's handler would raise SystemExit(15) in the
    scoring loop and be reported as a ranker calling sys.exit)."""
    with _listener() as (address, held):
        process = _run_against(address, tmp_path)
        deadline = time.monotonic() + 300
        while not held and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        time.sleep(1.0)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    assert held, err
    assert process.returncode == -signal.SIGTERM, err
    assert "ranker" not in err and "sys.exit" not in err


# -- addresses, Ray Client, what a failure says ----------------------------------------------


def test_auto_follows_ray_address_and_says_where(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.5:6379")
    assert ray_connect.resolved_address("auto") == "10.0.0.5:6379"
    assert ray_connect.resolved_address("head:6379") == "head:6379"
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    with pytest.raises(ConfigError, match="--ray auto follows RAY_ADDRESS, which says 'auto'"):
        ray_connect.resolved_address("auto")
    monkeypatch.setenv("RAY_ADDRESS", "http://head:8265")
    with pytest.raises(ConfigError, match=r"RAY_ADDRESS \(followed by --ray auto\) "
                                          r"'http://head:8265' is not a Ray address"):
        ray_connect.resolved_address("auto")


def test_auto_without_a_cluster_says_what_to_set(monkeypatch):
    services = pytest.importorskip("ray._private.services")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def none_running(address, temp_dir):
        raise ConnectionError("Could not find any running Ray instance.")

    monkeypatch.setattr(services, "get_ray_address_from_environment", none_running)
    with pytest.raises(ConfigError, match=r"--ray auto found no cluster: RAY_ADDRESS is not "
                                          r"set and no Ray started with 'ray start' runs"):
        ray_connect.resolved_address("auto")


def test_ray_client_addresses_need_ray_client(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "grpc" else real(name, *a))
    with pytest.raises(ConfigError) as raised:
        ray_connect.connect(object(), "ray://head:10001")
    assert str(raised.value).startswith(
        "the Ray cluster at ray://head:10001 is a Ray Client address (ray://), which needs "
        "Ray's client libraries: pip install -e '.[ray-client]'")


def test_a_refused_token_names_the_variables_that_fix_it():
    line = connection_problem("10.0.0.5:6379",
                              ConnectionError("Failed to connect to Ray cluster at "
                                              "10.0.0.5:6379"), GCS_RETRY_LINE * 20)
    assert line == (f"the Ray cluster at 10.0.0.5:6379 refused abnirml's token (missing or "
                    f"not the cluster's): {AUTH_FIX}")
    assert "\n" not in line
    for variable in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        assert variable in line


def test_other_connection_failures_are_one_line_with_their_cause():
    mismatch = connection_problem("head:6379", RuntimeError(
        "Version mismatch: The cluster was started with:\n    Ray: 2.50.0\n"), "")
    assert mismatch.startswith("cannot join the Ray cluster at head:6379: its Ray or Python "
                               "version differs")
    other = connection_problem("head:6379", ConnectionError("Failed to connect\nmore"),
                               "[x E 1 1] raylet.cc:1: Something broke: details\n")
    assert other == ("cannot join the Ray cluster at head:6379: ConnectionError: Failed to "
                     "connect ([x E 1 1] raylet.cc:1: Something broke: details)")


# -- what Ray changes in this process -------------------------------------------------------


def test_ray_cannot_replace_the_sigterm_handler_while_it_starts():
    ray_utils = pytest.importorskip("ray._private.utils")
    before = signal.getsignal(signal.SIGTERM)

    def rays_handler(signum, frame):
        sys.exit(signum)

    with ray_connect.sigterm_kept():
        ray_utils.set_sigterm_handler(rays_handler)     # what ray.init does
        assert signal.getsignal(signal.SIGTERM) is before
        signal.signal(signal.SIGTERM, rays_handler)     # and were it set another way
    assert signal.getsignal(signal.SIGTERM) is before
    assert ray_utils.set_sigterm_handler.__module__ == "ray._private.utils"


def test_a_dead_nodes_reports_are_not_printed_and_everything_else_is(monkeypatch):
    ray_worker = pytest.importorskip("ray._private.worker")
    from abnirml.evaluation.execution.ray_executor import quiet_node_reports

    printed = []
    monkeypatch.setattr(ray_worker, "print_to_stdstream",
                        lambda data, ignore_prefix: printed.append(data["lines"][0][:20]))
    undo = quiet_node_reports(None)
    for line in ("Raylet is terminated. Termination is unexpected. Last 20 lines: ...",
                 "The node with node id: 5f3c and address: 10.0.0.7 has been marked dead",
                 "A worker died or was killed while executing a task"):
        ray_worker.print_to_stdstream({"lines": [line], "pid": "raylet", "is_err": False},
                                      False)
    ray_worker.print_to_stdstream({"lines": ["Raylet is terminated"], "pid": 4242,
                                   "is_err": True}, False)       # a worker's own output
    assert printed == ["A worker died or was", "Raylet is terminated"]
    undo()
    assert not getattr(ray_worker.print_to_stdstream, "abnirml_quiet", False)


def test_an_orderly_close_after_the_preface_is_named_as_a_close():
    """The listener reads the preface, then closes (an end of stream, no reset): that is a
    close, not a listener that "sent nothing"."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def serve():
        connection, _ = server.accept()
        with connection:
            connection.recv(64)
            connection.shutdown(socket.SHUT_WR)
            time.sleep(1.0)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        address = f"127.0.0.1:{server.getsockname()[1]}"
        assert "it closed the connection without answering" in _listener_problem(address, 30.0)
    finally:
        thread.join(5)
        server.close()
