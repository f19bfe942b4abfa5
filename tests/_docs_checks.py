"""What the README and the documentation pages say, read the way the checks need it.

The checks themselves live in ``test_readme.py`` (the README) and ``test_docs.py`` (the
site); both read pages through these helpers, so a name a page quotes is found the same way
wherever the text lives.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: Flags the pages name that belong to something other than an ``abnirml`` subcommand,
#: each with the file that defines it, or pip's own.
OTHER_FLAGS = {
    "--abnirml": "src/abnirml/pytest_plugin.py",
    "--abnirml-collection": "src/abnirml/pytest_plugin.py",
    "--abnirml-refresh": "src/abnirml/pytest_plugin.py",
    "--prepare": "benchmarks/gpu.py",
    "--carried": "benchmarks/gpu.py",
    "--smoke": "benchmarks/gpu.py",
    "--simulate": "benchmarks/gpu.py",
    "--speedup": "benchmarks/gpu.py",
    "--no-ramp": "benchmarks/gpu.py",
    "--two-passes": "benchmarks/gpu.py",
    "--shapes": "benchmarks/gpu.py",
    "--dtypes": "benchmarks/gpu.py",
    "--held-out": "benchmarks/synonym_judgements.py",
    "--sample-workers": "benchmarks/gpu.py",
    "--skip-learned": "benchmarks/rankers.py",
    "--max-pairs": "benchmarks/rankers.py",
    "--floor": "benchmarks/cold_biencoder.py",
    "--repeats": "benchmarks/cold_biencoder.py",
    "--texts": "benchmarks/biencoder_budget.py",
    "--threads": "benchmarks/biencoder_budget.py",
    "--budgets": "benchmarks/biencoder_budget.py",
    "--install": "benchmarks/demo_timing.py",
    "--in-memory": "benchmarks/scale.py",
    "--computed-candidates": "benchmarks/scale.py",
    "--dl19": "benchmarks/ray_scaling.py",
    "--latency": "benchmarks/ray_scaling.py",
    "--check": "docs/gen_reference.py",
    "--strict": "mkdocs",
}
PIP_FLAGS = {"--no-index", "--no-deps", "--no-compile", "--no-cache-dir", "--target",
             "--force-reinstall", "--index-url"}
#: Flags of the tools the scaling guide's cluster recipes call: ``ray start`` and ``ray
#: symmetric-run``, Slurm's ``#SBATCH``/``srun``, ``hostname`` and the Dockerfile's COPY.
CLUSTER_FLAGS = {"--head", "--address", "--port", "--node-ip-address", "--num-cpus",
                 "--num-gpus", "--object-store-memory", "--include-dashboard", "--block",
                 "--min-nodes", "--job-name", "--nodes", "--ntasks", "--ntasks-per-node",
                 "--cpus-per-task", "--gpus-per-node", "--exclusive", "--time", "--ip-address",
                 "--chown"}
#: The misspelling the errors page shows being answered with "did you mean --ranker?".
MISSPELT = "--rankers"
#: Names the pages' own examples register (a plugin axiom, a user's pairs probe).
EXAMPLE_PROBES = {"axiom:early-term", "dtp:mine"}
EXAMPLE_RANKERS = {"query-words", "words", "overlap"}


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def user_pages() -> dict[str, str]:
    """Every page a user reads: the README and the site's Markdown, by repository path."""
    pages = {"README.md": read(ROOT / "README.md")}
    for path in sorted(DOCS.rglob("*.md")):
        pages[str(path.relative_to(ROOT))] = read(path)
    return pages


def guide(*names: str) -> str:
    """The text of user-guide pages (``docs/guide/NAME.md``), joined."""
    return "\n".join(read(DOCS / "guide" / f"{name}.md") for name in names)


def blocks(text: str, language: str | None = None) -> list[str]:
    """Fenced code blocks (of one language when given)."""
    found = re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M)
    return [body for lang, body in found if language is None or lang == language]


def code(text: str) -> str:
    """Everything the text writes as code: fenced blocks and inline spans."""
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    return "\n".join(blocks(text) + inline)


def prose(text: str) -> str:
    """The text without fenced blocks and inline code (file formats quote ``#1 ID``)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]+`", "", text)


def subcommands() -> dict[str, argparse.ArgumentParser]:
    from abnirml.cli import build_parser

    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("abnirml's parser has no subcommands")


def cli_flags() -> set[str]:
    flags = {"--help", "--version"}
    for command in subcommands().values():
        flags |= {o for a in command._actions for o in a.option_strings if o.startswith("--")}
    return flags


def unknown_flags(text: str) -> list[str]:
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))
    unknown = sorted(named - cli_flags() - set(OTHER_FLAGS) - PIP_FLAGS - CLUSTER_FLAGS
                     - {MISSPELT})
    for flag, path in OTHER_FLAGS.items():
        if flag in named and path.endswith(".py"):
            assert f'"{flag}"' in read(ROOT / path), (flag, path)
    return unknown


def unknown_subcommands(text: str) -> tuple[set[str], list[str]]:
    used = set(re.findall(r"\babnirml ([a-z][a-z-]*)\b", code(text)))
    return used, sorted(used - set(subcommands()))


@functools.cache
def built_in() -> dict[str, list[str]]:
    """The probe names and ranker families of a fresh interpreter: other tests register
    their own into the process-wide registries, which the pages rightly never name."""
    program = ("import json; from abnirml.probes.probe_registry import all_probes; "
               "from abnirml.rankers.registry import families; "
               "print(json.dumps({'probes': [p.name for p in all_probes()], "
               "'rankers': families()}))")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout)


def probe_names() -> set[str]:
    return set(built_in()["probes"])


def ranker_families() -> set[str]:
    return set(built_in()["rankers"])


#: a name cut short by `|`, `{` or `<` is a pattern a page spells out, not a name
PROBE_PATTERN = r"\b((?:mmp|tmp|qvp|axiom|dtp):[a-z0-9*:-]*[a-z0-9*])(?![a-z0-9*:{|<-])"


def unregistered_probes(text: str) -> tuple[set[str], list[str]]:
    import fnmatch

    names = probe_names()
    quoted = set(re.findall(PROBE_PATTERN, code(text)))
    missing = []
    for name in sorted(quoted - EXAMPLE_PROBES):
        if "*" in name:
            if not fnmatch.filter(names, name):
                missing.append(name)
        elif name not in names:
            missing.append(name)
    return quoted, missing


def ranker_families_named(text: str) -> set[str]:
    """Families a page puts after ``--ranker`` or in the first cell of a ranker table."""
    specs = re.findall(r"--ranker\s+'?([a-z][a-z0-9-]*)", text)
    for row in re.findall(r"^\| (`[a-z][^|]*)\|", text, flags=re.M):
        specs += re.findall(r"`([a-z][a-z0-9-]*)(?=[:\[+`])", row)
    from abnirml.probes.built_in import BUILTIN_FAMILIES

    probe_families = tuple(family.key for family in BUILTIN_FAMILIES)
    return {s for s in specs if not s.startswith(probe_families)}


def quoted_repository_paths(text: str) -> set[str]:
    paths = set(re.findall(r"`((?:src|tests|benchmarks|docs)/[^`\s]*[\w/])`", text))
    paths |= {m for m in re.findall(r"\b((?:benchmarks|tests)/\w+\.py)\b", text)}
    paths |= set(re.findall(r"\]\(((?:docs|src|tests|benchmarks)/[^)#\s]+)", text))
    return paths


#: The work one documented command may do, in CPU seconds. A busy machine stretches the
#: wall-clock time of a run, not the CPU time it needs, so this bound holds however loaded
#: the machine is: the slowest command here (the README's finding, seven rankers over every
#: `tmp` probe on the demo collection) takes about 100 CPU seconds alone, and 6 minutes of
#: wall-clock time on a machine shared by eight jobs.
CPU_SECONDS = 900
#: Only for a command that waits on something for ever (no CPU spent): far beyond any run.
WALL_SECONDS = 4 * 3600
_BOUNDED_ABNIRML = ("import resource, runpy, sys; "
                    "seconds = int(sys.argv[1]); "
                    "resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 60)); "
                    "del sys.argv[1]; runpy.run_module('abnirml', run_name='__main__', "
                    "alter_sys=True)")


def run_abnirml(args: list[str], cwd: Path,
                cpu_seconds: int = CPU_SECONDS) -> subprocess.CompletedProcess:
    """``abnirml ARGS`` in ``cwd``, bounded by the CPU time it may use (the kernel ends it
    past ``cpu_seconds``), not by a wall-clock time a loaded CI machine could exceed."""
    import signal

    done = subprocess.run([sys.executable, "-c", _BOUNDED_ABNIRML, str(cpu_seconds), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=WALL_SECONDS)
    if done.returncode == -signal.SIGXCPU:
        raise AssertionError(f"abnirml {' '.join(args)} used more than {cpu_seconds} s of "
                             f"CPU time; stderr ends: {done.stderr[-2000:]}")
    return done
