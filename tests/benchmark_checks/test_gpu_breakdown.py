"""benchmarks/gpu.py's cold-run breakdown and its sample-building scaling: the phases add
up to the wall time, and the scaling run proves its workers ran and built the same
samples as one process."""

from __future__ import annotations

import re

import pytest
from benchmarks import gpu


def test_the_breakdown_adds_the_main_threads_phases_up_to_the_wall_time():
    info = {"inner_wall_s": 9.0, "imports_s": 2.0,
            "phases": {"collection load": 0.5, "sample building": 1.5, "scoring": 3.0,
                       "writing results": 0.75, "device": 2.5, "tokenization": 0.4,
                       "model load": 1.25}}
    line = gpu.cold_breakdown(10.0, info)
    assert line.startswith("10.00 s = interpreter start and exit 1.00 + imports 2.00 + "
                           "collection load 0.50 + sample building 1.50 + scoring 3.00 + "
                           "writing results 0.75 + other 1.25;")
    assert line.endswith("device 2.50 s, tokenization 0.40 s, model load 1.25 s")
    main = re.findall(r"(?:=|\+) [a-z ]+ (\d+\.\d\d)", line.split(";")[0])
    assert sum(map(float, main)) == pytest.approx(10.0)


def test_sample_building_scaling_runs_both_ways_and_compares_every_sample(capsys):
    gpu.sample_building_scaling("demo", ("mmp:relevance:length", "tmp:shuffle-words",
                                         "axiom:tfc2"), 2, rounds=1)
    out = capsys.readouterr().out
    assert re.search(r"1 process \d+\.\d\d s .*; 2 workers \d+\.\d\d s .*samples identical: "
                     r"yes", out)
    assert re.search(r"^sample building, 1 process / 2 workers: \d+\.\d\d \(best of 1; ",
                     out, re.M)
