"""The similarity MMR selects with under params ``rag.select.similarity: dense``: the cosine of the frozen dense
embeddings of the pool passages (the token-set one is ``rerankeval.rag.select.token_similarity``)."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import ConfigError
from ..retrieval.config import RetrievalConfig
from .passages import Passages
from .select import Similarity


def dense_similarity(passages: Passages, doc_ids: list[str], retrieval: RetrievalConfig,
                     candidates_path: str | Path) -> Similarity:
    """Cosine of the frozen dense embeddings of the pool passages: the model the freeze stage used (recorded in the
    candidates' metadata), read from the embedding cache (encoded only if the cache no longer holds them)."""
    from ..core.io import table_metadata
    from ..retrieval.dense import DenseRetriever
    from ..retrieval.encoders import PASSAGE

    if "dense" not in retrieval.retrievers:
        raise ConfigError(f"rag.select.similarity: dense is the cosine of the hybrid source's dense embeddings, but "
                          f"retrieval.source is {retrieval.source!r}, which encodes nothing. Fix: "
                          "rag.select.similarity: tokens, or retrieval=hybrid.")
    model = table_metadata(candidates_path).get("dense", {}).get("model", retrieval.dense.model)
    retriever = DenseRetriever([], model=model, revision=retrieval.dense.revision,
                               max_length=retrieval.dense.max_length, batch_size=retrieval.dense.batch_size)
    vectors = retriever.embed([passages.text[d] for d in doc_ids], PASSAGE)
    row = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    return lambda a, b: float(vectors[row[a]].astype("float64") @ vectors[row[b]].astype("float64"))
