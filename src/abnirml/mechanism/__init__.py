"""Causal activation patching on probe pairs: where in a transformer ranker a probed
behaviour is computed (``abnirml patch``; see docs/patching.md).

Python entry points (imported lazily, so importing this package loads nothing heavy):

* :func:`abnirml.mechanism.run.run_patching` with a :class:`~abnirml.mechanism.run.PatchConfig`
  — what the command does;
* :func:`abnirml.mechanism.targets.target_for` and
  :func:`abnirml.mechanism.study.patch_samples` — patch samples already in hand on a built
  ranker;
* :func:`abnirml.mechanism.summary.summarise` — averages and query-clustered intervals.
"""
