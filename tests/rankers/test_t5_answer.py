"""monoT5 and duoT5 share one T5 forward pass (``rankers/families/t5_answer.py``): their scores
on a fixed tiny T5 (random weights of a real shape, seed 0) are pinned to the values the two
families gave when each had its own forward pass, and both agree with the shared scorer's
two logits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.rankers.registry import RankerEnv, build_ranker
from tests.helpers import score_bound

pytest.importorskip("torch")
pytest.importorskip("transformers")

PAIRS = [("vitamin d deficiency", "symptoms of vitamin d deficiency are tiredness"),
         ("vitamin d deficiency", "bread dough"),
         ("roman empire", "the roman empire split into east and west"),
         ("roman empire", " ".join(["bread"] * 40))]
TRIPLES = [("vitamin d deficiency", "symptoms of vitamin d deficiency are tiredness",
            "bread dough"),
           ("roman empire", "the roman empire split into east and west",
            " ".join(["bread"] * 40)),
           ("roman empire", "the cat", " ".join(["the roman empire"] * 20))]

# Computed with the separate monoT5/duoT5 forward passes on this model (tests/_tiny_models.py
# save_t5, seed 0); each value is reproduced to float32 rounding.
MONOT5 = [-0.2916952967643738, -0.2020169347524643, -0.26724883913993835, -0.33702734112739563]
MONOT5_MAX_LENGTH_12 = [-0.23686730861663818, -0.2020169347524643, -0.3494730293750763,
                        -0.44794556498527527]
DUOT5 = [0.7527269721031189, 0.6713555455207825, 0.6524741649627686]
DUOT5_MAX_LENGTH_20 = [0.7527269721031189, 0.6534038782119751, 0.6800933480262756]


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    from tests._tiny_models import save_t5

    return save_t5(tmp_path_factory.mktemp("t5") / "t5")


def _bound(t5) -> float:
    """How far two float32 evaluations of a score may lie apart (the pinned values came from
    other forward passes; see tests/helpers.py)."""
    return score_bound(f"monot5:{t5}")


def _build(spec: str):
    return build_ranker(spec, RankerEnv())


def test_monot5_scores_are_the_pinned_values(t5, one_torch_thread):
    np.testing.assert_allclose(_build(f"monot5:{t5}").score(PAIRS), MONOT5, atol=_bound(t5), rtol=0)
    # the fourth document is cut to fit: a different input, so a different score
    np.testing.assert_allclose(_build(f"monot5:{t5}+max_length=12").score(PAIRS),
                               MONOT5_MAX_LENGTH_12, atol=_bound(t5), rtol=0)


def test_duot5_preferences_are_the_pinned_values(t5, one_torch_thread):
    np.testing.assert_allclose(_build(f"duot5:{t5}").preferences(TRIPLES), DUOT5,
                               atol=_bound(t5), rtol=0)
    np.testing.assert_allclose(_build(f"duot5:{t5}+max_length=20").preferences(TRIPLES),
                               DUOT5_MAX_LENGTH_20, atol=_bound(t5), rtol=0)


def test_both_families_read_the_same_two_logits(t5, one_torch_thread):
    """monoT5 = log P(true), duoT5 = P(true) over the same scorer's (true, false) logits."""
    import torch

    mono = _build(f"monot5:{t5}")
    duo = _build(f"duot5:{t5}")
    assert mono.t5.token_ids == duo.t5.token_ids
    ids = mono._input_ids(*PAIRS[0])
    tensors = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones((1, len(ids)),
                                                                              dtype=torch.long)}
    with torch.no_grad():
        true, false = mono.t5.answer_logits(tensors)[0].tolist()
    p_true = math.exp(true) / (math.exp(true) + math.exp(false))
    assert mono.score([PAIRS[0]])[0] == pytest.approx(math.log(p_true), abs=_bound(t5))
    with torch.no_grad():
        assert duo._forward(tensors, [])[0].item() == pytest.approx(p_true, abs=_bound(t5))


@pytest.mark.parametrize("family", ["monot5", "duot5"])
@pytest.mark.parametrize(("params", "message"), [
    ("+true=maybe", r"'maybe' is not in the model's vocabulary"),
    ("+true=false", r"'false' and 'false' are the same token"),
])
def test_both_families_refuse_bad_answer_words_alike(t5, family, params, message):
    with pytest.raises(ConfigError, match=rf"^ranker {family}:.*{message}"):
        _build(f"{family}:{t5}{params}")
