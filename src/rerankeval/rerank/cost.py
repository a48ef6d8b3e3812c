"""What quality costs: token and truncation accounting, latency by depth, cost per query (machine time, or an API's
and an LLM endpoint's prices), each system's cost record and the depth-vs-cost table of the compare stage's analysis.

Latency at a shallower depth comes from the one scoring pass at full depth: a query's model time (tokenisation and
forward) is scaled by the share of its scored tokens that lie in the top d (of its scored pairs where no token counts
exist), its fixed overhead is kept. Model time includes the replayed compute time of cache hits (``rerank.latency``),
so a run served from the pair-score cache costs what the model costs. Pure functions over the run and latency tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..eval.funnel import measure_rows, pool_measures, system_depth
from ..eval.measures import parse_measure
from ..systems.base import RERANKED
from .latency import cold_seconds, model_seconds, summarise_latency, timed_queries

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
    tokens = scored["passage_tokens"].astype("float64") + scored["query_tokens"].astype("float64")
    # A row without token counts took no model time where other rows of its query have them (a cascade's rows its
    # model did not score); in a query without any counts every pair weighs the same.
    counted = tokens.notna().groupby(scored["query_id"]).transform("any")
    weight = tokens.fillna(pd.Series(np.where(counted, 0.0, 1.0), index=tokens.index))
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
    return pd.DataFrame(rows, columns=[*quality.columns, "p95_ms", "cost_per_1k_queries"])


def pool_recall(curve_means: pd.DataFrame) -> dict[int, float]:
    """Candidate recall of the reranking pool at each depth (the same for every system); ``curve_means``: system,
    depth, measure, mean."""
    rows = curve_means[curve_means["measure"] == curve_means["depth"].map(lambda d: str(pool_measures(d)[0]))]
    return {int(depth): float(mean) for depth, mean in zip(rows["depth"], rows["mean"])}


def depth_costs(curve_means: pd.DataFrame, measure: str, runs: Mapping[str, pd.DataFrame],
                latencies: Mapping[str, pd.DataFrame], hourly_price: float, warmup_queries: int,
                scales: Mapping[str, float]) -> pd.DataFrame:
    """Each system at each evaluated depth: candidate recall, mean ``measure``, p95 latency and cost per 1k queries
    (``depth_cost_table`` over the depth curve's means), the p95 on the measured scale (``latency_scales``)."""
    quality = measure_rows(curve_means, [parse_measure(measure)])[["system", "depth", "mean"]] \
        .rename(columns={"mean": "quality"})
    quality["candidate_recall"] = quality["depth"].map(pool_recall(curve_means))
    return on_measured_scale(depth_cost_table(quality[["system", "depth", "candidate_recall", "quality"]], runs,
                                              latencies, hourly_price, warmup_queries), scales)


def latency_scales(quality_run_p95_ms: Mapping[str, float | None],
                   measured_p95_ms: Mapping[str, float | None]) -> dict[str, float]:
    """Per system: the p95 its dedicated latency measurement gave (what its verdict reads) over its quality run's
    cold p95 at the configured depth; 1.0 where either is missing or zero.

    The quality run's timings (and the sweeps', replayed from the pair-score cache) give the shape of latency over
    depth and settings: which pairs a setting scores and how long each took relative to the others. Their level is
    whatever load the machine carried when the pairs were first scored, which nothing controlled; the dedicated
    measurement (stage ``latency``) controls and records it. Scaling each system's curve by this ratio puts every
    p95 on the scale of the measurement the verdict reads, so a system has one p95 on every page and plot (the ratio
    itself is in costs.json: ``systems.<name>.latency_scale``). The ratio assumes that the latency of the queries the
    measurement times (the split's first ``serving.latency.queries``) spreads as that of all the split's queries does;
    the quality run's own p95 is over all of them. Cost stays the quality run's machine time:
    that is what a claim's paired cost saving is decided on (``stats.saving``), so a page's cost and the claim agree."""
    scales = {}
    for system, run_p95 in quality_run_p95_ms.items():
        measured = measured_p95_ms.get(system)
        scales[system] = measured / run_p95 if measured and run_p95 else 1.0
    return scales


def on_measured_scale(frame: pd.DataFrame, scales: Mapping[str, float]) -> pd.DataFrame:
    """``frame`` (a ``system`` and a ``p95_ms`` column) with each p95 scaled by its system's ``latency_scales``
    factor."""
    factor = frame["system"].map(lambda system: scales.get(system, 1.0)).astype("float64")
    return frame.assign(p95_ms=frame["p95_ms"] * factor)


def system_costs(systems: Mapping[str, Mapping[str, Any]], runs: Mapping[str, pd.DataFrame],
                 latencies: Mapping[str, pd.DataFrame], hourly_price: float, warmup_queries: int,
                 measured_p95_ms: Mapping[str, float | None]) -> dict[str, dict[str, Any]]:
    """Each system's quality-run latency percentiles, tokens, ``latency_scale`` (``latency_scales``) and cost per 1k
    queries at its configured depth: the quality run's machine time, or, where a system's config has them, an API's
    or an LLM endpoint's prices."""
    summaries = {system: summarise_latency(latencies[system], warmup_queries) for system in systems}
    scales = latency_scales({system: summary["p95_ms"] for system, summary in summaries.items()}, measured_p95_ms)
    costs = {}
    for system, config in systems.items():
        run, latency = runs[system], latencies[system]
        seconds = latency_at_depth(run, latency, system_depth(run), warmup_queries)
        machine = cost_per_query(seconds, hourly_price) * 1000
        kind = str(config.get("kind", ""))
        priced = api_cost_per_1k(config, latency) if kind == "http_rerank" else \
            llm_cost_per_1k(config, latency, machine) if kind.startswith("llm_") else machine
        costs[system] = {**summaries[system], **token_summary(run),
                         "tokens_per_s": tokens_per_second(run, latency, warmup_queries),
                         "latency_scale": scales[system], "cost_per_1k_queries": priced}
    return costs


def end_to_end_latency(latency: pd.DataFrame, timing: pd.DataFrame, warmup_queries: int,
                       scale: float) -> dict[str, Any]:
    """One system's answer latency after warm-up: p50/p95 of rerank (cold, on the measured scale: ``scale`` is its
    ``latency_scales`` factor) plus generation seconds per query, the mean generation time and the answers served
    from the generation cache; ``timing``: the generate stage's per-query ``generate_s`` and ``cache_hit``."""
    rerank = pd.Series(cold_seconds(latency).to_numpy() * scale, index=latency["query_id"])
    timed = latency.loc[latency["position"] >= warmup_queries, "query_id"]
    generate = timing.set_index("query_id")["generate_s"]
    total = (rerank + generate.reindex(rerank.index).fillna(0.0)).reindex(timed).to_numpy() * 1000
    return {"p50_ms": float(np.percentile(total, 50)) if len(total) else None,
            "p95_ms": float(np.percentile(total, 95)) if len(total) else None,
            "generate_mean_ms": float(generate.mean() * 1000) if len(generate) else None,
            "cached_answers": int(timing["cache_hit"].sum())}


def api_cost_per_1k(config: Mapping[str, Any], latency: pd.DataFrame) -> float | None:
    """Cost of 1,000 queries of an API system from its prices: searches (one per request of up to
    documents_per_search documents) and the tokens it reports billing."""
    per_search, per_token = config.get("price_per_search_usd"), config.get("price_per_million_tokens_usd")
    if per_search is None and per_token is None:
        return None
    cost = 0.0
    if per_search is not None:
        searches = latency["n_pairs"].map(lambda n: max(1, math.ceil(n / config.get("documents_per_search", 100))))
        cost += per_search * float(searches.mean())
    if per_token is not None:
        tokens = latency["timings"].map(lambda items: dict(items).get("billed_tokens"))
        if tokens.isna().any():
            return None  # the API does not report what it bills: no figure rather than a guess
        cost += per_token / 1e6 * float(tokens.mean())
    return cost * 1000


def llm_cost_per_1k(config: Mapping[str, Any], latency: pd.DataFrame, machine_cost: float) -> float:
    """An LLM reranker's cost per 1,000 queries: its tokens (per query, ``timings``) at the endpoint's prices per 1k
    tokens when it has any (a hosted API), else the machine time it took (a local endpoint)."""
    endpoint = config.get("endpoint") or {}
    prices = (float(endpoint.get("price_per_1k_input_tokens") or 0.0),
              float(endpoint.get("price_per_1k_output_tokens") or 0.0))
    if not any(prices) or latency.empty:
        return machine_cost
    timings = [dict(found) if found is not None else {} for found in latency["timings"]]
    per_query = [t.get("prompt_tokens", 0.0) / 1000 * prices[0] + t.get("completion_tokens", 0.0) / 1000 * prices[1]
                 for t in timings]
    return float(np.mean(per_query) * 1000)
