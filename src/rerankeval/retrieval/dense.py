"""Dense retrieval: cosine similarity of normalised sentence-transformer embeddings; documents are encoded once."""

from __future__ import annotations

import numpy as np

from ..core.errors import ModelUnavailable
from ..models.resolve import resolve_model


def load_sentence_transformer(model: str, revision: str | None = None, *, device: str = "cpu"):
    """A SentenceTransformer for any model reference ``rerankeval.models.resolve`` accepts."""
    from sentence_transformers import SentenceTransformer

    directory = resolve_model(model, revision).directory
    try:
        return SentenceTransformer(str(directory), device=device, local_files_only=True)
    except OSError as err:
        raise ModelUnavailable(f"sentence-transformers model {model!r} cannot be loaded from {directory} ({err}). "
                               "Fix: point retrieval.dense.model at a directory written by save_pretrained.") from err


class DenseRetriever:
    def __init__(self, passages: list[str], *, model: str, revision: str | None, max_length: int, batch_size: int):
        self._encoder = load_sentence_transformer(model, revision)
        self._encoder.max_seq_length = max_length
        self._batch_size = batch_size
        self._docs = self._encode(passages)

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._encoder.encode(texts, batch_size=self._batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True).astype(np.float64)

    def scores(self, query_texts: list[str]) -> np.ndarray:
        return self._encode(query_texts) @ self._docs.T
