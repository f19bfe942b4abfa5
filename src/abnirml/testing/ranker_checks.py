"""Conformance checks for a ranker: what the engine assumes of every answer (``score``,
``preferences`` or ``rank_windows``, see :mod:`.contracts`), and what the score cache assumes
of every ``fingerprint``.

The engine asks about each unique item once, in batches of any size and order, and keys
cached answers by the fingerprint alone. So a ranker must give one well-formed answer per
item whatever the batch (one finite float64 score per pair, a preference in [0, 1] per
triple, a permutation per window), the same answers for the same inputs, and a fingerprint
that is the same in every process and changes with every parameter that can change an answer
— or cached answers of one setting are silently served for another.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from abnirml.errors import AbnirmlError
from abnirml.rankers.base import Pair, RankerSpec
from abnirml.testing.checks import Check, CheckResult, fail, run_checks
from abnirml.testing.contracts import Contract, contract_of
from abnirml.testing.values import alternative_values, bad_values

#: texts every ranker must score: none of them is a reason to fail
_EDGE_DOCUMENTS = ("", "a", "Ünïcödé — 東京 naïve café 🙂", "word " * 600)


def ranker_checks(ranker: Any, *, collection: str = "demo", plugins: Sequence[str] = (),
                  seed: int = 0) -> list[Check]:
    """The checks for ``ranker``: a spec string (``"mine+alpha=2"``: every check) or a
    Ranker object (the checks that need to build it again from a spec are skipped, saying
    so). ``collection`` names what collection-dependent rankers read their statistics from;
    ``plugins`` are the plugin files or modules that register the family (loaded here and in
    the fresh process that checks the fingerprint)."""
    subject = _RankerUnderTest(ranker, collection, tuple(plugins), seed)
    return [
        Check("builds", subject.check_builds),
        Check("one well-formed answer per item", subject.check_outputs),
        Check("no items give an empty answer", subject.check_empty),
        Check("answers do not depend on the batch", subject.check_batches),
        Check("answers are deterministic", subject.check_deterministic),
        Check("the fingerprint is the same in a fresh process", subject.check_other_process),
        Check("every scoring parameter changes the fingerprint, no other does",
              subject.check_parameters_in_fingerprint),
        Check("bad parameters are refused before anything loads", subject.check_refusals),
    ]


def check_ranker(ranker: Any, *, collection: str = "demo", plugins: Sequence[str] = (),
                 seed: int = 0) -> list[CheckResult]:
    """Run every check of :func:`ranker_checks`; raise one ConformanceError naming each
    failure, or return the results (with what each could not check)."""
    label = ranker if isinstance(ranker, str) else getattr(ranker, "name", repr(ranker))
    return run_checks(f"ranker {label}", ranker_checks(ranker, collection=collection,
                                                       plugins=plugins, seed=seed))


class _RankerUnderTest:
    """The ranker, its environment and its test pairs, each made once and shared by the
    checks."""

    def __init__(self, ranker: Any, collection: str, plugins: tuple[str, ...], seed: int):
        self.given = ranker
        self.collection_name = collection
        self.plugins = plugins
        self.seed = seed

    # -- what the checks share --------------------------------------------------------

    @cached_property
    def env(self) -> Any:
        from abnirml.data.collection import load_collection
        from abnirml.plugins import load_plugins
        from abnirml.rankers.registry import RankerEnv

        load_plugins(self.plugins)
        return RankerEnv(collection=load_collection(self.collection_name), seed=self.seed)

    def build(self, spec: str) -> Any:
        from abnirml.rankers.registry import build_ranker

        return build_ranker(spec, self.env)

    @cached_property
    def spec(self) -> RankerSpec | None:
        return RankerSpec.parse(self.given) if isinstance(self.given, str) else None

    @cached_property
    def ranker(self) -> Any:
        if self.spec is None:
            self.env        # noqa: B018 - loads the plugins like the spec path does
            return self.given
        try:
            return self.build(self.spec.text)
        except AbnirmlError as exc:
            fail(f"building {self.spec.text!r} failed: {exc}")

    @cached_property
    def pairs(self) -> list[Pair]:
        """A few judged pairs of the collection, each query with its edge documents, and one
        pair twice (a batch may repeat a pair)."""
        collection = self.env.collection
        by_query: dict[str, list[str]] = {}
        for qid, docno, _ in collection.judged():
            by_query.setdefault(qid, []).append(collection.docs[docno])
        pairs: list[Pair] = []
        for qid in sorted(by_query)[:3]:
            query = collection.queries[qid]
            pairs += [(query, text) for text in by_query[qid][:4]]
            pairs += [(query, text) for text in _EDGE_DOCUMENTS]
        if not pairs:
            fail(f"collection {self.collection_name!r} has no judged pair to score")
        return [*pairs, pairs[0]]

    @cached_property
    def contract(self) -> Contract:
        found = contract_of(self.ranker)
        if found is None:
            fail("it has none of score(pairs), preferences(triples) or rank_windows(windows)")
        assert found is not None
        return found

    @cached_property
    def items(self) -> list[Any]:
        items = self.contract.items(self.pairs)
        if not items:
            fail(f"collection {self.collection_name!r} gives no {self.contract.item} to try")
        return items

    def answer(self, ranker: Any, items: Sequence[Any]) -> Any:
        """``ranker``'s answer to ``items``; an exception it raises is a finding."""
        method = self.contract.method
        try:
            return self.contract.call(ranker, items)
        except AbnirmlError as exc:
            fail(f"{method}() refused the {self.contract.item}s: {exc}")
        except Exception as exc:  # the ranker's own code: any error is a finding
            fail(f"{method}() raised {type(exc).__name__}: {exc}")
        raise AssertionError("unreachable")

    def rows(self, ranker: Any, items: Sequence[Any]) -> np.ndarray:
        """The answer as rows to compare (its form is another check's business)."""
        answer = self.answer(ranker, items)
        try:
            rows = self.contract.as_rows(answer)
        except (TypeError, ValueError) as exc:
            fail(f"the answer cannot be compared ({exc}); see the well-formed check")
        if len(rows) != len(items):
            fail(f"{len(items)} {self.contract.item}s got {len(rows)} answers")
        return rows

    @cached_property
    def first(self) -> Any:
        return self.answer(self.ranker, self.items)

    # -- the checks -------------------------------------------------------------------

    def check_builds(self) -> str:
        ranker = self.ranker
        for field in ("name", "fingerprint"):
            value = getattr(ranker, field, None)
            if not isinstance(value, str) or not value:
                fail(f"{field} must be a non-empty str, got {value!r}")
        return f"a {self.contract.kind} ranker"

    def check_outputs(self) -> str:
        problem = self.contract.problem(self.first, self.items)
        if problem:
            fail(problem)
        return ""

    def check_empty(self) -> str:
        empty = self.answer(self.ranker, [])
        if self.contract.kind == "listwise":
            if list(empty) != []:
                fail(f"rank_windows([]) returned {empty!r}; expected an empty list")
        elif not isinstance(empty, np.ndarray) or empty.shape != (0,) or \
                empty.dtype != np.float64:
            fail(f"{self.contract.method}([]) returned {empty!r}; expected an empty float64 "
                 "array")
        return ""

    def check_batches(self) -> str:
        whole = self.rows(self.ranker, self.items)
        one_by_one = np.concatenate([self.rows(self.ranker, [item]) for item in self.items])
        backwards = self.rows(self.ranker, self.items[::-1])[::-1]
        for label, other in ((f"one {self.contract.item} at a time", one_by_one),
                             ("in reverse order", backwards)):
            if not np.allclose(whole, other, rtol=1e-5, atol=1e-6, equal_nan=True):
                worst = int(np.argmax(np.abs(whole - other).reshape(len(whole), -1).max(1)))
                fail(f"answered {label}, {self.contract.item} {worst} gets "
                     f"{other[worst].tolist()!r} instead of {whole[worst].tolist()!r} (the "
                     f"engine batches {self.contract.item}s in any size and order)")
        return ""

    def check_deterministic(self) -> str:
        rows = self.rows(self.ranker, self.items)
        if not np.array_equal(rows[:1], rows[-1:], equal_nan=True):
            fail(f"the same {self.contract.item} twice in one batch got {rows[0].tolist()!r} "
                 f"and {rows[-1].tolist()!r}")
        if not np.array_equal(rows, self.rows(self.ranker, self.items), equal_nan=True):
            fail(f"the same {self.contract.item}s twice got different answers")
        if self.spec is None:
            return "a ranker object: not rebuilt to compare a second instance"
        rebuilt = self.rows(self.build(self.spec.text), self.items)
        if not np.allclose(rows, rebuilt, rtol=1e-6, atol=1e-9, equal_nan=True):
            fail(f"a second ranker built from {self.spec.text!r} with seed {self.seed} "
                 "answers differently")
        return ""

    def check_other_process(self) -> str:
        if self.spec is None:
            return "a ranker object: only a spec can be built in another process"
        ours = self.ranker.fingerprint
        theirs = fingerprint_in_fresh_process(self.spec.text, self.collection_name,
                                              self.plugins, self.seed)
        if theirs != ours:
            fail(f"the fingerprint differs between processes ({ours!r} here, {theirs!r} in a "
                 "fresh one): cached scores would never be found again (hash(), id() or a "
                 "path of the moment in it?)")
        return ""

    def check_parameters_in_fingerprint(self) -> str:
        record = self.record()
        if record is None:
            return "no registered family to vary"
        base = self.ranker.fingerprint
        untried: list[str] = []
        for field in dataclasses.fields(record.params):
            values = alternative_values(record.params, field)
            if not values:
                untried.append(field.name)
                continue
            moved = {value: self.fingerprint_with(field.name, value) for value in values}
            moved = {value: fingerprint for value, fingerprint in moved.items()
                     if fingerprint is not None}
            if field.metadata.get("scoring", True):
                if moved and all(fingerprint == base for fingerprint in moved.values()):
                    fail(f"+{field.name}={', '.join(moved)} leave the fingerprint {base!r} "
                         "unchanged: answers cached for one value would be served for "
                         "another")
            else:
                for value, fingerprint in moved.items():
                    if fingerprint != base:
                        fail(f"+{field.name} is declared scoring=False but +{field.name}="
                             f"{value} changes the fingerprint ({base!r} → {fingerprint!r}): "
                             "changing it would throw the cache away")
        return f"no other value known to try for {', '.join(untried)}" if untried else ""

    def fingerprint_with(self, name: str, value: str) -> str | None:
        """The fingerprint with ``+name=value``; None when the family refuses that value
        (a combination its declaration cannot describe, say)."""
        from abnirml.errors import ConfigError

        try:
            return str(self.build(with_param(self.spec, name, value)).fingerprint)
        except ConfigError:
            return None

    def check_refusals(self) -> str:
        from abnirml.errors import ConfigError

        record = self.record()
        if record is None:
            return "no registered family to check"
        attempts = [] if record.open_params else [("nosuchparameter", "1")]
        attempts += [(field.name, bad) for field in dataclasses.fields(record.params)
                     for bad in bad_values(record.params, field)]
        accepted = []
        for name, value in attempts:
            try:
                self.build(with_param(self.spec, name, value))
            except ConfigError:
                continue
            accepted.append(f"+{name}={value}")
        if accepted:
            fail(f"accepted {', '.join(accepted)} instead of refusing it in one line")
        return ""

    def record(self) -> Any:
        """The family record of the spec, or None (a ranker object)."""
        from abnirml.rankers import registry

        if self.spec is None:
            return None
        self.env  # noqa: B018 - the plugins that register the family
        return registry.lookup(self.spec.family)


def with_param(spec: RankerSpec | None, name: str, value: str) -> str:
    """``spec`` with ``+name=value`` set (replacing a given value)."""
    assert spec is not None
    params = (*tuple((k, v) for k, v in spec.params if k != name), (name, value))
    return dataclasses.replace(spec, params=params, display="").canonical


_FRESH_PROCESS = """
import json, sys
from abnirml.testing.ranker_checks import fingerprint_here
print(json.dumps(fingerprint_here(*json.loads(sys.argv[1]))))
"""


def fingerprint_in_fresh_process(spec: str, collection: str, plugins: Sequence[str],
                                 seed: int) -> str:
    """The fingerprint a new Python process builds for ``spec``, with another hash seed
    than this process (so a fingerprint holding ``hash()`` of a string shows)."""
    ours = os.environ.get("PYTHONHASHSEED", "")
    env = {**os.environ, "PYTHONHASHSEED": "2" if ours == "1" else "1"}
    source = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", _FRESH_PROCESS,
                           json.dumps([spec, collection, list(plugins), seed], allow_nan=False)],
                          capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        fail(f"a fresh process could not build {spec!r}: {last} (are the plugins that "
             "register its family passed as plugins=[...]?)")
    return str(json.loads(done.stdout.strip().splitlines()[-1]))


def fingerprint_here(spec: str, collection: str, plugins: Sequence[str], seed: int) -> str:
    """Build ``spec`` as :func:`ranker_checks` does and give its fingerprint (the fresh
    process's side of the check)."""
    subject = _RankerUnderTest(spec, collection, tuple(plugins), seed)
    return str(subject.ranker.fingerprint)

