"""What docs/patching.md says about the packaged SPLADE-tiny on TREC DL 2019, checked on
fewer samples (skips without the shared data)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")


def test_splade_tiny_keeps_appended_query_evidence_at_the_appended_tokens(dl19):
    from abnirml.errors import ConfigError
    from abnirml.evaluation.execution.workspace import SessionSettings
    from abnirml.mechanism.run import PatchConfig, run_patching
    from abnirml.mechanism.study import COLUMNS

    try:
        output = run_patching(PatchConfig(ranker="splade", probes=["tmp:append-query"],
                                          collection=str(dl19), limit=10, out=None, resamples=100,
                                          session=SessionSettings(progress=False)))
    except ConfigError as exc:
        pytest.skip(f"needs the packaged SPLADE-tiny: {exc}")
    (result,) = output.results
    assert len(result.samples) == 10
    residual = result.residual_stack()
    changed = COLUMNS.index("changed")
    # the appended positions alone carry (nearly) the whole effect at every layer …
    assert np.median(residual[:, 0, changed]) == 1.0
    assert np.median(residual[:, 1:, changed], axis=0).min() > 0.8
    # … while single heads move the typical sample little
    assert np.abs(np.median(result.head_stack(), axis=0)).max() < 0.2
