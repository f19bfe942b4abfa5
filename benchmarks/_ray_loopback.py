"""A real two-node Ray cluster on loopback, for the cluster test and the scaling benchmark.

Ray's servers listen on every interface, and on Linux ``ray start`` replaces a loopback
node address with the machine's network address. So the cluster runs in a private network
and process namespace (``unshare``): the only interface there is loopback, so every node
is 127.0.0.1 and nothing is reachable from outside; ports cannot collide with anything
else on the machine; and when the namespace's first process ends the kernel ends every
process in it, so no Ray process outlives the run even if it is killed. Inside, the
cluster is still started and stopped by process group, as on any machine.

:func:`in_private_network` re-runs a script inside such a namespace (``None`` where user
namespaces are not allowed); :class:`LoopbackCluster` starts a token-authenticated head and
one worker node and stops them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY_BIN = Path(sys.executable).with_name("ray")
SRC = Path(__file__).resolve().parents[1] / "src"
INSIDE = "ABNIRML_PRIVATE_NETWORK"
NAMESPACE = ["unshare", "--user", "--map-root-user", "--net", "--pid", "--fork",
             "--mount-proc", "--kill-child"]


def namespace_prefix() -> list[str] | None:
    """The ``unshare`` command line when this machine allows unprivileged namespaces."""
    if shutil.which("unshare") is None:
        return None
    try:
        done = subprocess.run([*NAMESPACE, "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return NAMESPACE if done.returncode == 0 else None


def in_private_network(args: list[str], timeout: float) -> subprocess.CompletedProcess | None:
    """Run ``python args…`` inside a private network and process namespace; None where
    that is not possible here."""
    prefix = namespace_prefix()
    if prefix is None:
        return None
    env = {**os.environ, INSIDE: "1"}
    return subprocess.run([*prefix, sys.executable, *args], env=env, timeout=timeout,
                          capture_output=True, text=True)


def loopback_up() -> None:
    """Bring up ``lo`` in a fresh network namespace (it starts down)."""
    import fcntl
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sh", b"lo", flags | iff_up))


def _processes() -> dict[int, tuple[str, int, int]]:
    """pid → (state, parent pid, process group) of every process /proc shows."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            table[int(entry)] = (fields[0], int(fields[1]), int(fields[2]))
        except (OSError, IndexError, ValueError):
            continue
    return table


def family(pid: int) -> set[int]:
    """``pid``, its process group and all its descendants, running (not zombies): Ray's
    worker processes may leave the group of the node that started them."""
    table = _processes()
    members = {p for p, (state, _, group) in table.items() if group == pid and state != "Z"}
    frontier = {pid} | members
    while frontier:
        children = {p for p, (state, parent, _) in table.items()
                    if parent in frontier and state != "Z"} - members
        members |= children
        frontier = children
    if pid in table and table[pid][0] != "Z":
        members.add(pid)
    return members


def reap_children() -> None:
    """Collect every exited child (in a pid namespace, this process inherits the
    orphans of the Ray processes it stopped)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LoopbackCluster:
    """A head and one worker node on 127.0.0.1 with token auth, in ``root``.

    ``env`` is what both nodes' processes (and so their Ray workers) see on top of the
    cluster's own settings; ``worker_env`` only the worker node's. ``cores`` pins a node
    (``"head"``, ``"worker"``) and every process it starts to one CPU core (``taskset``),
    as if each were a machine of its own.
    """

    def __init__(self, root: Path, cpus: int = 2, env: dict[str, str] | None = None,
                 worker_env: dict[str, str] | None = None, worker_gpus: int = 0,
                 cores: dict[str, int] | None = None):
        self.root = Path(root)
        self.cpus = cpus
        self.token = os.urandom(16).hex()
        self.port = free_port()
        self.worker_port = free_port()         # the worker node's node-manager port
        self.address = f"127.0.0.1:{self.port}"
        self.extra_env = dict(env or {})
        self.worker_env = dict(worker_env or {})
        self.worker_gpus = worker_gpus
        self.cores = dict(cores or {})     # node name → the one CPU core it may run on
        self.processes: dict[str, subprocess.Popen] = {}
        self._known: dict[int, set[int]] = {}      # node's pid → the pids it started
        # Ray's sockets live under its temp dir, and a socket path may not exceed 107 bytes
        self.ray_dir = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))

    def auth_env(self) -> dict[str, str]:
        """What a driver needs to join: token mode and the token."""
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}

    def _env(self) -> dict[str, str]:
        home = self.root / "home"
        home.mkdir(parents=True, exist_ok=True)
        return {**os.environ, **self.auth_env(), **self.extra_env, "HOME": str(home),
                "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(SRC),
                # a lost node is noticed in about 3 s rather than about 30 s
                "RAY_health_check_period_ms": "1000",
                "RAY_health_check_timeout_ms": "1000",
                "RAY_health_check_failure_threshold": "3",
                # on busy cores a node's agents take longer than Ray's 30 s to start: its
                # GCS lookup of the new node waits this long instead
                "RAY_raylet_start_wait_time_s": "180"}

    def _start(self, name: str, args: list[str], env: dict[str, str],
               attempts: int = 3) -> None:
        """Start a node; again (after killing what the failed try left) when it did not
        come up: on busy cores ``ray start`` gives its node 30 s to register, fixed."""
        log = self.root / f"{name}.log"
        for _ in range(attempts):
            ports = {"--node-manager-port": (self.worker_port if name == "worker"
                                             else free_port()),
                     "--object-manager-port": free_port(),
                     "--runtime-env-agent-port": free_port(),
                     "--dashboard-agent-grpc-port": free_port(),
                     "--dashboard-agent-listen-port": free_port(),
                     "--metrics-export-port": free_port()}
            pinned = (["taskset", "-c", str(self.cores[name])] if name in self.cores else [])
            command = [*pinned, str(RAY_BIN), "start", "--block", "--node-ip-address=127.0.0.1",
                       f"--num-cpus={self.cpus}", "--object-store-memory=200000000",
                       f"--temp-dir={self.ray_dir}", "--disable-usage-stats",
                       *(f"{flag}={port}" for flag, port in ports.items()), *args]
            offset = log.stat().st_size if log.exists() else 0
            with open(log, "a") as handle:       # the child keeps its own copy
                process = subprocess.Popen(command, env=env, stdout=handle, stderr=handle,
                                           stdin=subprocess.DEVNULL, start_new_session=True)
            self.processes[name] = process
            if self._started(process, log, offset):
                return
            self._signal(process, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        raise RuntimeError(f"Ray {name} did not start: {log.read_text(errors='replace')[-2000:]}")

    @staticmethod
    def _started(process: subprocess.Popen, log: Path, offset: int,
                 timeout: float = 180.0) -> bool:
        """Whether ``ray start`` said (in ``log`` after ``offset``) that the node is up;
        False when it gave up or hung."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(log, "rb") as handle:
                handle.seek(offset)
                if b"Ray runtime started" in handle.read():
                    return True
            if process.poll() is not None:
                return False
            time.sleep(0.5)
        return False

    def start(self, worker: bool = True) -> LoopbackCluster:
        """Start the head, then (unless ``worker`` is False) the worker node; on failure
        stop what started and re-raise."""
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            self._start("head", ["--head", f"--port={self.port}",
                                 "--include-dashboard=false"], self._env())
            if worker:
                self.start_worker()
        except BaseException:
            self.stop()
            raise
        return self

    def start_worker(self) -> None:
        """Start the worker node (and join it to the head started before); again after it
        was killed or lost, on a new port."""
        if "worker" in self.processes:
            self.worker_port = free_port()
        args = [f"--address={self.address}"]
        if self.worker_gpus:
            args.append(f"--num-gpus={self.worker_gpus}")
        self._start("worker", args, {**self._env(), **self.worker_env})

    def kill_worker(self) -> None:
        """SIGKILL the worker node's processes at once, as a machine failure would."""
        self.signal_worker(signal.SIGKILL)

    def signal_worker(self, sig: int) -> None:
        """Signal every process of the worker node (SIGSTOP: a frozen machine)."""
        self._signal(self.processes["worker"], sig)

    def _signal(self, process: subprocess.Popen, sig: int) -> None:
        """Signal a node: its process group, and every process it started (remembered,
        so that they are found again once their parent is gone)."""
        known = self._known.setdefault(process.pid, set())
        known |= family(process.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        for pid in known:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def stop(self) -> list[int]:
        """Stop both nodes by process id; the pids of theirs still running afterwards
        (none, unless something went wrong)."""
        for process in self.processes.values():
            self._signal(process, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for process in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
        for process in self.processes.values():      # whatever ignored SIGTERM
            self._signal(process, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
        time.sleep(0.5)
        running = set(_processes())
        table = _processes()
        left = sorted(pid for pids in self._known.values() for pid in pids
                      if pid in running and table[pid][0] != "Z")
        shutil.rmtree(self.ray_dir, ignore_errors=True)
        return left

    def __enter__(self) -> LoopbackCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


DELAYED_RANKER = '''
"""A stand-in ranker: a fixed delay per batch (a latency-bound model) and scores that
depend only on the texts, so every executor gives the same results.

Like the neural rankers it loads its "model" when it first scores (or is asked to
``preload``), in the process that scores. With ``ABNIRML_TEST_LOG`` set it writes a line
per load (``load NODE PID``) and per batch (``NODE CUDA_VISIBLE_DEVICES PID``), NODE
being ``ABNIRML_TEST_NODE``. With
``+gate=WORD``, batches wait (up to four minutes) until a line starting with WORD is in
the log: those on every node but WORD's (``+gate=worker``: the run cannot end before the
worker node scored a batch), or with ``+wait=NODE`` those on NODE only (``+wait=head
+gate=released``: the head's batches wait until the test writes "released")."""
import os
import time
import zlib

from abnirml.rankers.registry import register


def _log(line):
    path = os.environ.get("ABNIRML_TEST_LOG")
    if path:
        with open(path, "a") as handle:
            handle.write(line + "\\n")


class Delayed:
    name, fingerprint = "delayed", "delayed-v1"

    def __init__(self, delay, gate="", wait=""):
        self.delay = delay
        self.gate = gate
        self.wait = wait
        self._model = None

    def _load(self):
        _log(f"load {os.environ.get('ABNIRML_TEST_NODE', '?')} {os.getpid()}")
        time.sleep(self.delay)
        return {"loaded by": os.getpid()}

    def preload(self):
        """What a neural ranker does in the background; here ``model`` loads it."""

    @property
    def model(self):
        if self._model is None:
            self._model = self._load()
        return self._model

    def score(self, pairs):
        _ = self.model       # loaded on first use
        node = os.environ.get("ABNIRML_TEST_NODE", "?")
        if self.gate and (node == self.wait if self.wait else node != self.gate):
            deadline = time.monotonic() + 240
            log = os.environ["ABNIRML_TEST_LOG"]
            while time.monotonic() < deadline:
                with open(log) as handle:
                    if any(line.split()[:1] == [self.gate] for line in handle):
                        break
                time.sleep(0.2)
        _log(f"{node} {os.environ.get('CUDA_VISIBLE_DEVICES', '-')} {os.getpid()}")
        time.sleep(self.delay)
        return [zlib.crc32(f"{q}\\0{d}".encode()) / 2**32 for q, d in pairs]


register("delayed", lambda spec, env: Delayed(float(spec.param("delay") or 0),
                                               spec.param("gate") or "",
                                               spec.param("wait") or ""))
'''


def write_delayed_ranker(folder: Path) -> Path:
    path = Path(folder) / "delayed_ranker.py"
    path.write_text(DELAYED_RANKER)
    return path
