"""The JSON shapes of hosted rerank APIs: how a request is written and a reply read, one class per protocol.

``cohere`` is Cohere's v2 rerank (``POST /v2/rerank``: model, query, documents, top_n -> results[index,
relevance_score]); ``rerankeval serve`` speaks it. ``jina`` is Jina's ``POST /v1/rerank`` (the same result shape,
plus token usage); ``tei`` is Hugging Face text-embeddings-inference's ``POST /rerank`` (query, texts ->
[index, score]). A reply must hold exactly one finite score per document, or it is a ``bad_response``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


class BadResponse(ValueError):
    """A reply that does not hold exactly one finite score per document."""


class RerankProtocol:
    name: str
    path: str
    results_key: str | None = "results"
    score_key: str = "relevance_score"

    def request(self, model: str, query: str, documents: Sequence[str]) -> dict[str, Any]:
        raise NotImplementedError

    def scores(self, body: Any, n_documents: int) -> np.ndarray:
        """The score of each document, in the order they were sent."""
        results = body.get(self.results_key) if self.results_key and isinstance(body, Mapping) else body
        if not isinstance(results, list):
            raise BadResponse(f"expected a list of results{f' under {self.results_key!r}' if self.results_key else ''}"
                              f", got {type(results).__name__}")
        scores = np.full(n_documents, np.nan)
        for entry in results:
            index = entry.get("index") if isinstance(entry, Mapping) else None
            score = entry.get(self.score_key) if isinstance(entry, Mapping) else None
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n_documents:
                raise BadResponse(f"result {entry!r:.80} has no valid index (0..{n_documents - 1})")
            if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
                raise BadResponse(f"result {index} has no finite {self.score_key!r}")
            if not np.isnan(scores[index]):
                raise BadResponse(f"document {index} is scored twice")
            scores[index] = float(score)
        if np.isnan(scores).any():
            raise BadResponse(f"{int(np.isnan(scores).sum())} of {n_documents} documents have no score")
        return scores

    def billed_tokens(self, body: Any) -> float | None:
        """Tokens the service says it billed, when it says so."""
        return None


class CohereV2(RerankProtocol):
    name, path = "cohere", "/v2/rerank"

    def request(self, model: str, query: str, documents: Sequence[str]) -> dict[str, Any]:
        return {"model": model, "query": query, "documents": list(documents), "top_n": len(documents)}


class Jina(RerankProtocol):
    name, path = "jina", "/v1/rerank"

    def request(self, model: str, query: str, documents: Sequence[str]) -> dict[str, Any]:
        return {"model": model, "query": query, "documents": list(documents), "top_n": len(documents),
                "return_documents": False}

    def billed_tokens(self, body: Any) -> float | None:
        usage = body.get("usage") if isinstance(body, Mapping) else None
        tokens = usage.get("total_tokens") if isinstance(usage, Mapping) else None
        return float(tokens) if isinstance(tokens, (int, float)) else None


class TextEmbeddingsInference(RerankProtocol):
    name, path, results_key, score_key = "tei", "/rerank", None, "score"

    def request(self, model: str, query: str, documents: Sequence[str]) -> dict[str, Any]:
        return {"query": query, "texts": list(documents), "raw_scores": False, "return_text": False}


PROTOCOLS: dict[str, RerankProtocol] = {p.name: p for p in (CohereV2(), Jina(), TextEmbeddingsInference())}

SERVER_TIME_HEADERS = {"compute": "x-compute-time", "queue": "x-queue-time", "inference": "x-inference-time"}
"""Response headers (milliseconds, text-embeddings-inference's convention) where a server reports its own time;
``rerankeval serve`` sends them too."""


def server_seconds(headers: Mapping[str, str], which: str = "compute") -> float | None:
    value = headers.get(SERVER_TIME_HEADERS[which])
    try:
        seconds = float(value) / 1000.0 if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None
