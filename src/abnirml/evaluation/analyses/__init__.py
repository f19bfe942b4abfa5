"""Analyses over scored runs: comparisons of models, effectiveness beside behaviour, axiom
breakdowns, query-term masking, rank origin, listwise and pairwise probing, foil wins."""
