"""BM25 (bm25s) over ``rerankeval.retrieval.text.tokenize`` tokens."""

from __future__ import annotations

import numpy as np

from .text import tokenize


class Bm25Retriever:
    """``scores`` gives every document's BM25 score for each query (rows: queries, columns: documents)."""

    def __init__(self, passages: list[str], *, k1: float, b: float, method: str):
        import bm25s

        self._index = bm25s.BM25(k1=k1, b=b, method=method)
        self._index.index([tokenize(text) for text in passages], show_progress=False)
        self._n_docs = len(passages)

    def scores(self, query_texts: list[str]) -> np.ndarray:
        scores = np.zeros((len(query_texts), self._n_docs), dtype=np.float64)
        for row, query in enumerate(query_texts):
            known = [token for token in tokenize(query) if token in self._index.vocab_dict]
            if known:
                scores[row] = self._index.get_scores(known)
        return scores
