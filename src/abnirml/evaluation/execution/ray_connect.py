"""Joining a Ray cluster (``--ray ADDRESS``) or starting one in this process (``--ray
local``), in bounded time and with one line for each way it can fail.

``ray.init`` retries for minutes whatever is wrong: an address where nothing listens, a
listener that is not Ray (an HTTP server, a socket that never answers), a refused token.
Its own error then names only the address, while the cause went by in the lines its C++
client printed. So before ``ray.init`` the driver checks, each within seconds:

1. **The address**: ``auto`` is resolved the way Ray resolves it (``RAY_ADDRESS``, else the
   file the last ``ray start`` on this machine left), so every message names the cluster.
2. **The token**: with ``RAY_AUTH_MODE=token``, the token is looked for where Ray looks
   (``RAY_AUTH_TOKEN``, then the file ``RAY_AUTH_TOKEN_PATH`` names, then
   ``~/.ray/auth_token``, the first line of the file) and a missing, empty, unreadable or
   directory file is named with its path.
3. **The listener**: a TCP connection, then the HTTP/2 connection preface every gRPC server
   (Ray's GCS and its client server both are) answers with its settings; an HTTP/1 server
   answers with a status line and a silent socket with nothing.
4. **The cluster**: one request to its GCS, which answers at once, or refuses the token at
   once (Ray's driver would retry a refused token for about 20 s).

Ray's ``ray.init`` also replaces this process's SIGTERM handler with one that raises
``SystemExit(15)`` wherever the process happens to be, so a ``kill`` during scoring would
look like the ranker calling ``sys.exit``. The handler this process had is kept instead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from abnirml.errors import ConfigError, install_hint
from abnirml.evaluation.execution.parallel import available_cores

#: seconds a listener has to answer the connection preface, and the GCS its first request
PROBE_TIMEOUT_S = 20.0
#: the HTTP/2 client connection preface and an empty SETTINGS frame (RFC 9113, 3.4)
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
HTTP2_SETTINGS = 0x4

AUTH_FIX = ("set RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH, a file holding it) to the token "
            "the cluster was started with ('ray get-auth-token' on its head) and "
            "RAY_AUTH_MODE=token; a cluster started without token auth needs "
            "RAY_AUTH_MODE=disabled")


def connect(ray: Any, address: str) -> str:
    """Join the cluster at ``address`` as its driver; the address joined (``auto``
    resolved), or one ConfigError naming why not."""
    resolved = resolved_address(address)
    where = resolved if resolved == address else f"{resolved} (--ray {address})"
    client = resolved.startswith("ray://")
    if client:
        _check_client_installed(where)
    check_token(f"the Ray cluster at {where}")
    check_listener(resolved, where)
    if not client:
        check_cluster(resolved, where)
    with held_stderr() as held, sigterm_kept():
        try:
            # "auto" itself, not what it resolved to: only then does Ray turn token auth
            # on by itself when a token file exists, as it would without abnirml
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        except Exception as exc:
            raise ConfigError(connection_problem(where, exc, held.text())) from None
    return resolved


def start_loopback(ray: Any) -> None:
    """``ray.init`` of a new single-node Ray in this process, bound to 127.0.0.1.

    ``address="local"`` never joins a cluster named in ``RAY_ADDRESS`` or in the file an
    earlier ``ray start`` left behind. On Linux Ray replaces a loopback node address with
    the machine's network address (so other machines could join); the switch it keeps for
    single-machine platforms keeps it on loopback instead."""
    check_token("the Ray that --ray local starts", default_file_optional=True)
    constants = ray._private.ray_constants
    saved = constants.ENABLE_RAY_CLUSTER, os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    constants.ENABLE_RAY_CLUSTER = False
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"     # for the processes it starts
    import threading

    in_main = threading.current_thread() is threading.main_thread()
    try:
        with (held_stderr() if in_main else held_ray_logging()) as held, sigterm_kept():
            try:
                ray.init(address="local", num_cpus=available_cores(),
                         _node_ip_address="127.0.0.1", include_dashboard=False,
                         log_to_driver=False, configure_logging=False)
            except Exception as exc:
                raise ConfigError(f"--ray local: Ray did not start: "
                                  f"{problem_line(exc, held.text())}") from None
    finally:
        constants.ENABLE_RAY_CLUSTER = saved[0]
        if saved[1] is None:
            os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        else:
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = saved[1]


# -- the address --------------------------------------------------------------------------


def resolved_address(address: str) -> str:
    """``address``, or for ``auto`` the cluster Ray would join: ``RAY_ADDRESS``, else the
    address the last ``ray start`` on this machine wrote down, else a Ray running here."""
    if address != "auto":
        return address
    named = os.environ.get("RAY_ADDRESS", "").strip()
    if named:
        if named in ("auto", "local"):
            raise ConfigError(f"--ray auto follows RAY_ADDRESS, which says {named!r}; set it "
                              "to the cluster's HOST:PORT or ray://HOST:PORT")
        from abnirml.evaluation.execution.parallel import check_ray_address

        check_ray_address(named, "RAY_ADDRESS (followed by --ray auto)")
        return named
    try:      # Ray's own lookup: the file the last `ray start` wrote, else a running GCS
        from ray._private.services import get_ray_address_from_environment

        found = get_ray_address_from_environment("auto", None)
    except Exception:      # none found (or the private helper moved)
        found = None
    if not found or found == "auto":
        raise ConfigError("--ray auto found no cluster: RAY_ADDRESS is not set and no Ray "
                          "started with 'ray start' runs on this machine; give the "
                          "cluster's address (--ray HOST:PORT) or set RAY_ADDRESS")
    return str(found).strip()


def _check_client_installed(where: str) -> None:
    import importlib.util

    if importlib.util.find_spec("grpc") is None:
        raise ConfigError(f"the Ray cluster at {where} is a Ray Client address (ray://), "
                          f"which needs Ray's client libraries: {install_hint('ray-client')}"
                          " (or give the cluster's HOST:PORT, 6379 by default, to join it "
                          "as a driver on one of its nodes)")


# -- the token ----------------------------------------------------------------------------


def check_token_for(address: object) -> None:
    """:func:`check_token` for ``--ray ADDRESS`` as given, before anything loads (the
    connection itself is made when the first batch is scored)."""
    if not isinstance(address, str) or address == "local" or address.startswith("ray://"):
        return
    if address == "auto":
        named = os.environ.get("RAY_ADDRESS", "").strip()
        target = (f"the Ray cluster at {named} (--ray auto)" if named
                  else "the Ray cluster --ray auto finds")
    else:
        target = f"the Ray cluster at {address}"
    check_token(target)


def check_token(target: str, *, default_file_optional: bool = False) -> None:
    """ConfigError when token auth is on and Ray would find no token, naming the place it
    looked and what is wrong there (Ray's loader, ``authentication_token_loader.cc``:
    ``RAY_AUTH_TOKEN``, then ``RAY_AUTH_TOKEN_PATH``, then ``~/.ray/auth_token``; the
    first line of a file, trimmed).

    With ``RAY_AUTH_MODE`` unset Ray sends a token only when it finds one (and only for
    ``auto``), so there is nothing to check; a cluster that wants one then refuses the
    driver, which :func:`connection_problem` explains. ``default_file_optional``: a new
    local Ray writes ``~/.ray/auth_token`` itself when it is missing."""
    mode = os.environ.get("RAY_AUTH_MODE")
    if mode is None or mode.strip().lower() != "token":
        return
    if os.environ.get("RAY_AUTH_TOKEN"):
        return
    path = os.environ.get("RAY_AUTH_TOKEN_PATH", "")
    if path:
        _token_file_problem(path, "RAY_AUTH_TOKEN_PATH", target)
        return
    default = Path(os.environ.get("HOME") or ".") / ".ray" / "auth_token"
    if default_file_optional and not os.path.lexists(default):
        return
    _token_file_problem(str(default), "the default token file", target,
                        missing_note="RAY_AUTH_TOKEN and RAY_AUTH_TOKEN_PATH are not set "
                                     "and ")


def _token_file_problem(path: str, named_by: str, target: str, missing_note: str = "") -> None:
    """ConfigError saying what is wrong with the token file at ``path`` (nothing when it
    holds a token on its first line)."""
    fix = ("; write the cluster's token there ('ray get-auth-token' on its head prints it) "
           "or set RAY_AUTH_TOKEN to it")
    head = f"Ray token auth is on (RAY_AUTH_MODE=token) for {target}, but "
    subject = (f"RAY_AUTH_TOKEN_PATH names {path}" if named_by == "RAY_AUTH_TOKEN_PATH"
               else f"{missing_note}{named_by} {path}")
    verb = ", which" if named_by == "RAY_AUTH_TOKEN_PATH" else ""
    if os.path.isdir(path):
        problem = "is a directory, not a file holding the token"
    elif not os.path.lexists(path):
        problem = "does not exist"
    elif not os.path.exists(path):
        problem = "is a broken symbolic link"
    else:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                first = handle.readline()
                rest = first or handle.read(1)
        except OSError as exc:
            problem = f"cannot be read ({exc.strerror or exc})"
        else:
            if first.strip():
                return
            problem = ("is empty" if not rest else
                       "has an empty first line (Ray reads the token from the first line)")
    raise ConfigError(f"{head}{subject}{verb} {problem}{fix}")


# -- the listener and the cluster ---------------------------------------------------------


def _host_port(address: str) -> tuple[str, int] | None:
    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    return host.strip("[]"), int(port)


def check_listener(address: str, where: str, timeout: float = PROBE_TIMEOUT_S) -> None:
    """ConfigError, within about ``timeout`` seconds, unless a gRPC server listens at
    ``address``: nothing listening, a listener that is not Ray (an HTTP/1 server, a TLS
    server, one that closes the connection) or one that does not answer at all.

    A cluster that uses TLS (``RAY_USE_TLS``) answers the preface only inside TLS, so only
    the connection is checked there."""
    parts = _host_port(address)
    if parts is None:
        return
    try:
        connection = socket.create_connection(parts, timeout=timeout)
    except OSError as exc:
        raise ConfigError(f"cannot reach the Ray cluster at {where} "
                          f"({exc.strerror or exc}); is 'ray start --head' running there?"
                          ) from None
    with connection:
        if os.environ.get("RAY_USE_TLS", "0").strip().lower() in ("1", "true"):
            return
        answer = _preface_answer(connection, timeout)
    problem = _not_grpc(answer, timeout)
    if problem:
        raise ConfigError(f"the listener at {where} is not a Ray cluster: {problem}; give "
                          "the address of the head's GCS (ray start --head --port, 6379 by "
                          "default) or of its Ray Client server (ray://HOST:10001)")


def _preface_answer(connection: socket.socket, timeout: float) -> bytes | None:
    """The first bytes the listener sends back after the HTTP/2 preface (b"" when it
    closed the connection, None when it sent nothing within ``timeout`` seconds): the
    9 of a frame header, or, when they are not a SETTINGS frame, up to 80 to describe it."""
    deadline = time.monotonic() + timeout
    received = b""
    try:
        connection.sendall(HTTP2_PREFACE)
        while len(received) < 9 or (not _is_settings(received) and len(received) < 80):
            left = deadline - time.monotonic()
            if len(received) >= 9:      # not HTTP/2: what more it says at once, to name it
                left = min(left, 0.5)
            if left <= 0:
                break
            connection.settimeout(left)
            chunk = connection.recv(80 - len(received))
            if not chunk:
                return received         # closed: b"" when it closed without a word
            received += chunk
    except TimeoutError:
        pass
    except OSError:
        return received
    return received or None


def _is_settings(answer: bytes) -> bool:
    """Whether ``answer`` begins with an HTTP/2 SETTINGS frame on stream 0."""
    return len(answer) >= 9 and answer[3] == HTTP2_SETTINGS and answer[5:9] == b"\0\0\0\0"


def _not_grpc(answer: bytes | None, timeout: float) -> str:
    """What the listener's answer says it is, or "" when it is an HTTP/2 server's
    SETTINGS frame (as gRPC servers send)."""
    if answer is None:
        return f"it accepted the connection but sent nothing within {timeout:g} s"
    if _is_settings(answer):
        return ""
    if not answer:
        return "it closed the connection without answering"
    if answer.startswith(b"HTTP/"):
        status = answer.split(b"\r", 1)[0].decode("ascii", "replace")
        return f"it answered as an HTTP/1 server ({status})"
    if answer.lstrip()[:1] == b"<":
        return "it answered as an HTTP/1 server (with an HTML page)"
    if answer[:1] in (b"\x15", b"\x16"):
        return "it answered as a TLS server (if the cluster uses TLS, set RAY_USE_TLS=1)"
    text = answer.split(b"\n", 1)[0].strip()
    if text and all(32 <= byte < 127 for byte in text):
        return f"it answered {text.decode('ascii')!r}, not as an HTTP/2 server"
    return f"it answered {answer[:9]!r}, not as an HTTP/2 server"


def check_cluster(address: str, where: str, timeout: float = PROBE_TIMEOUT_S) -> None:
    """One request to the GCS at ``address`` (Ray's own client, in a thread so that it
    cannot hold the run longer than ``timeout`` seconds): a refused token is one line at
    once instead of after Ray's retries."""
    import threading

    outcome: list[BaseException | None] = []

    def ask() -> None:
        try:
            import ray._raylet

            ray._raylet.GcsClient(address=address)   # type: ignore[attr-defined]
            outcome.append(None)
        except BaseException as exc:       # reported below, in the driver
            outcome.append(exc)

    with held_stderr() as held:
        thread = threading.Thread(target=ask, name="abnirml-ray-probe", daemon=True)
        thread.start()
        thread.join(timeout)
    if not outcome:
        raise ConfigError(f"the Ray cluster at {where} accepted the connection but its GCS "
                          f"did not answer within {timeout:g} s")
    error = outcome[0]
    if error is None:
        return
    if type(error).__name__ in ("ImportError", "ModuleNotFoundError", "AttributeError"):
        return       # Ray's private client moved: ray.init reports the problem instead
    raise ConfigError(connection_problem(where, error, held.text()))


# -- what a failure says ------------------------------------------------------------------


def connection_problem(address: str, exc: BaseException, output: str) -> str:
    """The one line that says why joining ``address`` failed: Ray's own error names only
    the address ("Failed to connect to Ray cluster"), the cause is in what it printed."""
    text = f"{exc}\n{output}"
    if "InvalidAuthToken" in text or "Unauthenticated" in text:
        return (f"the Ray cluster at {address} refused abnirml's token (missing or not the "
                f"cluster's): {AUTH_FIX}")
    if "token" in str(exc).lower() and "RAY_AUTH" in str(exc):
        return (f"Ray token auth is on (RAY_AUTH_MODE=token) but no token was found for the "
                f"cluster at {address}: {AUTH_FIX}")
    if "version mismatch" in text.lower():
        return (f"cannot join the Ray cluster at {address}: its Ray or Python version differs "
                "from this one; every node and the driver need the same environment")
    return f"cannot join the Ray cluster at {address}: {problem_line(exc, output)}"


def problem_line(exc: BaseException, output: str) -> str:
    """The exception's first line, with Ray's last error line when the exception says
    nothing more than that it failed."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    said = [line.strip() for line in output.splitlines() if " E " in line or "Error" in line]
    detail = f" ({said[-1][-200:]})" if said else ""
    return f"{type(exc).__name__}: {first}{detail}"[:400]


# -- what Ray changes in this process -----------------------------------------------------


@contextmanager
def sigterm_kept() -> Iterator[None]:
    """Keep this process's SIGTERM handler through ``ray.init``, which installs one that
    raises ``SystemExit(15)`` in whatever code runs (a ranker's batch, the cache's commit).
    Ray's local processes end with the driver all the same: it starts them to die with
    their parent. (In another thread than the main one Ray cannot install a handler, but
    its local node would try, and fail.)"""
    import threading

    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    ray_utils: Any = None
    with contextlib.suppress(ImportError):
        from ray._private import utils as ray_utils
    installer = getattr(ray_utils, "set_sigterm_handler", None)
    if installer is not None:       # Ray's handler is never installed at all
        ray_utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        if installer is not None:
            ray_utils.set_sigterm_handler = installer
        if main:
            signal.signal(signal.SIGTERM,
                          previous if previous is not None else signal.SIG_DFL)


@contextmanager
def held_ray_logging() -> Iterator[_Held]:
    """Silence Ray's Python loggers for the duration (``ray.init`` warns about the token
    file it may write and, outside the main thread, about the SIGTERM handler it cannot
    set: with ``configure_logging=False`` those reach the terminal through logging's
    last-resort handler). What :func:`held_stderr` does for a start in another thread,
    where the process's stderr must stay the main thread's; a failure is still reported,
    from its exception."""
    import logging

    logger = logging.getLogger("ray")      # ray.init clears its handlers; its level stays
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    held = _Held("")
    held.lines = []
    try:
        yield held
    finally:
        logger.setLevel(level)


class _Held:
    def __init__(self, path: str):
        self.path = path
        self.lines: list[str] | None = None

    def text(self) -> str:
        if self.lines is not None:
            return "\n".join(self.lines)[-20000:]
        try:
            with open(self.path, encoding="utf-8", errors="replace") as handle:
                return handle.read()[-20000:]
        except OSError:
            return ""


@contextmanager
def held_stderr() -> Iterator[_Held]:
    """Route this process's stderr (file descriptor 2, where Ray's C++ client writes) to a
    temporary file for the duration; :meth:`_Held.text` reads what was written."""
    import sys
    import tempfile

    sys.stderr.flush()
    with tempfile.NamedTemporaryFile(prefix="abnirml-ray-", suffix=".log") as handle:
        held = _Held(handle.name)
        try:
            saved = os.dup(2)
        except OSError:          # no stderr at all: nothing to hold back
            yield held
            return
        os.dup2(handle.fileno(), 2)
        try:
            yield held
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
