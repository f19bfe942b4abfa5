"""Rankers the project trains itself on a collection's judgments: KNRM, Conv-KNRM (PyTorch,
GloVe embeddings) and a LightGBM LambdaMART over text features.

Training is query-level k-fold cross-validation (:mod:`.folds`): one model per fold, trained
on the other folds' queries, scores that fold's queries, so no judged query is ever scored
by a model that saw its judgments; a model trained on every query scores queries that were
not part of training. ``abnirml train`` writes the models to a directory (:mod:`.store`)
that ``knrm:<dir>``, ``cknrm:<dir>`` and ``lgbm:<dir>`` load; plain ``knrm`` trains on the
run's collection on the fly and keeps the result in the model cache (:mod:`.train`).
"""
