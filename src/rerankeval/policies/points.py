"""A sweep's settings as points of the quality-cost frontier: mean quality, its paired CI against the baseline and
its adjusted p (``stats.analysis.analyze`` asked each setting against the baseline as one decision family per sweep,
the paired inference every table of deltas uses, so the best-looking setting of many is not read at a single
setting's level), p95 latency, cost per 1k queries, skip and fallback rates, the pairs the setting needed from a model
and those the sweep needed.

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
from ..stats.analysis import Pairs, analyze
from ..stats.config import CompareConfig
from ..systems.base import FUSION_FALLBACK, SKIPPED
from .sweep import PolicyRuns

POINT_COLUMNS = ["policy", "system", "parameter", "value", "position", "quality", "delta", "low", "high", "p_adjusted",
                 "p95_ms", "cost_per_1k_queries", "model_pairs", "skip_rate", "fallback_rate", "queries",
                 "pairs_scored", "pairs_from_cache", "pairs_reused"]


def per_query_quality(run: pd.DataFrame, qrels: pd.DataFrame, query_ids: Sequence[str], measure: str,
                      no_relevant: str) -> pd.Series:
    return evaluate(run[["query_id", "doc_id", "rank", "fused_rank"]], qrels, [measure], queries=query_ids,
                    no_relevant=no_relevant)[measure]


def policy_points(policy: PolicyRuns, baseline: pd.Series, qrels: pd.DataFrame, measure: str, settings: CompareConfig,
                  *, no_relevant: str, warmup_queries: int, hourly_price: float) -> pd.DataFrame:
    """One row per setting (``POINT_COLUMNS``); ``baseline``: the baseline's per-query ``measure`` by query id. Each
    setting's interval and p are its sweep's family's (``analyze``'s ``Pairs``, under the comparison's
    ``settings``)."""
    qualities = [per_query_quality(setting.run, qrels, list(baseline.index), measure, no_relevant)
                 for setting in policy.settings]
    names = [f"setting {position}" for position in range(len(qualities))]  # no setting is named as the baseline
    per_query = pd.concat([_frame("baseline", baseline, measure)] + [
        _frame(name, values, measure) for name, values in zip(names, qualities)], ignore_index=True)
    inference = analyze(per_query, pd.DataFrame(index=baseline.index), settings,
                        Pairs([(name, "baseline") for name in names], [measure], measure, policy.label)).inference
    intervals = inference.shown
    rows = []
    for position, (setting, values) in enumerate(zip(policy.settings, qualities)):
        latency = setting.latency
        seconds = cold_seconds(timed_queries(latency, warmup_queries))
        rows.append({
            "policy": policy.label, "system": policy.sweep.system, "parameter": policy.sweep.parameter,
            "value": setting_label(setting.value), "position": position, "quality": float(values.mean()),
            "delta": float(intervals.mean[position]), "low": float(intervals.low[position]),
            "high": float(intervals.high[position]), "p_adjusted": float(inference.p_adjusted[position]),
            "p95_ms": summarise_latency(latency, warmup_queries)["p95_ms"],
            "cost_per_1k_queries": cost_per_query(seconds, hourly_price) * 1000,
            "model_pairs": sum(setting.pairs.to_dict().values()),
            "skip_rate": float((latency["mode"] == SKIPPED).mean()),
            "fallback_rate": float((latency["mode"] == FUSION_FALLBACK).mean()),
            "queries": int(len(values)), **{f"pairs_{key}": value for key, value in policy.pairs.to_dict().items()}})
    return pd.DataFrame(rows, columns=POINT_COLUMNS)


def _frame(system: str, values: pd.Series, measure: str) -> pd.DataFrame:
    return pd.DataFrame({"system": system, "query_id": values.index, measure: values.to_numpy(dtype=np.float64)})


def setting_label(value) -> str:
    """How a swept value is shown and matched (0.4, not 0.4000000000000001)."""
    return f"{value:g}" if isinstance(value, float) else str(value)
