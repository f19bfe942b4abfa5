"""Errors a user can act on.

Everything the command line reports to a person derives from :class:`AbnirmlError`: the CLI
prints its one-line message and exits with status 2 instead of showing a traceback.
"""

from __future__ import annotations

from pathlib import Path


class AbnirmlError(Exception):
    """A problem with the user's input or configuration (exit status 2)."""


class InputError(AbnirmlError):
    """Malformed or inconsistent input data, located by file and line when known."""

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        self.reason = message
        where = ""
        if self.path is not None:
            where = self.path if line is None else f"{self.path}:{line}"
            where += ": "
        super().__init__(f"{where}{message}")


class ConfigError(AbnirmlError):
    """An invalid option value, unknown probe or ranker name, and the like."""


class MissingExtra(ConfigError):
    """An optional dependency is not installed; ``extra`` names what installs it."""

    def __init__(self, message: str, extra: str):
        super().__init__(message)
        self.extra = extra


class ScoringError(AbnirmlError):
    """A ranker produced unusable scores (NaN, infinite, wrong count)."""


def did_you_mean(name: str, choices: list[str] | tuple[str, ...]) -> str:
    """A ' (did you mean X?)' suffix for unknown names, or '' when nothing is close."""
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.5)
    return f" (did you mean {', '.join(close)}?)" if close else ""
