"""Ranking models behind one small contract (:class:`~abnirml.rankers.base.Ranker`)."""
