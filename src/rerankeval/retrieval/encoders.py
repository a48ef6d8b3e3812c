"""Text encoders for dense retrieval: the protocol, the roles, and the sentence-transformers encoder.

An encoder maps texts to L2-normalised float32 vectors. ``identity`` lists everything that decides their bits (the
embedding cache's fingerprint); ``prepare`` returns the exact text the encoder reads (after any truncation), whose
hash keys the cache. Encoders must be batch-invariant: a text's vector must not depend on the other texts encoded
with it, or the cache would make results depend on what was encoded before.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..core.errors import ModelUnavailable
from ..models.resolve import resolve_model

QUERY, PASSAGE = "query", "passage"


class Encoder(Protocol):
    name: str
    identity: dict[str, Any]

    def prepare(self, text: str, role: str) -> str: ...

    def encode(self, texts: list[str], role: str) -> np.ndarray: ...


def load_sentence_transformer(model: str, revision: str | None = None, *, device: str = "cpu"):
    """A SentenceTransformer for any model reference ``rerankeval.models.resolve`` accepts."""
    from sentence_transformers import SentenceTransformer

    directory = resolve_model(model, revision).directory
    try:
        return SentenceTransformer(str(directory), device=device, local_files_only=True)
    except OSError as err:
        raise ModelUnavailable(f"sentence-transformers model {model!r} cannot be loaded from {directory} ({err}). "
                               "Fix: point retrieval.dense.model at a directory written by save_pretrained.") from err


class SentenceTransformerEncoder:
    """Any sentence-transformers model (the bundled all-MiniLM-L6-v2 by default); no query/passage prefixes.

    Each text goes through the model alone: padded batches change the last bits of a vector, which would make
    cached and fresh vectors differ, and on 2 cores one text at a time is as fast (benchmarks/bench_encoders.py
    measures passages per CPU-second by batch size)."""

    def __init__(self, model: str, revision: str | None, max_length: int | None):
        import sentence_transformers
        import torch

        resolved = resolve_model(model, revision)
        self._model = load_sentence_transformer(model, revision)
        if max_length is not None:
            self._model.max_seq_length = max_length
        self.name = resolved.reference
        self.identity = {"engine": "sentence-transformers", "engine_version": sentence_transformers.__version__,
                         "torch": torch.__version__, "model": resolved.identity,
                         "max_length": self._model.max_seq_length, "normalize": True}

    def prepare(self, text: str, role: str) -> str:
        return text  # the model truncates to max_seq_length itself (part of the identity)

    def encode(self, texts: list[str], role: str) -> np.ndarray:
        return self._model.encode(texts, batch_size=1, normalize_embeddings=True, convert_to_numpy=True,
                                  show_progress_bar=False).astype(np.float32)
