"""Errors a user can act on.

Everything the command line reports to a person derives from :class:`AbnirmlError`: the CLI
prints its one-line message and exits with status 2 instead of showing a traceback.

Secrets (the API keys served rankers send) are registered here with
:func:`register_secret`, and :func:`redact` blanks them — whole, and any piece of
:data:`SECRET_PIECE` characters or more — out of any text; every AbnirmlError's message
passes through it, so a server that quotes a key back, or cuts it in two, never gets it
printed.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

SECRET_PIECE = 10
"""Pieces of a secret this long or longer are blanked: a key cut at a message's length limit
must not leak its first 30 characters. (A key shorter than this is blanked only whole.)"""
REDACTED = "***"

_SECRETS: dict[str, frozenset[str]] = {}
_SECRETS_LOCK = threading.Lock()


def register_secret(value: str) -> None:
    """Remember ``value`` (an API key) so that :func:`redact` blanks it from now on."""
    if not value or value in _SECRETS:
        return
    pieces = frozenset(value[i:i + SECRET_PIECE] for i in range(len(value) - SECRET_PIECE + 1))
    with _SECRETS_LOCK:
        _SECRETS[value] = pieces


def redact(text: str) -> str:
    """``text`` with every registered secret, and every piece of one at least
    :data:`SECRET_PIECE` characters long, replaced by ``***``."""
    if not _SECRETS or not text:
        return text
    with _SECRETS_LOCK:
        secrets = list(_SECRETS.items())
    hidden = bytearray(len(text))
    for secret, pieces in secrets:
        start = text.find(secret)
        while start >= 0:
            hidden[start:start + len(secret)] = b"\1" * len(secret)
            start = text.find(secret, start + 1)
        if pieces:
            for i in range(len(text) - SECRET_PIECE + 1):
                if text[i:i + SECRET_PIECE] in pieces:
                    hidden[i:i + SECRET_PIECE] = b"\1" * SECRET_PIECE
    if not any(hidden):
        return text
    out: list[str] = []
    for i, char in enumerate(text):
        if not hidden[i]:
            out.append(char)
        elif i == 0 or not hidden[i - 1]:
            out.append(REDACTED)
    return "".join(out)


class AbnirmlError(Exception):
    """A problem with the user's input or configuration (exit status 2). Its message never
    shows a registered secret (:func:`redact`)."""

    def __str__(self) -> str:
        return redact(super().__str__())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


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


def install_hint(extra: str, *, located: bool = True) -> str:
    """The command that installs ``extra`` the way this abnirml is installed.

    abnirml is installed from a checkout (no package index serves it), where the command is
    ``pip install -e '.[extra]'`` run in the checkout's folder; only an installed wheel is
    extended by ``pip install 'abnirml[extra]'``. ``located`` adds the checkout's folder, for
    messages a person reads at the terminal (reports leave it out: they travel).
    """
    root = _checkout_root()
    if root is None:
        return f"pip install 'abnirml[{extra}]'"
    where = f" in {root}" if located else " in abnirml's checkout"
    return f"pip install -e '.[{extra}]'{where}"


def _checkout_root() -> Path | None:
    """The source checkout this package is imported from (``src/abnirml`` beside a
    ``pyproject.toml`` naming abnirml), or None for an installed wheel."""
    root = Path(__file__).resolve().parents[2]
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if 'name = "abnirml"' in text else None


class ScoringError(AbnirmlError):
    """A ranker produced unusable scores (NaN, infinite, wrong count)."""


def _same_family(stem: str, lowered: dict[str, str]) -> list[str]:
    """The choices sharing ``stem``'s ``family:`` prefix, when it has a known one, else all:
    a typo inside a family's probe (``tmp:shufle``) should propose that family's names, not
    one of another family that happens to share letters (``mmp:sumtf:length``)."""
    family, colon, _ = stem.partition(":")
    if colon:
        same = [c for c in lowered if c.startswith(family + ":")]
        if same:
            return same
    return list(lowered)


def did_you_mean(name: str, choices: list[str] | tuple[str, ...]) -> str:
    """A ' (did you mean X?)' suffix for unknown names, or '' when nothing is close.

    A name with a known ``family:`` prefix is matched against that family's names only.
    A glob (``tmp:shufle*``) is matched by the text before its first wildcard against the
    same length of each choice, so a typo in a prefix proposes that prefix's names rather
    than whatever whole name happens to look alike.
    """
    import difflib

    lowered = {c.lower(): c for c in choices}
    stem = name.lower()
    wildcard = min((i for i, ch in enumerate(stem) if ch in "*?["), default=-1)
    if wildcard > 0:
        stem = stem[:wildcard]
        scored = sorted(((difflib.SequenceMatcher(None, stem, low[:len(stem)]).ratio(), i)
                         for i, low in enumerate(lowered)), key=lambda t: (-t[0], t[1]))
        names = list(lowered.values())
        close = [names[i] for ratio, i in scored[:3] if ratio >= 0.8]
    else:
        close = [lowered[c] for c in difflib.get_close_matches(stem, _same_family(stem, lowered),
                                                               n=3, cutoff=0.5)]
    return f" (did you mean {', '.join(close)}?)" if close else ""


def user_line(exc: BaseException) -> str:
    """`` (file:line)`` of the deepest frame of ``exc``'s traceback: where a user's plugin
    code (a ranker, a factory, a probe, an axiom function) raised, for a one-line error.
    The first frame is the catcher's own ``try``; when it is the only one (the user's
    callable is not Python code) there is no user line to name, and '' is returned."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    return f" ({frames[-1].filename}:{frames[-1].lineno})" if len(frames) > 1 else ""


def ranker_call_error(ranker: Any, call: str, gives: str, exc: BaseException
                      ) -> ScoringError | None:
    """The one-line error for a ranker whose ``call`` (``score()``, ``rank_windows()``)
    raised ``exc``, naming the user's file and line; None when the traceback should stand:
    abnirml's own errors, and any error of abnirml's own rankers (a bug report). A
    ``sys.exit()`` in any ranker would end the run with its exit code and no word, so it
    always becomes one line. ``gives`` is what the call should return ("scores")."""
    name = getattr(ranker, "name", type(ranker).__name__)
    if isinstance(exc, SystemExit):
        return ScoringError(f"ranker {name}: {call} called sys.exit({exc.code!r})"
                            f"{user_line(exc)}; a ranker must return {gives} or raise an "
                            "exception, not end the process")
    if isinstance(exc, AbnirmlError) or type(ranker).__module__.startswith("abnirml."):
        return None
    return ScoringError(f"ranker {name}: {call} failed{user_line(exc)}: "
                        f"{type(exc).__name__}: {exc}")
