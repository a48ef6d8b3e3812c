"""Traffic-weighted means and their bootstrap CIs, beside the macro average (every query counts once).

The weighted mean is ``sum(w * x) / sum(w)``: what a metric averages to over production traffic when each evaluated
query stands for ``w`` asked ones. Its CI resamples queries exactly as the macro average's does (the same draws,
``resampling``), and each replicate is the weighted mean of the resampled queries (a ratio estimator), so the
interval reflects which queries happened to be judged, and a few heavy queries widen it. ``effective_queries``
(Kish: ``(sum w)^2 / sum w^2``) says how many equally weighted queries the weights are worth.
``tests/test_weighted.py`` simulates its coverage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .defaults import DEFAULT_CONFIDENCE, DEFAULT_N_SAMPLES, DEFAULT_SEED
from .resampling import _weight_blocks


@dataclass(frozen=True, eq=False)
class WeightedIntervals:
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    effective_queries: float


def weighted_bootstrap_ci(values: ArrayLike, weights: ArrayLike, *, n_samples: int = DEFAULT_N_SAMPLES,
                          seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE) -> WeightedIntervals:
    """Weighted mean of each column of ``values`` (queries x columns) and its percentile bootstrap CI."""
    matrix = np.asarray(values, dtype=np.float64)
    matrix = matrix[:, None] if matrix.ndim == 1 else matrix
    weight = np.asarray(weights, dtype=np.float64)
    if weight.shape != (matrix.shape[0],) or not np.all(np.isfinite(weight)) or np.any(weight < 0):
        raise ValueError(f"weights must be {matrix.shape[0]} finite numbers >= 0")
    if weight.sum() <= 0:
        raise ValueError("weights sum to 0: no query carries traffic")
    if not np.all(np.isfinite(matrix)):
        raise ValueError("values contain NaN or infinite entries")
    replicates = np.empty((n_samples, matrix.shape[1]))
    for start, counts in _weight_blocks(matrix.shape[0], n_samples, seed):
        scaled = counts * weight
        totals = scaled.sum(axis=1, keepdims=True)
        # A resample that drew only weight-0 queries has no traffic: it repeats the observed mean (rare by design).
        safe = np.where(totals > 0, totals, 1.0)
        means = (scaled @ matrix) / safe
        observed = (weight @ matrix) / weight.sum()
        replicates[start:start + len(counts)] = np.where(totals > 0, means, observed)
    tail = (1.0 - confidence) / 2.0
    return WeightedIntervals(mean=(weight @ matrix) / weight.sum(),
                             low=np.quantile(replicates, tail, axis=0), high=np.quantile(replicates, 1 - tail, axis=0),
                             effective_queries=float(weight.sum() ** 2 / np.square(weight).sum()))


def weighted_comparison(per_query: pd.DataFrame, weights: pd.Series, systems: Sequence[str], metrics: Sequence[str],
                        baseline: str, *, n_samples: int, seed: int, confidence: float) -> dict[str, Any]:
    """Weighted means of every system and metric, and weighted deltas of every challenger against ``baseline``,
    with their CIs and the macro values beside them. ``weights``: by query id (every evaluated query needs one)."""
    frames = {system: frame.set_index("query_id").sort_index() for system, frame in per_query.groupby("system")}
    query_ids = frames[baseline].index
    missing = query_ids.difference(weights.index)
    if len(missing):
        raise ValueError(f"{len(missing)} evaluated queries have no traffic weight (first: {missing[0]!r})")
    weight = weights.reindex(query_ids).to_numpy(dtype=np.float64)
    columns, deltas = [], []
    for system in systems:
        for metric in metrics:
            columns.append(frames[system][metric].reindex(query_ids).to_numpy(dtype=np.float64))
            if system != baseline:
                deltas.append((system, metric, columns[-1] - frames[baseline][metric].reindex(query_ids).to_numpy()))
    boot = {"n_samples": n_samples, "seed": seed, "confidence": confidence}
    # A measure undefined on some queries (NaN) is averaged over its domain: the queries where it is defined.
    domain = np.isfinite(np.column_stack(columns)).all(axis=1)
    means = weighted_bootstrap_ci(np.column_stack(columns)[domain], weight[domain], **boot)
    table: dict[str, dict[str, Any]] = {}
    for j, (system, metric) in enumerate((s, m) for s in systems for m in metrics):
        table.setdefault(system, {})[metric] = _entry(means, j, columns[j][domain].mean())
    comparisons = []
    if deltas:
        intervals = weighted_bootstrap_ci(np.column_stack([d for _, _, d in deltas])[domain], weight[domain], **boot)
        comparisons = [{"challenger": system, "metric": metric, **_entry(intervals, j, delta[domain].mean())}
                       for j, (system, metric, delta) in enumerate(deltas)]
    return {"queries": int(domain.sum()), "total_weight": round(float(weight[domain].sum()), 6),
            "effective_queries": round(means.effective_queries, 2),
            "zero_weight_queries": int((weight[domain] == 0).sum()),
            "systems": table, "comparisons": comparisons}


def _entry(intervals: WeightedIntervals, j: int, macro: float) -> Mapping[str, float]:
    return {"weighted": round(float(intervals.mean[j]), 6), "low": round(float(intervals.low[j]), 6),
            "high": round(float(intervals.high[j]), 6), "macro": round(float(macro), 6)}
