"""The cluster recipes in examples/ray/ (and, word for word, in the scaling guide) would run
as written: one image with Ray's dashboard for every pod of the RayJob, the token handed out
by KubeRay (so the submitter has it too), the score cache on a volume only the driver
mounts, a Slurm script that waits for its nodes and keeps the cache off shared storage,
each naming the Ray (and KubeRay) version it was written for, each abnirml command line
accepted by abnirml's own parser."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from abnirml.cli import build_parser

yaml = pytest.importorskip("yaml", reason="PyYAML comes with Ray (abnirml[ray])")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "ray"
RAY_VERSION = "2.60.0"
KUBERAY_VERSION = "1.6.2"


def _text(name: str) -> str:
    return (EXAMPLES / name).read_text(encoding="utf-8")


def _documents() -> dict[str, dict]:
    return {doc["kind"] + ":" + doc["metadata"]["name"]: doc
            for doc in yaml.safe_load_all(_text("kuberay-rayjob.yaml"))}


def _job() -> dict:
    (job,) = [doc for doc in _documents().values() if doc["kind"] == "RayJob"]
    return job


def _containers(job: dict) -> list[dict]:
    spec = job["spec"]["rayClusterSpec"]
    groups = [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
    return [c for group in groups for c in group["template"]["spec"]["containers"]]


def _parsed(command: str):
    """abnirml's command line parsed by abnirml's own parser (it exits on an unknown
    option or a bad value)."""
    words = shlex.split(command)
    assert words[0] == "abnirml", command
    return build_parser().parse_args(words[1:])


def test_each_recipe_names_the_versions_it_was_written_for():
    for name in ("Dockerfile", "kuberay-rayjob.yaml"):
        head = _text(name)[:600]
        assert f"Ray {RAY_VERSION}" in head and f"KubeRay {KUBERAY_VERSION}" in head, name
    head = _text("slurm-abnirml.sbatch")[:400]
    assert f"Ray {RAY_VERSION}" in head and "Ray 2.49 or newer" in head.replace("\n# ", " ")
    assert _job()["spec"]["rayClusterSpec"]["rayVersion"] == RAY_VERSION


def test_every_pod_runs_one_image_with_rays_dashboard():
    """KubeRay's probes of the head and the submitter's `ray job submit` need ray[default];
    the image is Ray's own of the same version, abnirml installed with the extra that
    brings it."""
    images = {c["image"] for c in _containers(_job())}
    assert len(images) == 1 and images.pop().endswith(f":ray{RAY_VERSION}")
    docker = _text("Dockerfile")
    (base,) = re.findall(r"^FROM (\S+)$", docker, flags=re.M)
    assert base.startswith(f"rayproject/ray:{RAY_VERSION}-py311")
    (install,) = re.findall(r"^RUN pip install (.+)$", docker, flags=re.M)
    assert f'"ray[default]=={RAY_VERSION}"' in install
    extras = re.search(r'abnirml\[([\w,-]+)\]"', install).group(1).split(",")
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert "ray-cluster" in extras and set(extras) <= set(declared)
    assert declared["ray-cluster"] == ["ray[default]>=2.9"]
    assert declared["ray-client"] == ["ray[client]>=2.9"]


def test_kuberay_hands_the_token_to_every_pod_including_the_submitter():
    """With authOptions.mode: token KubeRay makes the token and sets RAY_AUTH_MODE and
    RAY_AUTH_TOKEN in the head, the workers and the submitter; a Secret passed to the Ray
    containers by hand would never reach the submitter."""
    job = _job()
    assert job["spec"]["rayClusterSpec"]["authOptions"] == {"mode": "token"}
    for container in _containers(job):
        named = {e["name"] for e in container.get("env", [])}
        assert not named & {"RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"}
        assert "envFrom" not in container
    assert "submitterPodTemplate" not in job["spec"]     # KubeRay's, on the head's image


def test_the_rayjob_command_line_and_where_its_files_live():
    documents, job = _documents(), _job()
    args = _parsed(job["spec"]["entrypoint"])
    assert args.ray == "auto" and args.device == "cuda"
    spec = job["spec"]["rayClusterSpec"]
    head = spec["headGroupSpec"]["template"]["spec"]

    def claim_of(path: str, pod: dict) -> dict:
        (container,) = pod["containers"]
        mount = max((m for m in container["volumeMounts"]
                     if path.startswith(m["mountPath"] + "/")),
                    key=lambda m: len(m["mountPath"]))
        (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        return documents["PersistentVolumeClaim:"
                         + volume["persistentVolumeClaim"]["claimName"]]

    cache_claim = claim_of(args.cache, head)
    assert cache_claim["spec"]["accessModes"] == ["ReadWriteOnce"]       # not NFS
    assert claim_of(args.out, head)["spec"]["accessModes"] == ["ReadWriteMany"]
    for group in spec["workerGroupSpecs"]:           # only the driver opens the cache
        claims = {v["persistentVolumeClaim"]["claimName"]
                  for v in group["template"]["spec"]["volumes"]}
        assert cache_claim["metadata"]["name"] not in claims
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
    assert spec["enableInTreeAutoscaling"] is True
    (head_container,) = head["containers"]
    assert "nvidia.com/gpu" in head_container["resources"]["limits"]   # --device cuda there


def _slurm_command() -> str:
    """The abnirml command the Slurm script runs, its shell variables filled in."""
    script = _text("slurm-abnirml.sbatch").replace("\\\n", " ")
    (line,) = [line for line in script.splitlines()
               if "ray symmetric-run" in line and not line.startswith("#")]
    command = line.split(" -- ", 1)[1].split(" || ")[0]
    values = {"$head_ip": "10.0.0.5", "$port": "40123", "$local_dir": "/local/abnirml-7",
              "$SLURM_JOB_ID": "7"}
    for name, value in values.items():
        command = command.replace(name, value)
    return command


def test_the_slurm_script_waits_for_its_nodes_and_keeps_the_cache_local():
    script = _text("slurm-abnirml.sbatch")
    directives = re.findall(r"^#SBATCH (\S+)", script, flags=re.M)
    assert "--exclusive" in directives
    assert re.search(r'ray symmetric-run --address "\$head_ip:\$port" --min-nodes '
                     r'"\$SLURM_JOB_NUM_NODES"', script)
    commands = "\n".join(line for line in script.splitlines()
                         if not line.lstrip().startswith("#"))
    assert not re.search(r"^\s*sleep\b", commands, flags=re.M)
    assert "6379" not in commands          # no fixed port
    assert "export RAY_AUTH_MODE=token" in script and "export RAY_AUTH_TOKEN" in script
    args = _parsed(_slurm_command())
    assert args.ray == "10.0.0.5:40123"
    assert args.cache == "/local/abnirml-7/scores.sqlite"
    (local,) = re.findall(r'^local_dir="(.+)"$', script, flags=re.M)
    assert local.startswith("${SLURM_TMPDIR:-/tmp}/") and "HOME" not in local
    assert args.out.startswith("/shared/")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_slurm_script_is_valid_bash():
    done = subprocess.run(["bash", "-n", str(EXAMPLES / "slurm-abnirml.sbatch")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_scaling_guide_shows_the_recipes_as_they_are():
    guide = (ROOT / "docs" / "guide" / "scaling.md").read_text(encoding="utf-8")
    for name, language in (("Dockerfile", "dockerfile"), ("kuberay-rayjob.yaml", "yaml"),
                           ("slurm-abnirml.sbatch", "bash")):
        assert f"```{language}\n{_text(name)}```" in guide, name
