"""The ranking measures: trec_eval's families (and DCG, Judged), on each query's grades in rank order.

Their input kind is ``ranking``: a RankedLists over the GradeMatrix's grades, read row by row
(one row per query, rank 1 first). Negative grades follow trec_eval: they gain nothing and
are never relevant; ``bpref`` and judged_only (trec_eval -J) treat them as unjudged, as
trec_eval does with a negative judgment ("in the pool but not judged"). Judged counts every
document of the qrels as judged, as ir_measures' Judged does.
"""

from __future__ import annotations

import numpy as np

from .base import Measure

# 2 ** 1024 overflows float64.
_MAX_EXP_GRADE = 1023


def ratio(numerator, denominator) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (no relevant document, empty list)."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.broadcast_to(np.asarray(denominator, dtype=np.float64), numerator.shape)
    return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)


def top(matrix: np.ndarray, cutoff: int | None) -> np.ndarray:
    return matrix if cutoff is None else matrix[:, :cutoff]


def _gain(grades: np.ndarray, gain: str) -> np.ndarray:
    """Gain of each grade; non-positive grades (and the sentinels, which are negative) gain 0."""
    positive = np.maximum(grades, 0).astype(np.float64)
    return np.exp2(positive) - 1.0 if gain == "exp" else positive


def _discount(length: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, length + 2))


class RankedLists:
    """Per-query grades in one order (one row per query), with what several measures share, cached.

    ``grades`` uses the GradeMatrix sentinels: ``pad`` past the end of a list, ``unjudged`` for
    a document absent from the qrels. ``matrix`` gives the judgments (for recall bases and the
    ideal ordering) and the query ids.
    """

    def __init__(self, grades: np.ndarray, matrix):
        self.grades = grades
        self.matrix = matrix
        self.n = len(matrix.query_ids)
        self.pad = matrix.pad
        self._cache: dict[tuple, np.ndarray] = {}

    def cached(self, key: tuple, compute) -> np.ndarray:
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def lists(self, judged_only: bool) -> np.ndarray:
        """The grades, or the condensed lists: documents without a grade >= 0 removed, later ones moved up."""
        if not judged_only:
            return self.grades
        return self.cached(("condensed",), self._condensed)

    def _condensed(self) -> np.ndarray:
        keep = self.grades >= 0
        rows, cols = np.nonzero(keep)
        condensed = np.full_like(self.grades, self.pad)
        condensed[rows, (np.cumsum(keep, axis=1) - 1)[rows, cols]] = self.grades[rows, cols]
        return condensed

    def lengths(self, judged_only: bool) -> np.ndarray:
        return self.cached(("lengths", judged_only),
                           lambda: np.count_nonzero(self.lists(judged_only) != self.pad, axis=1))

    def relevant(self, rel: int, judged_only: bool) -> np.ndarray:
        # rel >= 1 while both sentinels are negative, so padding and unjudged never count.
        return self.cached(("relevant", rel, judged_only), lambda: self.lists(judged_only) >= rel)

    def n_judged(self, low: int, high: int | None = None) -> np.ndarray:
        """Per query, the judgments with low <= grade (< high)."""
        def compute():
            grades = self.matrix.judged_grades
            keep = grades >= low if high is None else (grades >= low) & (grades < high)
            return np.bincount(self.matrix.judged_rows[keep], minlength=self.n)

        return self.cached(("n_judged", low, high), compute)

    def ideal_ranks(self) -> np.ndarray:
        """0-based position of each judgment in its query's ideal ordering."""

        def compute():
            rows = self.matrix.judged_rows
            starts = np.searchsorted(rows, np.arange(self.n))
            return np.arange(len(rows)) - starts[rows]

        return self.cached(("ideal_ranks",), compute)

    def gains(self, grades: np.ndarray, gain: str) -> np.ndarray:
        """Gains of a grade matrix through a lookup table indexed by the grades' bit pattern."""
        unsigned = np.dtype(f"u{grades.dtype.itemsize}")

        def table():
            judged = self.matrix.judged_grades
            if gain == "exp" and len(judged) and judged.max() > _MAX_EXP_GRADE:
                raise ValueError(f"gain=exp overflows for grades above {_MAX_EXP_GRADE}")
            every_pattern = np.arange(2 ** (8 * grades.dtype.itemsize)).astype(unsigned).view(grades.dtype)
            with np.errstate(over="ignore"):  # int16 patterns beyond the grades in use overflow exp2
                return _gain(every_pattern, gain)

        return self.cached(("gain_table", gain, grades.dtype.str), table)[grades.view(unsigned)]

    def dcg(self, grades: np.ndarray, cutoff: int | None, gain: str) -> np.ndarray:
        head = top(grades, cutoff)
        return self.gains(head, gain) @ _discount(head.shape[1])

    def ideal_dcg(self, cutoff: int | None, gain: str, idcg: str) -> np.ndarray:
        if idcg == "candidates":
            ideal = self.cached(("sorted",), lambda: np.sort(self.grades, axis=1)[:, ::-1])
            return self.dcg(ideal, cutoff, gain)
        ranks = self.ideal_ranks()
        within = ranks < cutoff if cutoff is not None else np.ones(len(ranks), dtype=bool)
        weights = _gain(self.matrix.judged_grades[within], gain) / np.log2(ranks[within] + 2)
        return np.bincount(self.matrix.judged_rows[within], weights=weights, minlength=self.n)


def ranking_input(matrix) -> RankedLists:
    return RankedLists(matrix.grades, matrix)


def _found(m: Measure, lists: RankedLists) -> np.ndarray:
    return np.count_nonzero(top(lists.relevant(m.rel, m.judged_only), m.cutoff), axis=1)


def success(m: Measure, lists: RankedLists) -> np.ndarray:
    return top(lists.relevant(m.rel, m.judged_only), m.cutoff).any(axis=1).astype(np.float64)


def precision(m: Measure, lists: RankedLists) -> np.ndarray:
    # trec_eval divides by k even when the list is shorter; without cutoff P is set precision.
    return ratio(_found(m, lists), m.cutoff if m.cutoff is not None else lists.lengths(m.judged_only))


def recall(m: Measure, lists: RankedLists) -> np.ndarray:
    return ratio(_found(m, lists), lists.n_judged(m.rel))


def r_precision(m: Measure, lists: RankedLists) -> np.ndarray:
    relevant = lists.relevant(m.rel, m.judged_only)
    n_relevant = lists.n_judged(m.rel)
    within_r = np.arange(relevant.shape[1]) < n_relevant[:, None]
    return ratio(np.count_nonzero(relevant & within_r, axis=1), n_relevant)


def reciprocal_rank(m: Measure, lists: RankedLists) -> np.ndarray:
    head = top(lists.relevant(m.rel, m.judged_only), m.cutoff)
    first = head.argmax(axis=1)
    found = head[np.arange(lists.n), first]
    return np.where(found, 1.0 / (first + 1), 0.0)


def average_precision(m: Measure, lists: RankedLists) -> np.ndarray:
    head = top(lists.relevant(m.rel, m.judged_only), m.cutoff)
    found_so_far = np.cumsum(head, axis=1, dtype=np.int32)
    precision_sum = (found_so_far * head) @ (1.0 / np.arange(1, head.shape[1] + 1))
    # Normalised by all relevant documents, not min(k, R), as trec_eval's map_cut.
    return ratio(precision_sum, lists.n_judged(m.rel))


def dcg(m: Measure, lists: RankedLists) -> np.ndarray:
    return lists.dcg(lists.lists(m.judged_only), m.cutoff, m.gain)


def ndcg(m: Measure, lists: RankedLists) -> np.ndarray:
    return ratio(dcg(m, lists), lists.ideal_dcg(m.cutoff, m.gain, m.idcg))


def bpref(m: Measure, lists: RankedLists) -> np.ndarray:
    grades = lists.grades
    relevant = lists.relevant(m.rel, False)
    # Judged non-relevant: 0 <= grade < rel; a negative grade is skipped, as trec_eval does.
    nonrelevant = (grades >= 0) & ~relevant
    nonrelevant_above = np.cumsum(nonrelevant, axis=1, dtype=np.int32) - nonrelevant
    n_relevant = lists.n_judged(m.rel)
    n_nonrelevant = lists.n_judged(0, m.rel)
    # Each relevant document scores 1 - min(nonrel above, R) / min(N, R).
    penalty = ratio(
        np.minimum(nonrelevant_above, n_relevant[:, None]),
        np.minimum(n_nonrelevant, n_relevant)[:, None],
    )
    return ratio(np.sum(np.where(relevant, 1.0 - penalty, 0.0), axis=1), n_relevant)


def judged(m: Measure, lists: RankedLists) -> np.ndarray:
    unjudged = lists.matrix.unjudged
    found = np.count_nonzero(top(lists.grades, m.cutoff) > unjudged, axis=1)
    shown = lists.lengths(False)
    return ratio(found, shown if m.cutoff is None else np.minimum(shown, m.cutoff))


def _set_counts(m: Measure, lists: RankedLists) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(relevant retrieved, retrieved, relevant) per query: what trec_eval's set measures read."""
    return _found(m, lists), lists.lengths(m.judged_only), lists.n_judged(m.rel)


def set_f(m: Measure, lists: RankedLists) -> np.ndarray:
    # trec_eval's set_F with its default beta 1: 2PR / (P + R), 0 when nothing relevant was retrieved.
    found, retrieved, relevant = _set_counts(m, lists)
    precision, recall = ratio(found, retrieved), ratio(found, relevant)
    return ratio(2.0 * precision * recall, precision + recall)


def set_ap(m: Measure, lists: RankedLists) -> np.ndarray:
    # trec_eval's set_map: set precision times set recall.
    found, retrieved, relevant = _set_counts(m, lists)
    return ratio(found, retrieved) * ratio(found, relevant)


def unjudged(m: Measure, lists: RankedLists) -> np.ndarray:
    # trec_eval 10's unj_k: documents in the top k without a grade >= 0, over k (a negative grade is unjudged, and a
    # list shorter than k still divides by k), unlike Judged@k, which divides by the documents shown.
    head = top(lists.grades, m.cutoff)
    found = np.count_nonzero((head < 0) & (head != lists.pad), axis=1)
    return ratio(found, m.cutoff if m.cutoff is not None else lists.lengths(False))
