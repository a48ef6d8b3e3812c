"""A sweep's settings as points of the quality-cost frontier: mean quality, its paired bootstrap CI against the
baseline, p95 latency, cost per 1k queries, skip and fallback rates, the pairs the setting needed from a model and
those the sweep needed.

Every cost is the setting's own, from its per-query latency table: cold latency (measured wall time plus the
replayed compute time of cache hits, ``rerank.latency``), so a point served from the cache costs what its model
calls cost, and a setting that calls no model (a blend at weight 0, a cascade without a second stage, a routed
policy that skips every query: those composites do not call what they do not use) needs no model pair and costs
only its own combination and first-stage columns. Quality is evaluated on the same queries as the baseline.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..eval.engine import evaluate
from ..rerank.cost import cost_per_query
from ..rerank.latency import cold_seconds, summarise_latency, timed_queries
from ..stats.resampling import bootstrap_ci
from ..systems.base import FUSION_FALLBACK, SKIPPED
from .sweep import PolicyRuns

POINT_COLUMNS = ["policy", "system", "parameter", "value", "position", "quality", "delta", "low", "high", "p95_ms",
                 "cost_per_1k_queries", "model_pairs", "skip_rate", "fallback_rate", "queries", "pairs_scored",
                 "pairs_from_cache", "pairs_reused"]


def per_query_quality(run: pd.DataFrame, qrels: pd.DataFrame, query_ids: Sequence[str], measure: str,
                      no_relevant: str) -> pd.Series:
    return evaluate(run[["query_id", "doc_id", "rank", "fused_rank"]], qrels, [measure], queries=query_ids,
                    no_relevant=no_relevant)[measure]


def policy_points(policy: PolicyRuns, baseline: pd.Series, qrels: pd.DataFrame, measure: str, *, no_relevant: str,
                  warmup_queries: int, hourly_price: float, n_samples: int, seed: int, confidence: float,
                  method: str) -> pd.DataFrame:
    """One row per setting (``POINT_COLUMNS``); ``baseline``: the baseline's per-query ``measure`` by query id."""
    rows = []
    for position, setting in enumerate(policy.settings):
        values = per_query_quality(setting.run, qrels, list(baseline.index), measure, no_relevant)
        deltas = (values - baseline.reindex(values.index)).to_numpy(dtype=np.float64)
        interval = bootstrap_ci(deltas, n_samples=n_samples, seed=seed, confidence=confidence, method=method)
        latency = setting.latency
        seconds = cold_seconds(timed_queries(latency, warmup_queries))
        rows.append({
            "policy": policy.label, "system": policy.sweep.system, "parameter": policy.sweep.parameter,
            "value": setting_label(setting.value), "position": position, "quality": float(values.mean()),
            "delta": float(interval.mean[0]), "low": float(interval.low[0]), "high": float(interval.high[0]),
            "p95_ms": summarise_latency(latency, warmup_queries)["p95_ms"],
            "cost_per_1k_queries": cost_per_query(seconds, hourly_price) * 1000,
            "model_pairs": sum(setting.pairs.to_dict().values()),
            "skip_rate": float((latency["mode"] == SKIPPED).mean()),
            "fallback_rate": float((latency["mode"] == FUSION_FALLBACK).mean()),
            "queries": int(len(values)), **{f"pairs_{key}": value for key, value in policy.pairs.to_dict().items()}})
    return pd.DataFrame(rows, columns=POINT_COLUMNS)


def setting_label(value) -> str:
    """How a swept value is shown and matched (0.4, not 0.4000000000000001)."""
    return f"{value:g}" if isinstance(value, float) else str(value)
