"""The ``evaluation`` block of params.yaml, typed (a measure name in any setting: ``measure_names``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..core.config import StrictConfig
from .measure_names import MeasureName


class EvaluationConfig(StrictConfig):
    measures: list[MeasureName]
    oracle_measures: list[MeasureName] = []
    depths: list[int] = []
    depth_measures: list[MeasureName] = []
    no_relevant: Literal["drop", "zero"] = "drop"
    guardrails: list[MeasureName] = ["ACLViolation@10", "Stale@5", "StaleFirst@10"]
    """Guardrail measures (``eval.measures.guardrails``), computed for every system when the collection carries the
    labels they read (documents' acl for ACLViolation; validity for Stale and StaleFirst), else left out."""
    hourly_price_usd: float = Field(ge=0)
    """Machine price for cost per query (one query at a time)."""
    warmup_queries: int = Field(2, ge=0)
    """The first queries a system processes are left out of its latency percentiles (model warm-up)."""
    explorer_candidates: int = Field(30, ge=1)
    """The site's query explorer shows each query's top this many candidates (of the fused order and of every system
    under test; relevant ones always), at most the deepest system depth: enough to see what moved, small enough to
    load fast."""
