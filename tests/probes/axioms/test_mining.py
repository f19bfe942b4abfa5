"""The vectorised axiom miners against hand-worked cases and naive definitions.

The naive versions below are the papers' definitions written as plain loops over document
pairs and triples; the miners must find exactly the same instances.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from abnirml.probes.axioms import mining

INF = math.inf


def pairs(found) -> set[tuple[int, ...]]:
    return set(zip(*(a.tolist() for a in found), strict=True))


# ---- naive definitions ------------------------------------------------------------------

def naive_tfc1(c, length, tol):
    out = set()
    for i, j in itertools.permutations(range(len(c)), 2):
        if (abs(length[i] - length[j]) <= tol and all(c[i] >= c[j])
                and c[i].sum() > c[j].sum()):
            out.add((i, j))
    return out


def naive_tfc2(c, length, tol):
    out = set()
    for i, j, k in itertools.permutations(range(len(c)), 3):
        lens = [length[i], length[j], length[k]]
        if max(lens) - min(lens) > tol:
            continue
        if not c[k].sum() > c[j].sum() > c[i].sum() > 0:
            continue
        if all(c[j] - c[i] == c[k] - c[j]):
            out.add((i, j, k))
    return out


def naive_mtdc(c, length, tol, df, qtf):
    out = set()
    m = c.shape[1]
    for i, j in itertools.permutations(range(len(c)), 2):
        x, y = c[i], c[j]
        if abs(length[i] - length[j]) > tol or x.sum() != y.sum() or all(x == y):
            continue
        covered = set()
        for a, b in itertools.permutations(range(m), 2):
            if (df[a] <= df[b] and x[a] == y[b] and x[b] == y[a] and x[a] > y[a]
                    and qtf[a] >= qtf[b]):
                covered.update((a, b))
        if all(w in covered for w in range(m) if x[w] != y[w]):
            out.add((i, j))
    return out


def naive_lnc1(c, length):
    return {(i, j) for i, j in itertools.permutations(range(len(c)), 2)
            if all(c[i] == c[j]) and length[i] < length[j]}


def random_case(seed: int, n: int = 8, m: int = 3):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 4, size=(n, m))
    lengths = rng.integers(0, 12, size=n)
    df = rng.integers(1, 4, size=m)
    qtf = rng.integers(1, 3, size=m)
    return counts, lengths, df, qtf


# ---- TFC1 -------------------------------------------------------------------------------

def test_tfc1_hand_made():
    counts = np.array([[1, 1], [1, 0], [2, 1], [2, 2], [0, 3]])
    lengths = np.array([4, 4, 4, 30, 4])
    # doc 3 dominates everything but doc 4 — yet it is 26 tokens longer; doc 4 has more
    # matches than docs 0–2 but fewer of the first term (the relaxation needs ≥ on each)
    assert pairs(mining.tfc1(counts, lengths, 10)) == {(0, 1), (2, 0), (2, 1)}
    assert pairs(mining.tfc1(counts, lengths, INF)) == {(0, 1), (2, 0), (2, 1),
                                                        (3, 0), (3, 1), (3, 2)}


@pytest.mark.parametrize("seed", range(20))
def test_tfc1_matches_definition(seed):
    counts, lengths, _, _ = random_case(seed)
    assert pairs(mining.tfc1(counts, lengths, 3)) == naive_tfc1(counts, lengths, 3)


# ---- TFC2 -------------------------------------------------------------------------------

def test_tfc2_hand_made():
    counts = np.array([[1, 0], [2, 1], [3, 2], [3, 1], [2, 2], [0, 0], [2, 0], [4, 1]])
    lengths = np.full(8, 5)
    # (0,1,2): +1/+1 per term each step; (6,1,4): +0/+1 twice; (1,3,7): +1/+0 twice.
    # Near misses: (5,0,6) steps +1/0 twice but d_i has no match; (0,1,7) sums 1,3,5 but
    # per-term steps (1,1) then (2,0).
    assert pairs(mining.tfc2(counts, lengths, 0)) == {(0, 1, 2), (6, 1, 4), (1, 3, 7)}
    lengths[2] = 20
    assert pairs(mining.tfc2(counts, lengths, 10)) == {(6, 1, 4), (1, 3, 7)}


def test_tfc2_duplicate_count_vectors_give_one_triple_each():
    counts = np.array([[1], [2], [3], [3]])
    assert pairs(mining.tfc2(counts, np.zeros(4), 0)) == {(0, 1, 2), (0, 1, 3)}


@pytest.mark.parametrize("seed", range(20))
def test_tfc2_matches_definition(seed):
    counts, lengths, _, _ = random_case(seed, n=9, m=2)
    counts = counts % 3
    assert pairs(mining.tfc2(counts, lengths, 6)) == naive_tfc2(counts, lengths, 6)


# ---- M-TDC ------------------------------------------------------------------------------

def test_mtdc_hand_made():
    counts = np.array([[2, 1, 0], [1, 2, 0], [1, 1, 1], [0, 2, 1], [0, 1, 2], [0, 2, 1]])
    lengths = np.full(6, 7)
    df = np.array([1, 5, 10])     # a is the rarest term, c the most common
    qtf = np.array([1, 1, 1])
    expected = {(0, 1), (0, 4), (5, 4), (1, 5), (3, 4), (1, 3)}
    assert pairs(mining.m_tdc(counts, lengths, 10, df, qtf)) == expected
    # (2, 3) differ on a and b but the counts are not swapped: never an instance;
    # (1, 0) swaps towards the commoner term: the wrong direction
    # a query that repeats b invalidates the (a, b) swap only
    assert pairs(mining.m_tdc(counts, lengths, 10, df, np.array([1, 2, 1]))) == expected - {
        (0, 1)}
    lengths[4] = 30
    assert pairs(mining.m_tdc(counts, lengths, 10, df, qtf)) == {(0, 1), (1, 5), (1, 3)}


def test_mtdc_equal_idf_pairs_count_both_ways():
    counts = np.array([[2, 1], [1, 2]])
    assert pairs(mining.m_tdc(counts, np.zeros(2), 0, np.array([3, 3]), np.array([1, 1]))) \
        == {(0, 1), (1, 0)}


@pytest.mark.parametrize("seed", range(20))
def test_mtdc_matches_definition(seed):
    counts, lengths, df, qtf = random_case(seed, n=10, m=4)
    counts = counts % 3
    assert (pairs(mining.m_tdc(counts, lengths, 4, df, qtf))
            == naive_mtdc(counts, lengths, 4, df, qtf))


# ---- LNC1 -------------------------------------------------------------------------------

def test_lnc1_hand_made():
    counts = np.array([[1, 0], [1, 0], [1, 1], [1, 0]])
    lengths = np.array([5, 8, 8, 5])
    assert pairs(mining.lnc1(counts, lengths)) == {(0, 1), (3, 1)}


@pytest.mark.parametrize("seed", range(10))
def test_lnc1_matches_definition(seed):
    counts, lengths, _, _ = random_case(seed, n=12, m=2)
    counts = counts % 2
    assert pairs(mining.lnc1(counts, lengths)) == naive_lnc1(counts, lengths)


# ---- TP, STMC1–3 ------------------------------------------------------------------------

def test_tp_relaxed_prefers_the_closer_query_terms():
    gamma = np.array([3, INF, 1, 3, 7])
    # doc 1 holds fewer than two distinct query terms; docs 0 and 3 tie
    assert pairs(mining.tp_relaxed(gamma)) == {(0, 4), (2, 0), (2, 3), (2, 4), (3, 4)}


def test_tp_pairs_only_documents_with_the_same_query_term_counts():
    gamma = np.array([3, INF, 1, 3, 7])
    counts = np.array([[1, 1], [2, 0], [1, 1], [2, 1], [1, 1]])
    lengths = np.array([10, 10, 10, 10, 30])
    # same counts: docs 0, 2, 4; doc 4 is 20 tokens longer than the others
    assert pairs(mining.tp(gamma, counts, lengths, math.inf)) == {(0, 4), (2, 0), (2, 4)}
    assert pairs(mining.tp(gamma, counts, lengths, 10)) == {(2, 0)}


def test_stmc1_hand_made():
    covered = np.array([1, 1, 2, 2])
    similarity = np.array([0.5, 0.3, 0.9, np.nan])
    assert pairs(mining.stmc1(covered, similarity)) == {(0, 1)}


def test_stmc2_hand_made():
    matches = np.array([2, 1, 0, 2])
    nonquery = np.array([10, 1, 10, 10])
    similarity = np.full((4, 4), 0.9)
    similarity[3, :] = similarity[:, 3] = 0.1
    # (0,1): doc 1 has one non-query term, not more than doc 0's two matches;
    # (0,3): equally exact; (3,2): non-query parts too dissimilar
    assert pairs(mining.stmc2(matches, nonquery, similarity, 0.2)) == {(0, 2), (1, 2)}
    assert pairs(mining.stmc2(matches, nonquery, similarity, 0.05)) == {(0, 2), (1, 2),
                                                                        (3, 2)}


def test_stmc3_hand_made():
    covered = np.array([1, 1, 1, 2])
    sums = np.array([3, 1, 2, 1])
    lengths = np.array([5, 5, 50, 5])
    similarity = np.array([0.2, 0.8, 0.9, 0.95])
    assert pairs(mining.stmc3(covered, sums, lengths, 10, similarity)) == {(0, 1)}
    assert pairs(mining.stmc3(covered, sums, lengths, INF, similarity)) == {(0, 1), (0, 2)}


def test_miners_scale_to_a_full_pool_without_pair_loops():
    """100 documents × 6 terms: every miner returns quickly and agrees with itself."""
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 3, size=(100, 6))
    lengths = rng.integers(20, 60, size=100)
    i, j = mining.tfc1(counts, lengths, 10)
    assert i.size > 0 and (counts[i] >= counts[j]).all()
    a, b, c = mining.tfc2(counts, lengths, 10)
    assert ((counts[b] - counts[a]) == (counts[c] - counts[b])).all()
