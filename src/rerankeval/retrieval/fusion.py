"""Top-k rankings of first-stage scores and their reciprocal rank fusion, without ranking the whole corpus.

Every ranking orders documents by score descending, ties by document column (documents are in doc-id order), so
ranks are deterministic. Only each retriever's top ``k`` is sorted; a candidate that one retriever ranks below its
top k still gets its exact rank in that retriever, counted from the score row.

Why top k suffices for RRF with ``depth`` and ``top_n``, k = max(depth, top_n): fused scores are non-zero only
inside the top ``depth`` of some retriever, and when fewer than ``top_n`` documents have a non-zero fused score,
the rest are ordered by their best single rank, and the first of them all lie within the top k of some retriever.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TopK:
    """A retriever's best documents per query, best first: ``columns`` (document indices) and their ``scores``."""

    columns: np.ndarray
    scores: np.ndarray
    row_scores: np.ndarray
    """Every document's score (n_queries x n_docs), for exact ranks beyond the top k."""

    def exact_ranks(self, row: int, columns: np.ndarray) -> np.ndarray:
        """1-based ranks of ``columns`` in query ``row``, whether or not they are in the top k."""
        scores = self.row_scores[row]
        own = scores[columns]
        higher = (scores[None, :] > own[:, None]).sum(axis=1)
        tied_before = ((scores[None, :] == own[:, None]) & (np.arange(len(scores))[None, :] < columns[:, None])).sum(1)
        return higher + tied_before + 1


def top_k(scores: np.ndarray, k: int) -> TopK:
    """The ``k`` best documents of every row by (score descending, column ascending)."""
    n_queries, n_docs = scores.shape
    k = min(k, n_docs)
    kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1:k]
    above = scores > kth
    # Among documents tied with the k-th score, the lowest columns fill the remaining places.
    tied = scores == kth
    room = k - above.sum(axis=1, keepdims=True)
    chosen = above | (tied & (np.cumsum(tied, axis=1) <= room))
    columns = np.nonzero(chosen)[1].reshape(n_queries, k)
    picked = np.take_along_axis(scores, columns, axis=1)
    order = np.lexsort((columns, -picked), axis=1)
    return TopK(np.take_along_axis(columns, order, axis=1), np.take_along_axis(picked, order, axis=1), scores)


@dataclass(frozen=True)
class Fused:
    """One query's fused top-n: document columns in fused order, fused scores, and each retriever's exact rank."""

    columns: np.ndarray
    scores: np.ndarray
    ranks: list[np.ndarray]


def rrf_top(rankings: list[TopK], row: int, *, k: int, depth: int, top_n: int,
            weights: Sequence[float] | None = None) -> Fused:
    """Reciprocal rank fusion of one query: sum over retrievers of weight / (k + rank) for ranks within ``depth``
    (weights 1 by default: plain RRF).

    Ties go to the better best single rank, then the lower column (doc id)."""
    pool = np.unique(np.concatenate([ranking.columns[row] for ranking in rankings]))
    known = []
    for ranking in rankings:
        rank = np.zeros(len(pool), dtype=np.int64)  # 0: beyond this retriever's top k
        position = np.searchsorted(pool, ranking.columns[row])
        rank[position] = np.arange(1, ranking.columns.shape[1] + 1)
        known.append(rank)
    fused = np.zeros(len(pool), dtype=np.float64)
    for weight, rank in zip(weights or [1.0] * len(known), known):
        inside = (rank >= 1) & (rank <= depth)
        fused += np.where(inside, weight / (k + rank), 0.0)
    best = np.min([np.where(rank >= 1, rank, np.iinfo(np.int64).max) for rank in known], axis=0)
    order = np.lexsort((pool, best, -fused))[:top_n]
    columns = pool[order]
    ranks = []
    for ranking, rank in zip(rankings, known):
        exact = rank[order].copy()
        missing = exact == 0
        if missing.any():
            exact[missing] = ranking.exact_ranks(row, columns[missing])
        ranks.append(exact)
    return Fused(columns, fused[order], ranks)
