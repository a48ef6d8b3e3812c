"""Measures of the candidate list itself, before any reranking: CandidateRecall and Coverage.

Their input kind is ``candidate_order``: each query's grades in the run's original candidate
order (its ``fused_rank`` column), so a reranker cannot change them.
"""

from __future__ import annotations

import numpy as np

from .base import Measure
from .ranking import RankedLists, ratio, top


def candidate_input(matrix) -> RankedLists:
    if matrix.candidate_grades is None:
        raise ValueError("this GradeMatrix was built without candidate_order; CandidateRecall and Coverage need it")
    return RankedLists(matrix.candidate_grades, matrix)


def candidate_recall(m: Measure, candidates: RankedLists) -> np.ndarray:
    return (top(candidates.grades, m.cutoff) >= m.rel).any(axis=1).astype(np.float64)


def coverage(m: Measure, candidates: RankedLists) -> np.ndarray:
    found = np.count_nonzero(top(candidates.grades, m.cutoff) >= m.rel, axis=1)
    return ratio(found, candidates.n_judged(m.rel))
