"""Conformance checks for a ranker: what the engine assumes of every ``score``, and what the
score cache assumes of every ``fingerprint``.

The engine scores each unique pair once, in batches of any size and order, and keys cached
scores by the fingerprint alone. So a ranker must give one finite float64 per pair whatever
the batch, the same scores for the same inputs, and a fingerprint that is the same in every
process and changes with every parameter that can change a score — or cached scores of one
setting are silently served for another.
"""

from __future__ import annotations

import dataclasses
import json
import math
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
from abnirml.testing.values import alternative_value, bad_values

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
        Check("scores are float64, one finite value per pair", subject.check_scores),
        Check("no pairs give an empty float64 array", subject.check_empty),
        Check("scores do not depend on the batch", subject.check_batches),
        Check("scores are deterministic", subject.check_deterministic),
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

    def score(self, ranker: Any, pairs: Sequence[Pair]) -> np.ndarray:
        try:
            return ranker.score(list(pairs))
        except AbnirmlError as exc:
            fail(f"score() refused the pairs: {exc}")
        except Exception as exc:  # the ranker's own code: any error is a finding
            fail(f"score() raised {type(exc).__name__}: {exc}")
        raise AssertionError("unreachable")

    @cached_property
    def scores(self) -> np.ndarray:
        return self.score(self.ranker, self.pairs)

    # -- the checks -------------------------------------------------------------------

    def check_builds(self) -> str:
        ranker = self.ranker
        for field, kind in (("name", str), ("fingerprint", str)):
            value = getattr(ranker, field, None)
            if not isinstance(value, kind) or not value:
                fail(f"{field} must be a non-empty {kind.__name__}, got {value!r}")
        if not callable(getattr(ranker, "score", None)):
            fail("it has no score(pairs) method")
        return ""

    def check_scores(self) -> str:
        scores = self.scores
        if not isinstance(scores, np.ndarray):
            fail(f"score() returned {type(scores).__name__}, not a numpy array")
        if scores.dtype != np.float64:
            fail(f"score() returned dtype {scores.dtype}, not float64")
        if scores.shape != (len(self.pairs),):
            fail(f"score() of {len(self.pairs)} pairs returned shape {scores.shape}")
        bad = [i for i, value in enumerate(scores) if not math.isfinite(value)]
        if bad:
            _query, doc = self.pairs[bad[0]]
            fail(f"{len(bad)} scores are not finite, e.g. {scores[bad[0]]} for the document "
                 f"{doc[:40]!r}")
        return ""

    def check_empty(self) -> str:
        empty = self.score(self.ranker, [])
        if not isinstance(empty, np.ndarray) or empty.shape != (0,) or \
                empty.dtype != np.float64:
            fail(f"score([]) returned {empty!r}; expected an empty float64 array")
        return ""

    def check_batches(self) -> str:
        whole = self.scores
        one_by_one = np.array([self.score(self.ranker, [pair])[0] for pair in self.pairs])
        backwards = self.score(self.ranker, self.pairs[::-1])[::-1]
        for label, other in (("one pair at a time", one_by_one),
                             ("in reverse order", backwards)):
            if not np.allclose(whole, other, rtol=1e-5, atol=1e-6, equal_nan=True):
                worst = int(np.argmax(np.abs(whole - other)))
                fail(f"scored {label}, pair {worst} gets {other[worst]!r} instead of "
                     f"{whole[worst]!r} (the engine batches pairs in any size and order)")
        return ""

    def check_deterministic(self) -> str:
        scores = self.scores
        if not np.array_equal(scores[:1], scores[-1:], equal_nan=True):
            fail(f"the same pair twice in one batch scored {scores[0]!r} and {scores[-1]!r}")
        if not np.array_equal(scores, self.score(self.ranker, self.pairs), equal_nan=True):
            fail("scoring the same pairs twice gave different scores")
        if self.spec is None:
            return "a ranker object: not rebuilt to compare a second instance"
        rebuilt = self.score(self.build(self.spec.text), self.pairs)
        if not np.allclose(scores, rebuilt, rtol=1e-6, atol=1e-9, equal_nan=True):
            fail(f"a second ranker built from {self.spec.text!r} with seed {self.seed} "
                 "scores differently")
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
            value = alternative_value(record.params, field)
            if value is None:
                untried.append(field.name)
                continue
            changed = self.build(with_param(self.spec, field.name, value)).fingerprint
            scoring = field.metadata.get("scoring", True)
            if scoring and changed == base:
                fail(f"+{field.name}={value} leaves the fingerprint {base!r} unchanged: "
                     "scores cached for one value would be served for the other")
            if not scoring and changed != base:
                fail(f"+{field.name} is declared scoring=False but changes the fingerprint "
                     f"({base!r} → {changed!r}): changing it would throw the cache away")
        return f"no other value known to try for {', '.join(untried)}" if untried else ""

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
                           json.dumps([spec, collection, list(plugins), seed])],
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

