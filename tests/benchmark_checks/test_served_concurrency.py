"""benchmarks/served_concurrency.py does the work it times: every request reaches its
stand-in server (in a process of its own) and every score comes back right."""

from __future__ import annotations

from benchmarks.served_concurrency import measure


def test_every_request_is_answered_and_every_score_is_right():
    result = measure(concurrency=4, requests=12, latency=0.0, repeats=2)
    assert result.answered == result.requests == 24
    assert result.correct
    assert result.ideal == 0.0 and result.seconds > 0
