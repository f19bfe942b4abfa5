"""The ranker families this package implements, one module each (the learned ones in
``learned/``); their records are in ``rankers/built_in.py``."""
