"""Multiple-comparison corrections over the tests of one table (probe family).

``bonferroni`` (family-wise, the papers'), ``holm`` (family-wise, uniformly more powerful),
``bh`` (Benjamini–Hochberg, false-discovery rate) and ``none``. A test is significant when
its adjusted p-value is strictly below α. A module of its own, below the tests and the
verdict rule, since both read it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CORRECTIONS = ("bonferroni", "holm", "bh", "none")
DEFAULT_CORRECTION = "bonferroni"
CORRECTION_LABELS = {"bonferroni": "Bonferroni", "holm": "Holm", "bh": "Benjamini–Hochberg",
                     "none": "no"}


def adjust(p_values: Sequence[float], correction: str) -> list[float]:
    """Adjusted p-values (each compared with α) for one family of tests."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.shape[0]
    if m == 0:
        return []
    if correction == "none":
        return p.tolist()
    if correction == "bonferroni":
        return np.minimum(1.0, p * m).tolist()
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if correction == "holm":
        steps = np.maximum.accumulate((m - np.arange(m)) * ranked)
    elif correction == "bh":
        steps = np.minimum.accumulate((m * ranked / np.arange(1, m + 1))[::-1])[::-1]
    else:
        raise ValueError(correction)
    out = np.empty(m)
    out[order] = np.minimum(1.0, steps)
    return out.tolist()


def significant(p_values: Sequence[float], alpha: float, correction: str) -> list[bool]:
    """Which tests stay significant at ``alpha`` after ``correction`` over the family.

    Bonferroni is computed as ``p · m < α`` without clipping, exactly as before.
    """
    if correction == "bonferroni":
        m = len(p_values)
        return [p * m < alpha for p in p_values]
    return [q < alpha for q in adjust(p_values, correction)]
