"""Vectorised instance miners: one query's documents in, index arrays of instances out.

Every function works on the features of *one* query's document pool (``n`` documents,
``m`` distinct analysed query terms) and returns NumPy index arrays into that pool. Pairs
are *ordered*: the first index is the document the axiom prefers. No Python loop runs over
document pairs; pair conditions are boolean ``n × n`` (or ``n × n × m``) masks and TFC2's
triples are found by looking up the count vector the third document must have.

Definitions follow Rennings et al. (TFC1, TFC2, M-TDC, LNC2; "extended and relaxed") and
Câmara & Hauff (LNC1, TP, STMC1–3). ``counts[i, w]`` is c(w, d_i); ``lengths`` are document
lengths in analysed tokens; ``tol`` is δ_len (``math.inf`` accepts any difference).
"""

from __future__ import annotations

from typing import cast

import numpy as np

Pairs = tuple[np.ndarray, np.ndarray]
Triples = tuple[np.ndarray, np.ndarray, np.ndarray]


def _nonzero(mask: np.ndarray) -> Pairs:
    np.fill_diagonal(mask, False)
    i, j = np.nonzero(mask)
    return i.astype(np.int64), j.astype(np.int64)


def length_close(lengths: np.ndarray, tol: float) -> np.ndarray:
    """|len_i − len_j| ≤ tol for every pair (all True when tol is infinite)."""
    n = lengths.shape[0]
    if np.isinf(tol):
        return np.ones((n, n), dtype=bool)
    # numpy types element-wise results of untyped arrays as Any
    return cast(np.ndarray, np.abs(lengths[:, None] - lengths[None, :]) <= tol)


def tfc1(counts: np.ndarray, lengths: np.ndarray, tol: float) -> Pairs:
    """TFC1: c(w, d_i) ≥ c(w, d_j) for every query term, Σ strictly larger, lengths close."""
    sums = counts.sum(axis=1)
    dominates = (counts[:, None, :] >= counts[None, :, :]).all(axis=2)
    mask = dominates & (sums[:, None] > sums[None, :]) & length_close(lengths, tol)
    return _nonzero(mask)


def tfc2(counts: np.ndarray, lengths: np.ndarray, tol: float) -> Triples:
    """TFC2 triples (i, j, k): Σc_k > Σc_j > Σc_i > 0, c_j − c_i = c_k − c_j per term,
    all three lengths pairwise within tol. Returned as (d_i, d_j, d_k), fewest matches first.

    For each admissible (i, j) the third document must have the count vector 2·c_j − c_i
    exactly, so it is looked up among the documents grouped by count vector.
    """
    empty = np.zeros(0, dtype=np.int64)
    n = counts.shape[0]
    sums = counts.sum(axis=1)
    pair_mask = ((sums[None, :] > sums[:, None]) & (sums[:, None] > 0)
                 & length_close(lengths, tol))
    i, j = _nonzero(pair_mask)
    if i.size == 0 or n < 3:
        return empty, empty, empty
    target = 2 * counts[j] - counts[i]
    feasible = (target >= 0).all(axis=1)
    i, j, target = i[feasible], j[feasible], target[feasible]
    if i.size == 0:
        return empty, empty, empty
    _, groups = np.unique(np.vstack([counts, target]), axis=0, return_inverse=True)
    groups = groups.reshape(-1)
    doc_group, target_group = groups[:n], groups[n:]
    order = np.argsort(doc_group, kind="stable")
    sorted_groups = doc_group[order]
    lo = np.searchsorted(sorted_groups, target_group, side="left")
    hi = np.searchsorted(sorted_groups, target_group, side="right")
    found = hi - lo
    total = int(found.sum())
    if total == 0:
        return empty, empty, empty
    owner = np.repeat(np.arange(i.size), found)
    offset = np.arange(total) - np.repeat(np.cumsum(found) - found, found)
    k = order[np.repeat(lo, found) + offset].astype(np.int64)
    i, j = i[owner], j[owner]
    if not np.isinf(tol):
        keep = (np.abs(lengths[k] - lengths[i]) <= tol) & (np.abs(lengths[k] - lengths[j]) <= tol)
        i, j, k = i[keep], j[keep], k[keep]
    return i, j, k


def m_tdc(counts: np.ndarray, lengths: np.ndarray, tol: float, df: np.ndarray,
          qtf: np.ndarray) -> Pairs:
    """M-TDC (Rennings et al.'s extension): equal Σc, at least one differing count, lengths
    close, and every query term whose count differs belongs to a *valid* term pair (a, b):
    idf(a) ≥ idf(b), c(a, d_i) = c(b, d_j), c(b, d_i) = c(a, d_j), c(a, d_i) > c(a, d_j),
    c(a, q) ≥ c(b, q). Then S(d_i) ≥ S(d_j).

    ``df`` gives the idf order (idf decreases with document frequency, whatever its exact
    formula), ``qtf`` the query term counts.
    """
    sums = counts.sum(axis=1)
    differ = (counts[:, None, :] != counts[None, :, :]).any(axis=2)
    candidates = (sums[:, None] == sums[None, :]) & differ & length_close(lengths, tol)
    i, j = _nonzero(candidates)
    m = counts.shape[1]
    if i.size == 0 or m < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    x, y = counts[i], counts[j]                                   # (p, m)
    term_ok = (df[:, None] <= df[None, :]) & (qtf[:, None] >= qtf[None, :])
    np.fill_diagonal(term_ok, False)                              # a ≠ b
    valid = (term_ok[None, :, :]
             & (x[:, :, None] == y[:, None, :])                   # c(a, d_i) = c(b, d_j)
             & (y[:, :, None] == x[:, None, :])                   # c(a, d_j) = c(b, d_i)
             & (x > y)[:, :, None])                               # c(a, d_i) > c(a, d_j)
    covered = valid.any(axis=2) | valid.any(axis=1)
    keep = ((x == y) | covered).all(axis=1)
    return i[keep], j[keep]


def lnc1(counts: np.ndarray, lengths: np.ndarray) -> Pairs:
    """LNC1: identical query-term counts, d_j longer (more non-query terms): S(d_i) ≥ S(d_j).

    The original adds exactly one non-query term; extracted pairs differ by any number.
    """
    same = (counts[:, None, :] == counts[None, :, :]).all(axis=2)
    return _nonzero(same & (lengths[:, None] < lengths[None, :]))


def tp(gamma: np.ndarray, counts: np.ndarray, lengths: np.ndarray, tol: float) -> Pairs:
    """TP: identical query-term counts, lengths within tol, Γ(d_i) < Γ(d_j): S(d_i) > S(d_j).

    The proximity axiom compares a document with one whose query terms are moved (Tao &
    Zhai's D′ is D with query-term positions switched), so only proximity differs; a pair
    that also differs in query-term frequency would credit a bag-of-words model with
    "proximity". Γ is the minimum distance between two distinct query terms (infinite when a
    document holds fewer than two of them: such documents are left out).
    """
    same = (counts[:, None, :] == counts[None, :, :]).all(axis=2)
    return _nonzero(same & length_close(lengths, tol) & _closer(gamma))


def tp_relaxed(gamma: np.ndarray) -> Pairs:
    """TP as Câmara & Hauff's adapted formula reads: Γ(d_i) < Γ(d_j), nothing else fixed
    (term frequencies and lengths may differ too)."""
    return _nonzero(_closer(gamma))


def _closer(gamma: np.ndarray) -> np.ndarray:
    finite = np.isfinite(gamma)
    return cast(np.ndarray, (gamma[:, None] < gamma[None, :]) & finite[:, None] & finite[None, :])


def stmc1(covered: np.ndarray, query_similarity: np.ndarray) -> Pairs:
    """STMC1: both documents cover the same number of distinct query terms and d_i's
    non-query terms are more similar to the query: S(d_i) > S(d_j)."""
    sim = query_similarity
    known = np.isfinite(sim)
    mask = ((covered[:, None] == covered[None, :]) & (sim[:, None] > sim[None, :])
            & known[:, None] & known[None, :])
    return _nonzero(mask)


def stmc2(query_matches: np.ndarray, nonquery: np.ndarray, doc_similarity: np.ndarray,
          threshold: float) -> Pairs:
    """STMC2: Σ_{t∉Q} c(t, d_j) > Σ_{q∈Q} c(q, d_i) > 0 and the non-query parts of d_i and
    d_j are similar (> threshold): the exact matches of d_i beat d_j's related terms,
    S(d_i) ≥ S(d_j).

    Câmara & Hauff's conditions alone hold for almost every pair *in both orders* (any
    passage has more non-query terms than the other has query-term matches), which would
    make the dataset a coin toss. We also require d_i to be the more exact match,
    Σ_{q∈Q} c(q, d_i) > Σ_{q∈Q} c(q, d_j), as in the original axiom where d_2 holds no
    query term; each pair then has one direction.
    """
    q = query_matches
    mask = ((nonquery[None, :] > q[:, None]) & (q[:, None] > 0) & (q[:, None] > q[None, :])
            & (np.nan_to_num(doc_similarity, nan=-np.inf) > threshold))
    return _nonzero(mask)


def stmc3(covered: np.ndarray, sums: np.ndarray, lengths: np.ndarray, tol: float,
          query_similarity: np.ndarray) -> Pairs:
    """STMC3: same number of distinct query terms covered, lengths close, d_i has more
    query-term occurrences while d_j's non-query terms are more similar to the query:
    S(d_i) > S(d_j) (exact matches outweigh semantic ones)."""
    sim = query_similarity
    known = np.isfinite(sim)
    mask = ((covered[:, None] == covered[None, :]) & (sums[:, None] > sums[None, :])
            & (sim[None, :] > sim[:, None]) & known[:, None] & known[None, :]
            & length_close(lengths, tol))
    return _nonzero(mask)
