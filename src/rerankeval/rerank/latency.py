"""Latency accounting of a rerank run: one row per query, in the order the queries were processed.

Three clocks per query: ``wall_s`` (what this run took, scoring and assembly), ``compute_s`` (the system's own
computation this run) and ``replayed_s`` (the compute time of cache hits, as measured when they were scored).
Latency as a user would see it with nothing cached is ``wall_s + replayed_s`` (``cold_seconds``); model time is
``compute_s + replayed_s`` (``model_seconds``). ``timings`` breaks ``compute_s`` down by the system's components.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core.errors import is_timeout
from ..systems.base import FUSION_FALLBACK, SKIPPED

LATENCY_SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("position", pa.int32()),
        ("mode", pa.string()),
        ("reason", pa.string()),
        ("n_pairs", pa.int32()),
        ("cache_hits", pa.int32()),
        ("wall_s", pa.float64()),
        ("compute_s", pa.float64()),
        ("replayed_s", pa.float64()),
        ("sort_s", pa.float64()),
        ("timings", pa.map_(pa.string(), pa.float64())),
    ]
)


def latency_table(latency: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(latency[LATENCY_SCHEMA.names], schema=LATENCY_SCHEMA, preserve_index=False)


def model_seconds(latency: pd.DataFrame) -> pd.Series:
    """Per-query model time: this run's computation plus the replayed compute time of cache hits."""
    return latency["compute_s"] + latency["replayed_s"]


def cold_seconds(latency: pd.DataFrame) -> pd.Series:
    """Per-query latency as if nothing were cached: measured wall time plus the replayed compute time of cache hits."""
    return latency["wall_s"] + latency["replayed_s"]


def timed_queries(latency: pd.DataFrame, warmup_queries: int) -> pd.DataFrame:
    """The queries whose latency counts: all after the first ``warmup_queries`` processed, degraded ones included
    (a timed-out query cost its time until the deadline)."""
    return latency[latency["position"] >= warmup_queries]


def summarise_latency(latency: pd.DataFrame, warmup_queries: int) -> dict[str, float | int | None]:
    """Per-query latency percentiles (ms) after warm-up, throughput, fallbacks and cache hits of one system.

    Percentiles are of the cold latency (see ``cold_seconds``), so a rerun served from the cache reports what the
    model costs; ``measured_p95_ms`` is what this run actually took."""
    timed = timed_queries(latency, warmup_queries)
    seconds = cold_seconds(timed).to_numpy()

    def percentile(q: float) -> float | None:
        return float(np.percentile(seconds, q) * 1000) if len(seconds) else None

    return {
        "queries": int(len(latency)),
        "fallbacks": int((latency["mode"] == FUSION_FALLBACK).sum()),
        "timeouts": int(((latency["mode"] == FUSION_FALLBACK) & latency["reason"].map(is_timeout)).sum()),
        "skipped": int((latency["mode"] == SKIPPED).sum()),
        "cache_hits": int(latency["cache_hits"].sum()),
        "p50_ms": percentile(50),
        "p95_ms": percentile(95),
        "p99_ms": percentile(99),
        "pairs_per_s": float(timed["n_pairs"].sum() / seconds.sum()) if seconds.sum() > 0 else None,
        "measured_p95_ms": float(np.percentile(timed["wall_s"], 95) * 1000) if len(timed) else None,
    }
