"""ir_axioms' retrieval axioms as vectorised preference matrices over one query's pool.

webis-de/ir_axioms (Bondarenko et al.) defines each axiom as a preference between two
documents, 1 (first preferred), −1 (second) or 0, usually with 10 % margins ("close"
means ``math.isclose(a, b, rel_tol=0.1)``) and an optional length precondition (LEN: the
two documents' term counts are close). Each function here returns that ``n × n`` matrix
for a query's pool, computed with NumPy over the documents' count matrices, so the probes
can mine the instances (every pair with preference 1, the preferred document first) and
the benchmark can compare the matrices with ir_axioms 1.2.5 cell by cell.

Terms are the run's analysed terms (stopped, stemmed unless ``axiom.stem=0``); a
document's *sequence* is its analysed terms in text order (positions count kept terms
only, as ir_axioms' tokenizer sees them). ``IraxQuery`` holds what the definitions read
beyond :class:`~.features.QueryFeatures`.

Known differences from ir_axioms (see the axiom table in docs/guide/probes.md): none in the
definitions ported here; term similarity (REG, ANTI-REG, STMC1, STMC2) uses the run's word
vectors on each analysed term's first surface form, where ir_axioms looks up the term itself
(the same word when stemming is off, as in the agreement benchmark). LB1's retrieval scores
are the candidate run's own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import cast

import numpy as np

MARGIN = 0.1
#: ``math.isclose``'s default relative tolerance, used where ir_axioms calls it bare.
EXACT = 1e-9


@dataclass
class IraxQuery:
    """One query's pool as ir_axioms' definitions read it.

    ``counts[i, w]``: occurrences of unique query term ``w`` in document ``i``;
    ``lengths``: analysed terms per document; ``vocabulary``: distinct analysed terms per
    document; ``sequences``: each document's term ids in order; ``query_sequence``: the
    query's term ids in order (duplicates kept); ``term_ids``: the unique query terms, in
    first-occurrence order (the columns of ``counts``); ``idf``: log(N / df), 0 for df = 0;
    ``similarity``: the ``m × m`` similarity of the unique query terms (or None);
    ``scores``: the candidate run's scores (LB1).
    """

    counts: np.ndarray
    lengths: np.ndarray
    vocabulary: np.ndarray
    sequences: Sequence[np.ndarray]
    query_sequence: np.ndarray
    term_ids: np.ndarray
    idf: np.ndarray
    qtf: np.ndarray
    similarity: np.ndarray | None = None
    scores: np.ndarray | None = None
    doc_query_similarity: np.ndarray | None = None
    #: Per document: (the largest similarity between a query term and one of the
    #: document's non-query terms, −inf when it has none; the query-term columns and the
    #: term ids of every pair reaching it). STMC2 reads them.
    max_similarity_pairs: Sequence[tuple[float, np.ndarray, np.ndarray]] | None = None
    #: relevance grades (NaN: unjudged; ORACLE) and each document's mean analysed terms per
    #: sentence (NaN: no sentence; aSL), filled in only for the axioms that read them
    grades: np.ndarray | None = None
    sentence_lengths: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(self.counts.shape[0])

    @property
    def tf(self) -> np.ndarray:
        """Relative term frequencies c(w, d) / |d|, as ir_axioms' ``term_frequency`` gives
        (0 for an empty document)."""
        lengths = self.lengths.astype(float)[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(lengths > 0, self.counts / np.maximum(lengths, 1), 0.0)


Matrix = np.ndarray


def close(a: np.ndarray, b: np.ndarray, rel: float = MARGIN) -> np.ndarray:
    """``math.isclose(a, b, rel_tol=rel)`` element-wise (no absolute tolerance)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        # numpy types element-wise results of untyped arrays as Any
        return cast(np.ndarray,
                    (a == b) | (np.abs(a - b) <= rel * np.maximum(np.abs(a), np.abs(b))))


def sign(a: np.ndarray) -> Matrix:
    return cast(np.ndarray, np.sign(a).astype(np.int8))


def greater(values: np.ndarray) -> Matrix:
    """P[i, j] = 1 when values[i] > values[j], −1 when smaller (ir_axioms' strictly_greater)."""
    v = np.asarray(values, dtype=float)
    return (v[:, None] > v[None, :]).astype(np.int8) - (v[:, None] < v[None, :]).astype(np.int8)


def less(values: np.ndarray) -> Matrix:
    return greater(values).T.copy()


def length_precondition(q: IraxQuery) -> np.ndarray:
    """LEN: the two documents' lengths (analysed terms) are within 10 % of each other."""
    return close(q.lengths[:, None], q.lengths[None, :])


def _masked(matrix: Matrix, mask: np.ndarray) -> Matrix:
    return np.where(mask, matrix, 0).astype(np.int8)


# --------------------------------------------------------------------------- term frequency


def tfc1(q: IraxQuery) -> Matrix:
    """ir_axioms' TFC1 (under LEN): the document whose query terms' relative frequencies
    sum higher, unless the two sums are within 10 %. The sum runs over the query's terms
    with repeats, as ir_axioms iterates them (a term twice in the query counts twice).
    Rennings et al.'s TFC1 (``axiom:rennings-tfc1``) instead asks every query term to be at
    least as frequent, in absolute counts, under an absolute length tolerance."""
    sums = (q.tf * q.qtf[None, :]).sum(axis=1)
    prefs = np.where(close(sums[:, None], sums[None, :]), 0, greater(sums))
    return _masked(prefs, length_precondition(q))


def tfc3(q: IraxQuery) -> Matrix:
    """TFC3 (under LEN): for each pair of equally discriminative query terms (idf within
    10 %), a document that holds both earns a point against one that holds only one of them
    with their combined count; the document with more points is preferred."""
    n = q.size
    points = np.zeros((n, n), dtype=np.int64)
    c = q.tf
    for a, b in combinations(range(c.shape[1]), 2):
        if not close(q.idf[a], q.idf[b]):
            continue
        both = (c[:, a] != 0) & (c[:, b] != 0)
        total = c[:, a] + c[:, b]
        only_a = close(c[None, :, a], total[:, None], EXACT) & (c[None, :, b] == 0)
        only_b = close(c[None, :, b], total[:, None], EXACT) & (c[None, :, a] == 0)
        points += both[:, None] & (only_a | only_b)
    return _masked(sign(points - points.T), length_precondition(q))


def m_tdc(q: IraxQuery) -> Matrix:
    """ir_axioms' modified TDC: equal query-term totals, some count differs; over the query
    term pairs of different idf (rarer term first) that are valid, the document holding more
    of the rarer term scores a point; more points wins."""
    c = q.tf
    n, m = c.shape
    sums = c.sum(axis=1)
    differ = (c[:, None, :] != c[None, :, :]).any(axis=2)
    applies = close(sums[:, None], sums[None, :], EXACT) & differ
    score = np.zeros((n, n), dtype=np.int64)
    for a, b in combinations(range(m), 2):
        if close(q.idf[a], q.idf[b], EXACT):
            continue
        if q.idf[a] < q.idf[b]:
            a, b = b, a
        swapped = (close(c[:, None, a], c[None, :, b], EXACT)
                   & close(c[:, None, b], c[None, :, a], EXACT))
        valid = swapped | (q.qtf[a] >= q.qtf[b])
        score += valid * np.sign(c[:, None, a] - c[None, :, a]).astype(np.int64)
    return _masked(sign(score), applies)


def len_m_tdc(q: IraxQuery) -> Matrix:
    return _masked(m_tdc(q), length_precondition(q))


def lnc1(q: IraxQuery) -> Matrix:
    """ir_axioms' LNC1: when every distinct query term's relative frequency is within 10 %
    in both documents (two absences count as equal), the document with fewer terms.
    Câmara & Hauff's LNC1 (``axiom:camara-lnc1``) asks for identical absolute counts instead."""
    tf = q.tf
    alike = close(tf[:, None, :], tf[None, :, :]).all(axis=2)
    return _masked(less(q.lengths), np.asarray(alike))


def tf_lnc(q: IraxQuery) -> Matrix:
    """TF-LNC: per query term, when both documents have the same number of *other* terms,
    the one with more of the term scores; more points wins."""
    others = q.lengths[:, None] - q.counts                              # (n, m)
    same = others[:, None, :] == others[None, :, :]
    tf = q.tf
    points = (same * np.sign(tf[:, None, :] - tf[None, :, :])).sum(axis=2)
    return sign(points)


# --------------------------------------------------------------------------- lower bound


def lb1(q: IraxQuery) -> Matrix:
    """LB1: of two documents with close retrieval scores (within 10 %), prefer the one that
    alone holds some query term (when only one of them does)."""
    if q.scores is None:
        raise ValueError("LB1 needs the candidates' retrieval scores")
    present = q.counts > 0
    only1 = (present.astype(np.int64) @ (~present).T.astype(np.int64)) > 0
    prefs = only1.astype(np.int8) - only1.T.astype(np.int8)
    similar = close(q.scores[:, None], q.scores[None, :])
    return _masked(prefs, similar | similar.T)


def orig(q: IraxQuery) -> Matrix:
    """ORIG: the document the candidate run scored higher (ir_axioms' baseline that keeps the
    original order); a document the run did not score is compared with none."""
    if q.scores is None:
        raise ValueError("ORIG needs the candidates' retrieval scores")
    scores = np.nan_to_num(q.scores, nan=-np.inf)
    known = np.isfinite(q.scores)
    return _masked(greater(scores), known[:, None] & known[None, :])


def oracle(q: IraxQuery) -> Matrix:
    """ORACLE: the document with the higher relevance grade; unjudged documents are
    compared with none (ir_axioms refuses them)."""
    if q.grades is None:
        raise ValueError("ORACLE needs the relevance grades")
    judged = ~np.isnan(q.grades)
    return _masked(greater(np.nan_to_num(q.grades, nan=-1.0)),
                   judged[:, None] & judged[None, :])


# --------------------------------------------------------------------------- readability


#: aSL's readable range of average sentence length, in terms (ir_axioms' defaults).
SENTENCE_LENGTH_RANGE = (12, 20)


def asl(q: IraxQuery) -> Matrix:
    """aSL (under LEN): a document whose average sentence length (analysed terms per
    sentence) lies in [12, 20] over one whose does not; a document without sentences is
    out of range."""
    if q.sentence_lengths is None:
        raise ValueError("aSL needs the documents' average sentence lengths")
    low, high = SENTENCE_LENGTH_RANGE
    with np.errstate(invalid="ignore"):
        readable = (q.sentence_lengths >= low) & (q.sentence_lengths <= high)
    return _masked(greater(readable.astype(float)), length_precondition(q))


# --------------------------------------------------------------------------- proximity


def _present(q: IraxQuery) -> np.ndarray:
    return q.counts > 0


def same_query_term_subset(q: IraxQuery) -> np.ndarray:
    """Both documents hold the same set of query terms, and at least two of them."""
    present = _present(q)
    if present.shape[1] <= 1:
        return np.zeros((q.size, q.size), dtype=bool)
    same = (present[:, None, :] == present[None, :, :]).all(axis=2)
    return cast(np.ndarray, same & (present.sum(axis=1) > 1)[:, None])


def all_query_terms_in_both(q: IraxQuery) -> np.ndarray:
    full = _present(q).all(axis=1) & (q.counts.shape[1] > 1)
    return cast(np.ndarray, full[:, None] & full[None, :])


def first_positions(q: IraxQuery) -> np.ndarray:
    """(n, m) first position of each query term in each document's sequence (−1: absent)."""
    first = np.full(q.counts.shape, -1, dtype=np.int64)
    for i, seq in enumerate(q.sequences):
        for w, term in enumerate(q.term_ids.tolist()):
            hits = np.flatnonzero(seq == term)
            if hits.size:
                first[i, w] = hits[0]
    return first


def prox1(q: IraxQuery) -> Matrix:
    """PROX1: same query-term subset; prefer the smaller average number of terms between
    the first occurrences of each pair of those query terms."""
    first = first_positions(q)
    average = np.zeros(q.size)
    for i in range(q.size):
        where = first[i][first[i] >= 0]
        pairs = list(combinations(where.tolist(), 2))
        if pairs:
            average[i] = sum(abs(x - y) - 1 for x, y in pairs) / len(pairs)
    return _masked(less(average), same_query_term_subset(q))


def prox2(q: IraxQuery) -> Matrix:
    """PROX2: same query-term subset; prefer the smaller sum of first positions."""
    first = first_positions(q)
    total = np.where(first >= 0, first, 0).sum(axis=1)
    return _masked(less(total), same_query_term_subset(q))


def phrase_position(sequence: np.ndarray, phrase: np.ndarray) -> float:
    """First position where the whole query term sequence occurs contiguously (inf: never)."""
    k = phrase.size
    if k == 0 or sequence.size < k:
        return np.inf
    windows = np.lib.stride_tricks.sliding_window_view(sequence, k)
    hits = np.flatnonzero((windows == phrase).all(axis=1))
    return float(hits[0]) if hits.size else np.inf


def prox3(q: IraxQuery) -> Matrix:
    """PROX3: same query-term subset; prefer the earlier occurrence of the whole query as a
    phrase (documents without it come last; two without it tie)."""
    where = np.array([phrase_position(s, q.query_sequence) for s in q.sequences])
    finite = np.isfinite(where)
    prefs = less(np.where(finite, where, np.inf))
    both_inf = ~finite[:, None] & ~finite[None, :]
    return _masked(np.where(both_inf, 0, prefs), same_query_term_subset(q))


def _closest(sorted_positions: np.ndarray, target: int) -> int:
    """The closest value (ties: the smaller one), as ir_axioms' ``_take_closest``."""
    k = int(np.searchsorted(sorted_positions, target, side="left"))
    if k == 0:
        return int(sorted_positions[0])
    if k == sorted_positions.size:
        return int(sorted_positions[-1])
    before, after = int(sorted_positions[k - 1]), int(sorted_positions[k])
    return after if after - target < target - before else before


def _groups(q: IraxQuery, i: int) -> list[tuple[int, int]]:
    """(min, max) of each occurrence group: an occurrence of a query term with the closest
    occurrence of every other query term."""
    seq = q.sequences[i]
    positions = [np.flatnonzero(seq == t) for t in q.term_ids.tolist()]
    out = []
    for w, own in enumerate(positions):
        others = [p for v, p in enumerate(positions) if v != w and p.size]
        for index in own.tolist():
            members = [index, *(_closest(p, index) for p in others)]
            out.append((min(members), max(members)))
    return out


def prox4(q: IraxQuery) -> Matrix:
    """PROX4: both documents hold every query term; prefer the fewer non-query terms inside
    the tightest occurrence group, then the more groups that tight."""
    full = _present(q).all(axis=1)
    gaps = np.zeros(q.size)
    count = np.zeros(q.size)
    terms = set(q.term_ids.tolist())
    for i in np.flatnonzero(full).tolist():
        seq = q.sequences[i]
        is_query = np.isin(seq, list(terms))
        inside = [int((~is_query[lo + 1:hi]).sum()) for lo, hi in _groups(q, i)]
        if inside:
            gaps[i] = min(inside)
            count[i] = inside.count(min(inside))
    by_gap = less(gaps)
    prefs = np.where(gaps[:, None] != gaps[None, :], by_gap, greater(count))
    return _masked(prefs, all_query_terms_in_both(q))


def prox5(q: IraxQuery) -> Matrix:
    """PROX5: both documents hold every query term; prefer the smaller average span of the
    occurrence groups."""
    full = _present(q).all(axis=1)
    span = np.full(q.size, np.inf)
    for i in np.flatnonzero(full).tolist():
        groups = _groups(q, i)
        if groups:
            span[i] = sum(hi - lo for lo, hi in groups) / len(groups)
    return _masked(less(span), all_query_terms_in_both(q))


# --------------------------------------------------------------------------- query aspects


def _extreme_similarity_terms(q: IraxQuery, pick: Callable[[np.ndarray], float]) -> np.ndarray:
    sim = q.similarity
    m = q.counts.shape[1]
    if sim is None or m == 0:
        return np.zeros(0, dtype=np.int64)
    off = sim.copy()
    np.fill_diagonal(off, 0.0)
    sums = off.sum(axis=1)
    target = pick(sums)
    return np.flatnonzero(sums <= target) if pick is np.min else np.flatnonzero(sums >= target)


def _all_more(q: IraxQuery, columns: np.ndarray) -> Matrix:
    if columns.size == 0:
        return np.zeros((q.size, q.size), dtype=np.int8)
    c = q.tf[:, columns]
    more = (c[:, None, :] > c[None, :, :]).all(axis=2)
    fewer = (c[:, None, :] < c[None, :, :]).all(axis=2)
    return np.asarray(more.astype(np.int8) - fewer.astype(np.int8))


def reg(q: IraxQuery) -> Matrix:
    """REG (under LEN): prefer the document with more of *every* query term least similar
    to the others (the term most at risk of being under-weighted)."""
    return _masked(_all_more(q, _extreme_similarity_terms(q, np.min)), length_precondition(q))


def anti_reg(q: IraxQuery) -> Matrix:
    """ANTI-REG (under LEN): as REG with the *most* similar query terms."""
    return _masked(_all_more(q, _extreme_similarity_terms(q, np.max)), length_precondition(q))


def approximately_equal(values: np.ndarray, margin: float = MARGIN) -> bool:
    """All values within ``margin`` of the largest in magnitude (ir_axioms' helper)."""
    if values.size == 0:
        return True
    top = float(values[np.argmax(np.abs(values))])
    if top == 0:
        return True
    lo, hi = sorted((top * (1 + margin), top * (1 - margin)))
    return bool(((values >= lo) & (values <= hi)).all())


def aspect_reg(q: IraxQuery) -> Matrix:
    """ASPECT-REG: when all query terms are equally discriminative (idf within 10 %),
    prefer a document covering some query aspect over one covering none.

    ir_axioms clusters the query terms into aspects by similarity first; since the aspects
    partition the query terms, "covers some aspect" is "holds some query term", which is
    what is computed here (the clustering cannot change the outcome).
    """
    if q.counts.shape[1] == 0 or not approximately_equal(np.unique(q.idf)):
        return np.zeros((q.size, q.size), dtype=np.int8)
    return greater(np.asarray(_present(q).any(axis=1)))


def and_(q: IraxQuery) -> Matrix:
    """AND: prefer the document holding every query term over one that does not."""
    return greater(np.asarray(_present(q).all(axis=1)))


def len_and(q: IraxQuery) -> Matrix:
    return _masked(and_(q), length_precondition(q))


def m_and(q: IraxQuery) -> Matrix:
    """M-AND: prefer the document holding more distinct query terms."""
    return greater(_present(q).sum(axis=1))


def len_m_and(q: IraxQuery) -> Matrix:
    return _masked(m_and(q), length_precondition(q))


def div(q: IraxQuery) -> Matrix:
    """DIV: prefer the document whose vocabulary overlaps the query's less (Jaccard)."""
    shared = _present(q).sum(axis=1).astype(float)
    m = q.counts.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        jaccard = np.where(shared > 0, shared / (m + q.vocabulary - shared), 0.0)
    return less(jaccard)


def len_div(q: IraxQuery) -> Matrix:
    return _masked(div(q), length_precondition(q))


# --------------------------------------------------------------------------- similarity


def stmc1(q: IraxQuery) -> Matrix:
    """ir_axioms' STMC1: prefer the document whose distinct terms are on average more
    similar to the query's distinct terms (every term, query terms included)."""
    if q.doc_query_similarity is None:
        raise ValueError("STMC1 (ir_axioms) needs document–query similarities")
    return greater(q.doc_query_similarity)


def _safe_ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is 0 (never close to anything)."""
    num = np.asarray(numerator, dtype=float)
    den = np.asarray(denominator, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den == 0, np.nan, num / np.where(den == 0, 1.0, den))


def stmc2(q: IraxQuery, margin: float = 0.2) -> Matrix:
    """ir_axioms' STMC2: take the most similar (query term q, non-query term t) pairs over
    both documents' non-query terms; prefer d1 when, for every such pair,
    |d2| / |d1| is within 20 % of tf(t, d2) / tf(q, d1) (relative frequencies) — d2 uses
    the similar term about as often as d1 uses the query term, for its length.

    Unlike our ``axiom:camara-stmc2`` (Câmara & Hauff) there is no condition on how similar the
    documents' non-query parts are. The pairs of a document pair are those of whichever
    document holds the higher maximum (both documents' on a tie), so each document's own
    maximum pairs suffice: the condition is checked per document k against every other
    document, giving row k (k as d1, its pairs) and column k (k as d2, its pairs).
    """
    pairs = q.max_similarity_pairs
    if pairs is None:
        raise ValueError("STMC2 (ir_axioms) needs the query/non-query term similarities")
    n = q.size
    lengths = q.lengths.astype(float)
    counts = [dict(zip(*np.unique(seq, return_counts=True), strict=True))
              for seq in q.sequences]
    tf_query = q.tf
    as_first = np.ones((n, n), dtype=bool)     # [k, j]: k's pairs hold with d1 = k, d2 = j
    as_second = np.ones((n, n), dtype=bool)    # [k, i]: k's pairs hold with d1 = i, d2 = k
    for k, (_, columns, term_ids) in enumerate(pairs):
        for w, t in zip(columns.tolist(), term_ids.tolist(), strict=True):
            tf_t = np.array([c.get(t, 0) for c in counts], dtype=float) \
                / np.maximum(lengths, 1)
            as_first[k] &= close(_safe_ratio(lengths, lengths[k]),
                                 _safe_ratio(tf_t, tf_query[k, w]), margin)
            as_second[k] &= close(_safe_ratio(lengths[k], lengths),
                                  _safe_ratio(tf_t[k], tf_query[:, w]), margin)
    best = np.array([p[0] for p in pairs], dtype=float)
    # first[i, j]: the condition with d1 = i, d2 = j over the pair's maximum pairs
    own, other = as_first, as_second.T
    first = np.where(best[:, None] > best[None, :], own,
                     np.where(best[:, None] < best[None, :], other, own & other))
    some_pairs = np.isfinite(np.maximum(best[:, None], best[None, :]))
    prefs = np.where(first, 1, np.where(first.T, -1, 0)).astype(np.int8)
    prefs = _masked(prefs, some_pairs)
    np.fill_diagonal(prefs, 0)
    return prefs


#: Probe suffix → (label, claim, preference-matrix function, needs).
#: needs: "similarity" (query-term similarities), "scores" (candidate scores),
#: "doc-similarity" (per-document average similarity to the query), "sentences" (average
#: sentence lengths), "grades" (relevance grades).
DEFINITIONS: dict[str, tuple[str, str, Callable[[IraxQuery], Matrix], str]] = {
    "ir-tfc1": ("TFC1 (ir_axioms)", "S(d1) > S(d2)", tfc1, ""),
    "tfc3": ("TFC3", "S(d1) > S(d2)", tfc3, ""),
    "ir-m-tdc": ("M-TDC (ir_axioms)", "S(d1) > S(d2)", m_tdc, ""),
    "len-m-tdc": ("LEN-M-TDC", "S(d1) > S(d2)", len_m_tdc, ""),
    "ir-lnc1": ("LNC1 (ir_axioms)", "S(d1) > S(d2)", lnc1, ""),
    "tf-lnc": ("TF-LNC", "S(d1) > S(d2)", tf_lnc, ""),
    "lb1": ("LB1", "S(d1) > S(d2)", lb1, "scores"),
    "prox1": ("PROX1", "S(d1) > S(d2)", prox1, ""),
    "prox2": ("PROX2", "S(d1) > S(d2)", prox2, ""),
    "prox3": ("PROX3", "S(d1) > S(d2)", prox3, ""),
    "prox4": ("PROX4", "S(d1) > S(d2)", prox4, ""),
    "prox5": ("PROX5", "S(d1) > S(d2)", prox5, ""),
    "reg": ("REG", "S(d1) > S(d2)", reg, "similarity"),
    "anti-reg": ("ANTI-REG", "S(d1) > S(d2)", anti_reg, "similarity"),
    "aspect-reg": ("ASPECT-REG", "S(d1) > S(d2)", aspect_reg, ""),
    "and": ("AND", "S(d1) > S(d2)", and_, ""),
    "len-and": ("LEN-AND", "S(d1) > S(d2)", len_and, ""),
    "m-and": ("M-AND", "S(d1) > S(d2)", m_and, ""),
    "len-m-and": ("LEN-M-AND", "S(d1) > S(d2)", len_m_and, ""),
    "div": ("DIV", "S(d1) > S(d2)", div, ""),
    "len-div": ("LEN-DIV", "S(d1) > S(d2)", len_div, ""),
    "ir-stmc1": ("STMC1 (ir_axioms)", "S(d1) > S(d2)", stmc1, "doc-similarity"),
    "ir-stmc2": ("STMC2 (ir_axioms)", "S(d1) > S(d2)", stmc2, "doc-similarity"),
    "asl": ("aSL", "S(d1) > S(d2)", asl, "sentences"),
    "orig": ("ORIG", "S(d1) > S(d2)", orig, "scores"),
    "oracle": ("ORACLE", "S(d1) > S(d2)", oracle, "grades"),
}
