"""A flag a subcommand does not know is reported with that subcommand's usage."""

import pytest

from abnirml.cli import main


@pytest.mark.parametrize(("argv", "usage", "hint"), [
    (["run", "--rankers", "bm25"], "usage: abnirml run ", "did you mean --ranker"),
    (["masking", "--rankr", "bm25"], "usage: abnirml masking ", "did you mean --ranker"),
    (["train", "--model", "knrm", "--out", "m", "--sed", "1"], "usage: abnirml train ",
     "did you mean --seed"),
    (["report", "out", "--qiet"], "usage: abnirml report ", None),
    (["probes", "--all"], "usage: abnirml probes ", None),
    (["rankers", "extra"], "usage: abnirml rankers ", None),
    (["compare", "a", "b", "--bogus"], "usage: abnirml compare ", None),
    (["rank-origin", "ref.run", "--runs", "x"], "usage: abnirml rank-origin ", None),
    (["export-triples", "o.jsonl", "--probe", "mmp:*", "--bogus"],
     "usage: abnirml export-triples ", None),
])
def test_unknown_flag_prints_the_subcommand_usage(argv, usage, hint, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage)
    assert "{run,report" not in err                    # not the top-level usage
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"abnirml {argv[0]}: error: unrecognized arguments: ")
    if hint:
        assert hint in last
    else:
        assert "did you mean" not in last


def test_a_valid_command_line_still_parses(capsys):
    assert main(["rankers"]) == 0
    assert "bm25" in capsys.readouterr().out
