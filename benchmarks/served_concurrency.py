"""Request concurrency of the served rankers against a loopback server with a fixed latency.

A stand-in rerank API on 127.0.0.1 answers every request after exactly ``--latency`` seconds
(50 ms by default) — the time a served model spends per request — and counts the requests
it answered. ``rerank-api:`` sends one request per (query, document) here (``batch_size=1``,
one document per query), so with ``concurrency`` requests in flight the ideal wall time is
``ceil(requests / concurrency) × latency``. The script prints measured against ideal (the
efficiency, target ≥ 0.8 at 16 concurrent requests), the number of requests the server
answered (the work really happened) and whether every score came back right. Each setting
is timed ``--repeats`` times (the median is shown). The server runs in its own process, as a
served model does, so its threads do not compete with the client's for one interpreter.

    python benchmarks/served_concurrency.py [--requests 160] [--concurrency 16] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET = 0.8


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256      # the listen backlog: 16 clients connect at once


def _serve(latency: float, port: Any, answered: Any, stop: Any) -> None:
    """The stand-in's process: a rerank API whose every answer takes ``latency`` seconds
    (relevance = the number of query words in the document), counting what it answered."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(latency)
            query = body["query"].split()
            results = [{"index": i, "relevance_score": sum(d.split().count(w) for w in query)}
                       for i, d in enumerate(body["documents"])]
            payload = json.dumps({"results": results}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            with answered.get_lock():
                answered.value += 1

        def log_message(self, *args: object) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port.value = server.server_address[1]
    stop.wait(600)
    server.shutdown()
    server.server_close()


class LatencyServer:
    """The stand-in in its own process (a served model never shares the prober's
    interpreter), on 127.0.0.1 with a port the system picks; stopped on exit."""

    def __init__(self, latency: float):
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self._port = context.Value("i", 0)
        self._answered = context.Value("i", 0)
        self._stop = context.Event()
        self._process = context.Process(target=_serve, daemon=True, args=(
            latency, self._port, self._answered, self._stop))

    def __enter__(self) -> LatencyServer:
        self._process.start()
        deadline = time.monotonic() + 60
        while not self._port.value:
            if time.monotonic() > deadline or not self._process.is_alive():
                raise RuntimeError("the stand-in server did not start")
            time.sleep(0.01)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port.value}/rerank"

    @property
    def answered(self) -> int:
        return int(self._answered.value)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()


@dataclass(frozen=True)
class Measurement:
    concurrency: int
    requests: int
    answered: int
    correct: bool
    seconds: float
    ideal: float

    @property
    def efficiency(self) -> float:
        return self.ideal / self.seconds


def measure(concurrency: int, requests: int, latency: float = 0.05,
            repeats: int = 1) -> Measurement:
    """Score ``requests`` (query, document) pairs of distinct queries through
    ``rerank-api:`` with ``concurrency`` requests in flight, ``repeats`` times against one
    server (the median time); every repeat must be answered in full and right."""
    from abnirml.rankers.registry import RankerEnv, build_ranker

    pairs = [(f"word{i} other", f"word{i} " * (i % 4) + "filler") for i in range(requests)]
    expected = [float(i % 4) for i in range(requests)]
    times = []
    correct = True
    with LatencyServer(latency) as server:
        ranker = build_ranker(f"rerank-api:{server.url}+model=m+batch_size=1"
                              f"+concurrency={concurrency}", RankerEnv())
        for _ in range(repeats):
            start = time.perf_counter()
            scores = ranker.score(pairs)
            times.append(time.perf_counter() - start)
            correct = correct and scores.tolist() == expected
        answered = server.answered
    return Measurement(concurrency, requests * repeats, answered, correct,
                       statistics.median(times), math.ceil(requests / concurrency) * latency)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=160)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    serial = measure(1, min(args.requests, 32), args.latency, args.repeats)
    result = measure(args.concurrency, args.requests, args.latency, args.repeats)
    print(f"\n## served-ranker request concurrency ({args.latency * 1000:g} ms per request)\n")
    print("| concurrency | requests answered | scores right | seconds | ideal s | "
          "efficiency |")
    print("|---|---|---|---|---|---|")
    for m in (serial, result):
        print(f"| {m.concurrency} | {m.answered}/{m.requests} | {'yes' if m.correct else 'NO'} "
              f"| {m.seconds:.3f} | {m.ideal:.3f} | {m.efficiency:.2f} |")
    print(f"\nefficiency at {result.concurrency} concurrent requests: {result.efficiency:.2f} "
          f"of ideal (target ≥ {TARGET}) — {'met' if result.efficiency >= TARGET else 'NOT met'}"
          " (a shared machine's load lowers it: compare within one run)")
    done = all(m.correct and m.answered == m.requests for m in (serial, result))
    if not done:
        print("the stand-in did not answer every request, or a score came back wrong")
    return 0 if done else 1


if __name__ == "__main__":
    raise SystemExit(main())
