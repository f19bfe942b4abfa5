"""One set of on/off spellings for the environment switches and yes/no probe options."""

from __future__ import annotations

import pytest

from abnirml.errors import ConfigError
from abnirml.progress import progress_enabled
from abnirml.rankers.support import background_import
from abnirml.switches import OFF_WORDS, ON_WORDS, env_off, switch_value

OFF = ["0", "false", "no", "off", " OFF ", "No", "FALSE"]
ON = ["", "  ", "1", "yes", "on", "True", " ON "]
UNKNOWN = ["maybe", "2", "none", "of", "disable"]


@pytest.mark.parametrize("text", OFF)
def test_off_words_turn_every_switch_off(text, monkeypatch):
    assert switch_value(text) is False
    monkeypatch.setenv("ABNIRML_PROGRESS", text)
    monkeypatch.setenv("ABNIRML_BACKGROUND_IMPORT", text)
    assert env_off("ABNIRML_PROGRESS")
    assert progress_enabled() is False
    assert background_import.enabled() is False


@pytest.mark.parametrize("text", ON)
def test_on_words_and_empty_leave_an_env_switch_on(text, monkeypatch):
    monkeypatch.setenv("ABNIRML_PROGRESS", text)
    monkeypatch.setenv("ABNIRML_BACKGROUND_IMPORT", text)
    assert progress_enabled() is True
    assert background_import.enabled() is True


@pytest.mark.parametrize("text", UNKNOWN)
def test_an_unknown_env_word_is_refused_not_read_as_on(text, monkeypatch):
    monkeypatch.setenv("ABNIRML_PROGRESS", text)
    with pytest.raises(ConfigError, match=f"ABNIRML_PROGRESS={text!r}.*expected one of 0"):
        progress_enabled()
    assert progress_enabled(False) is False    # an explicit request never reads it
    monkeypatch.setenv("ABNIRML_BACKGROUND_IMPORT", text)
    with pytest.raises(ConfigError, match="ABNIRML_BACKGROUND_IMPORT"):
        background_import.enabled()


def test_unset_switches_are_on_and_an_explicit_request_wins(monkeypatch):
    monkeypatch.delenv("ABNIRML_PROGRESS", raising=False)
    monkeypatch.delenv("ABNIRML_BACKGROUND_IMPORT", raising=False)
    assert progress_enabled() and background_import.enabled()
    monkeypatch.setenv("ABNIRML_PROGRESS", "off")
    assert progress_enabled(True) is True


def test_on_and_off_words_are_disjoint_and_unknown_words_are_neither():
    assert not set(ON_WORDS) & set(OFF_WORDS)
    assert [switch_value(w) for w in ("Yes", " on", "1")] == [True, True, True]
    assert switch_value("maybe") is None and switch_value("") is None


def test_yes_no_options_read_the_same_words():
    from dataclasses import dataclass

    from abnirml.probes.options import parse_settings
    from abnirml.settings import setting

    @dataclass(frozen=True)
    class Flags:
        flag: bool = setting(True, help="a switch")

    for text in ("off", "No", "0", "false"):
        assert parse_settings(Flags, {"flag": text}, "x").flag is False
    for text in ("on", "YES", "1", "true"):
        assert parse_settings(Flags, {"flag": text}, "x").flag is True
    with pytest.raises(ConfigError, match=r"x\.flag: 'maybe' is not a yes/no value"):
        parse_settings(Flags, {"flag": "maybe"}, "x")
