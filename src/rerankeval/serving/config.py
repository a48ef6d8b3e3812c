"""Settings of serving, load testing and the dedicated latency measurement (``serving`` in params.yaml)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..core.config import StrictConfig
from ..core.http import RetrySettings


class ServeConfig(StrictConfig):
    """``rerankeval serve``: one Ray Serve deployment speaking Cohere's v2 rerank JSON."""

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    max_batch_size: int = Field(32, ge=1)
    """Requests scored together: a batch is sent when it holds this many, or when its oldest waited batch_wait_s."""
    batch_wait_s: float = Field(0.005, ge=0)
    replicas: int = Field(1, ge=1)
    cpus_per_replica: float = Field(1.0, gt=0)
    score: Literal["sigmoid", "none", "clamp"] = "sigmoid"
    """What the reply's relevance_score is: sigmoid(logit) (in [0, 1], as clients of rerank APIs expect), the raw
    score, or the raw score clamped to [0, 1] (for models whose scores are probabilities already)."""
    max_documents: int = Field(1000, ge=1)
    """Documents one request may hold (Cohere's limit); a larger request is refused (413) before it holds a replica."""
    max_document_chars: int = Field(100_000, ge=1)
    """Characters one document, or the query, may hold; the model truncates far earlier, the limit bounds the work."""
    max_request_bytes: int = Field(16_000_000, ge=1)
    """Bytes one request body may hold: a larger one is refused (413) from its Content-Length, before it is read."""


class LoadTestConfig(RetrySettings):
    """``rerankeval loadtest`` and the ``loadtest`` stage. Its HTTP knobs (request_timeout_s, max_retries, backoff_s,
    max_backoff_s) are ``core.http.RetrySettings``, the policy of every outbound call."""

    enabled: bool = False
    """Off in the default demo: starting Ray Serve adds minutes (docs/serving.md, "Behind an API, served, and at
    scale")."""
    system: str = "ce_minilm_ft"
    """A learned system (served with ``rerankeval serve`` for the test) or an ``http_rerank`` system (its endpoint)."""
    concurrency: list[int] = [1, 8, 32]
    warmup_requests: int = Field(8, ge=0)
    requests: int = Field(64, ge=1)
    """Measured requests per concurrency level (each replays one query's frozen candidates)."""
    request_timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(2, ge=0)
    backoff_s: float = Field(0.1, ge=0)
    max_backoff_s: float = Field(1.0, ge=0)
    pareto_concurrency: int = 8
    """The concurrency whose p95 goes on the Pareto plot and, when the test ran, into the verdict's latency check."""
    parity_tolerance: float = Field(1e-4, ge=0)
    """Served parity: a served learned system's reply scores may differ from the same model's in-process scores (through
    ``serve.score``) by at most this on the measured requests; beyond it the load test says the endpoint serves
    another model (``serving.loadtest.score_parity``)."""

    @field_validator("concurrency")
    @classmethod
    def _positive(cls, levels: list[int]) -> list[int]:
        if not levels or min(levels) < 1 or levels != sorted(set(levels)):
            raise ValueError(f"expected increasing positive levels, e.g. [1, 8, 32]; got {levels}")
        return levels

    @model_validator(mode="after")
    def _pareto_level_is_tested(self) -> "LoadTestConfig":
        if self.pareto_concurrency not in self.concurrency:
            raise ValueError(f"pareto_concurrency {self.pareto_concurrency} is not among the levels {self.concurrency}")
        return self


class LatencyConfig(StrictConfig):
    """The ``latency`` stage: each system's per-query latency measured on its own, in-process, warmed up and
    repeated."""

    queries: int = Field(30, ge=1)
    """Queries of the evaluated split timed (the first ones by query id; all when there are fewer)."""
    warmup_queries: int = Field(3, ge=0)
    repeats: int = Field(3, ge=1)
    """Each query is timed this many times (rounds over all queries, so a burst of load hits every query alike)."""
    max_other_cpus: float = Field(0.5, ge=0)
    """CPUs' worth of work by other processes during the verdict's round above which its figure is not trusted: an
    overrun measured then makes the latency check INCONCLUSIVE, never REJECT."""


class ServingConfig(StrictConfig):
    serve: ServeConfig = ServeConfig()
    loadtest: LoadTestConfig = LoadTestConfig()
    latency: LatencyConfig = LatencyConfig()
