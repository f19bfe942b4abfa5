"""The model directory ``abnirml train`` writes and ``knrm:<dir>`` (etc.) load — no pickle.

::

    DIR/abnirml-model.json   kind, seed, folds, hyperparameters, stopword list, the training
                             collection's name and digest, every training query with its fold
    DIR/fold-0.safetensors … DIR/fold-{k-1}.safetensors, DIR/all.safetensors   (KNRM, Conv-KNRM)
    DIR/fold-0.txt … DIR/all.txt                                              (LightGBM text)

``fold-i`` was trained without fold i's queries and scores them; ``all`` was trained on every
query and scores any other query text. The files carry no timestamps, so training twice with
the same seed writes identical bytes (and so the same fingerprint).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abnirml.errors import ConfigError
from abnirml.rankers.families.learned.folds import FoldPlan, model_key

CONFIG_NAME = "abnirml-model.json"
FORMAT = "abnirml-learned-ranker"
VERSION = 1
KINDS = ("knrm", "cknrm", "lgbm")


def weights_name(kind: str, key: str) -> str:
    return f"{key}.txt" if kind == "lgbm" else f"{key}.safetensors"


@dataclass(frozen=True)
class ModelManifest:
    """What ``abnirml-model.json`` says about a trained model: its kind, seed,
    hyperparameters, stopword list, training collection and query folds; the weights
    themselves sit beside it, one file per fold model (:func:`weights_name`)."""

    kind: str
    seed: int
    params: dict[str, Any]
    stopwords: str
    plan: FoldPlan
    collection: dict[str, Any]
    extra: dict[str, Any]

    def model_keys(self) -> list[str]:
        return [model_key(f) for f in range(self.plan.k)] + [model_key(None)]

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "kind": self.kind, "seed": self.seed,
                "folds": self.plan.k, "params": self.params, "stopwords": self.stopwords,
                "collection": self.collection, "extra": self.extra,
                "files": {key: weights_name(self.kind, key) for key in self.model_keys()},
                "queries": self.plan.to_json()}

    def write(self, directory: Path) -> None:
        text = json.dumps(self.to_json(), indent=1, sort_keys=True, allow_nan=False)
        (directory / CONFIG_NAME).write_text(text + "\n", "utf-8")


def read_manifest(directory: Path, ranker: str, expected_kind: str | None = None
                  ) -> ModelManifest:
    """The manifest of a model directory, checked: format and version known, the expected
    kind, and every fold model's weights file present (else one ConfigError line)."""
    path = directory / CONFIG_NAME
    if not directory.is_dir():
        raise ConfigError(f"ranker {ranker}: model directory {str(directory)!r} not found")
    if not path.is_file():
        raise ConfigError(f"ranker {ranker}: {directory} is not a model directory from "
                          f"'abnirml train' (no {CONFIG_NAME})")
    try:
        data = json.loads(path.read_text("utf-8"))
        if data.get("format") != FORMAT:
            raise ValueError("not an abnirml learned-ranker description")
        if int(data["version"]) > VERSION:
            raise ValueError(f"format version {data['version']} is newer than this abnirml")
        kind = str(data["kind"])
        plan = FoldPlan.from_json(int(data["folds"]), list(data["queries"]))
        manifest = ModelManifest(kind, int(data["seed"]), dict(data["params"]),
                                 str(data["stopwords"]), plan, dict(data["collection"]),
                                 dict(data.get("extra", {})))
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"ranker {ranker}: {path} is unreadable ({exc})") from None
    if expected_kind is not None and kind != expected_kind:
        raise ConfigError(f"ranker {ranker}: {directory} holds a {kind} model, not {expected_kind}")
    missing = [k for k in manifest.model_keys()
               if not (directory / weights_name(kind, k)).is_file()]
    if missing:
        raise ConfigError(f"ranker {ranker}: {directory} lacks {weights_name(kind, missing[0])}")
    return manifest
