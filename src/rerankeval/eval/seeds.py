"""Per-query measures of systems trained with several seeds: each seed's, and their mean over seeds per query.

A system built on a seed set (``training.seeds``) is evaluated once per training seed; what every later number
(metrics.json, each Δ, each slice) reads is the mean over seeds per query, so a lucky or unlucky seed does not stand
for the model. ``stats.seeds`` turns the per-seed values into the comparison's seed-aware interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from .funnel import per_query_metrics
from .measures import Measure

SEED = "seed"


def per_seed_metrics(seed_runs: Mapping[str, Mapping[int, pd.DataFrame]], qrels: pd.DataFrame,
                     queries: Sequence[str], measures: Sequence[Measure], oracle_measures: Sequence[Measure], *,
                     no_relevant: str, like: pd.DataFrame) -> pd.DataFrame:
    """One row per (system, seed, query) of ``per_query_metrics``' columns, a ``seed`` column after ``system``;
    no seeded system gives ``like``'s columns (a per_query table) with no rows, so the file keeps one schema."""
    frames = []
    for system, runs in seed_runs.items():
        for seed, run in runs.items():
            values = per_query_metrics({system: run}, qrels, queries, measures, oracle_measures,
                                       no_relevant=no_relevant)
            values.insert(1, SEED, seed)
            frames.append(values)
    if not frames:
        empty = like.iloc[0:0].copy()
        empty.insert(1, SEED, pd.Series(dtype="int64"))
        return empty
    return pd.concat(frames, ignore_index=True)


def with_seed_means(per_query: pd.DataFrame, per_seed: pd.DataFrame) -> pd.DataFrame:
    """``per_query`` with each seeded system's measures replaced by their mean over seeds per query (a measure
    undefined on a query stays undefined); rows, columns and order unchanged."""
    if per_seed.empty:
        return per_query
    measures = [column for column in per_seed.columns if column not in ("system", SEED, "query_id")]
    means = per_seed.groupby(["system", "query_id"], sort=False)[measures].mean()
    keys = pd.MultiIndex.from_frame(per_query[["system", "query_id"]])
    seeded = keys.isin(means.index)
    averaged = per_query.copy()
    averaged.loc[seeded, measures] = means.reindex(keys[seeded]).to_numpy()
    return averaged
