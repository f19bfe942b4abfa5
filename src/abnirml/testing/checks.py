"""A conformance check: a named callable that raises :class:`ConformanceError` when the thing
under test breaks a contract, and may say what it could not check."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


class ConformanceError(AssertionError):
    """A ranker or probe family breaks the contract the engine relies on.

    An ``AssertionError``, so pytest shows it as a failed test with the message as written."""


@dataclass(frozen=True)
class CheckResult:
    """What one check found: ``passed``, or the ``problem``; ``note`` says what was left
    unchecked and why (a parameter with no alternative value to try, say)."""

    name: str
    passed: bool
    problem: str = ""
    note: str = ""

    def __str__(self) -> str:
        head = f"{self.name}: {'ok' if self.passed else 'FAILED: ' + self.problem}"
        return head + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class Check:
    """One named check. Calling it runs it: it raises :class:`ConformanceError` on a
    problem and returns a note (or ``""``) otherwise."""

    name: str
    run: Callable[[], str | None]

    def __call__(self) -> str:
        return self.run() or ""

    def __str__(self) -> str:
        return self.name

    def result(self) -> CheckResult:
        try:
            note = self()
        except ConformanceError as exc:
            return CheckResult(self.name, False, problem=str(exc))
        return CheckResult(self.name, True, note=note)


def fail(message: str) -> None:
    raise ConformanceError(message)


def run_checks(subject: str, checks: Sequence[Check]) -> list[CheckResult]:
    """Run every check (a failure does not stop the others); raise one
    :class:`ConformanceError` listing all failed checks, else return the results."""
    results = [check.result() for check in checks]
    failed = [r for r in results if not r.passed]
    if failed:
        lines = "\n".join(f"  - {r.name}: {r.problem}" for r in failed)
        raise ConformanceError(f"{subject} fails {len(failed)} of {len(results)} "
                               f"conformance checks:\n{lines}")
    return results
