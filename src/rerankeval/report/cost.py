"""What quality costs: token and truncation accounting, latency by depth, cost per query and the Pareto frontier.

Latency at a shallower depth comes from the one scoring pass at full depth: a query's model time (tokenisation and
forward) is scaled by the share of its scored tokens that lie in the top d (pairs where no token counts exist), its
fixed overhead is kept. Model time includes the replayed compute time of cache hits (``rerank.latency``), so a
run served from the pair-score cache costs what the model costs. Pure functions over the run and latency tables.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..rerank.latency import cold_seconds, model_seconds, timed_queries
from ..systems.base import RERANKED

SECONDS_PER_HOUR = 3600.0


def token_summary(run: pd.DataFrame) -> dict[str, float | None]:
    """Pair-token percentiles (query + passage, before truncation) and the truncation rate of the scored pairs."""
    scored = run[(run["mode"] == RERANKED) & run["passage_tokens"].notna()]
    if scored.empty:
        return {"pairs": 0, "pair_tokens_p50": None, "pair_tokens_p95": None, "truncation_rate": None}
    tokens = (scored["query_tokens"] + scored["passage_tokens"]).to_numpy(dtype=np.float64)
    return {"pairs": int(len(scored)), "pair_tokens_p50": float(np.percentile(tokens, 50)),
            "pair_tokens_p95": float(np.percentile(tokens, 95)),
            "truncation_rate": float(scored["truncated"].astype(bool).mean())}


def tokens_per_second(run: pd.DataFrame, latency: pd.DataFrame, warmup_queries: int) -> float | None:
    """Pair tokens (before truncation) per second of model time, over the timed queries."""
    timed = timed_queries(latency, warmup_queries)
    model_s = float(model_seconds(timed).sum())
    scored = run[run["query_id"].isin(timed["query_id"]) & run["passage_tokens"].notna()]
    if model_s <= 0 or scored.empty:
        return None
    return float((scored["query_tokens"] + scored["passage_tokens"]).sum() / model_s)


def latency_at_depth(run: pd.DataFrame, latency: pd.DataFrame, depth: int, warmup_queries: int) -> pd.Series:
    """Estimated seconds per query had only the top ``depth`` candidates been scored (timed queries only)."""
    timed = timed_queries(latency, warmup_queries).set_index("query_id")
    scored = run[run["score"].notna()]
    weight = scored["passage_tokens"].astype("float64") + scored["query_tokens"].astype("float64")
    weight = weight.where(weight.notna(), 1.0)  # no token counts: every pair weighs the same
    total = weight.groupby(scored["query_id"]).sum()
    head = weight[scored["fused_rank"] <= depth].groupby(scored.loc[scored["fused_rank"] <= depth, "query_id"]).sum()
    share = (head.reindex(total.index, fill_value=0.0) / total).reindex(timed.index).fillna(0.0)
    model_s = model_seconds(timed)
    return (cold_seconds(timed) - model_s) + model_s * share


def cost_per_query(seconds: pd.Series, hourly_price: float) -> float:
    """Mean machine cost of one query at ``hourly_price`` per machine hour (one query at a time)."""
    return float(seconds.mean() * hourly_price / SECONDS_PER_HOUR) if len(seconds) else float("nan")


def depth_cost_table(quality: pd.DataFrame, runs: Mapping[str, pd.DataFrame], latencies: Mapping[str, pd.DataFrame],
                     hourly_price: float, warmup_queries: int) -> pd.DataFrame:
    """``quality``: system, depth, candidate_recall, quality (means). Adds p95 latency (ms) and cost per 1k queries."""
    rows = []
    for row in quality.itertuples(index=False):
        seconds = latency_at_depth(runs[row.system], latencies[row.system], int(row.depth), warmup_queries)
        rows.append({**row._asdict(),
                     "p95_ms": float(np.percentile(seconds, 95) * 1000) if len(seconds) else float("nan"),
                     "cost_per_1k_queries": cost_per_query(seconds, hourly_price) * 1000})
    return pd.DataFrame(rows)


def pareto_front(points: pd.DataFrame, quality: str = "quality", latency: str = "p95_ms") -> pd.Series:
    """True where no other point is at least as good on both axes and strictly better on one."""
    values = points[[quality, latency]].to_numpy(dtype=np.float64)
    better_or_equal = (values[None, :, 0] >= values[:, None, 0]) & (values[None, :, 1] <= values[:, None, 1])
    strictly = (values[None, :, 0] > values[:, None, 0]) | (values[None, :, 1] < values[:, None, 1])
    dominated = (better_or_equal & strictly).any(axis=1)
    return pd.Series(~dominated, index=points.index)
