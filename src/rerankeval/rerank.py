"""The rerank driver: score each query's top-``depth`` candidates, order them, and never emit a partial order.

A reranker only permutes its candidates. Candidates beyond ``depth`` keep their fused order after the reranked head.
A query whose scoring raises, returns bad scores or misses its deadline falls back to the fused order
(mode FUSION_FALLBACK, with the reason). The output is checked to be a permutation of the input per query.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from .systems import QueryCandidates, System

TIE_BREAK = "score descending, then fused rank ascending, then doc id ascending"
RERANKED, FUSED_TAIL, FUSION_FALLBACK = "RERANKED", "FUSED_TAIL", "FUSION_FALLBACK"

RUN_SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("doc_id", pa.string()),
        ("score", pa.float64()),
        ("rank", pa.int32()),
        ("fused_rank", pa.int32()),
        ("mode", pa.string()),
        ("degraded_reason", pa.string()),
        ("query_tokens", pa.int32()),
        ("passage_tokens", pa.int32()),
        ("truncated", pa.bool_()),
    ]
)
LATENCY_SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("warmup", pa.bool_()),
        ("mode", pa.string()),
        ("n_pairs", pa.int32()),
        ("cache_hits", pa.int32()),
        ("replayed_s", pa.float64()),
        ("total_s", pa.float64()),
        ("tokenize_s", pa.float64()),
        ("forward_s", pa.float64()),
        ("sort_s", pa.float64()),
    ]
)
PAIR_STATS = ("query_tokens", "passage_tokens", "truncated")


class PermutationError(AssertionError):
    """A run is not a permutation of its candidates: a bug, never a result."""


@dataclass(frozen=True)
class RerankSettings:
    depth: int
    deadline_s: float | None = None
    warmup_queries: int = 2

    def __post_init__(self):
        if self.depth < 1:
            raise ValueError(f"depth must be >= 1, got {self.depth}")


def order_head(scores: np.ndarray, fused_rank: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
    """Indices that sort a query's scored head by the tie-break rule (NaN scores sort last)."""
    keyed = np.where(np.isnan(scores), -np.inf, scores)
    return np.lexsort((doc_ids, fused_rank, -keyed))


def _validated_scores(scored_scores: np.ndarray, n: int) -> np.ndarray:
    scores = np.asarray(scored_scores, dtype=np.float64)
    if scores.shape != (n,):
        raise ValueError(f"system returned {scores.shape[0] if scores.ndim else 'a scalar'} scores for {n} candidates")
    if np.isnan(scores).any():
        raise ValueError("system returned NaN scores")
    return scores


def rerank(candidates: pd.DataFrame, query_texts: dict[str, str], system: System,
           settings: RerankSettings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rerank every query of ``candidates``; return (run, latency) frames."""
    candidates = candidates.sort_values(["query_id", "fused_rank"], kind="stable")
    run_parts, latency_rows = [], []
    for position, (query_id, frame) in enumerate(candidates.groupby("query_id", sort=True)):
        frame = frame.reset_index(drop=True)
        head = frame.iloc[: settings.depth]
        started = time.perf_counter()
        deadline = started + settings.deadline_s if settings.deadline_s else None
        reason, scored = None, None
        try:
            scored = system.score(QueryCandidates(query_id, query_texts[query_id], head), deadline)
            scores = _validated_scores(scored.scores, len(head))
            if deadline is not None and time.perf_counter() > deadline:
                reason = f"deadline {settings.deadline_s:g}s exceeded ({time.perf_counter() - started:.3f}s)"
        except Exception as err:  # any failure of a system degrades the query, never the run
            reason = f"{type(err).__name__}: {err}"
        sort_started = time.perf_counter()
        out = frame[["query_id", "doc_id", "fused_rank"]].copy()
        out["score"] = np.nan
        out["degraded_reason"] = None
        for column in PAIR_STATS:
            out[column] = None
        if reason is None:
            order = order_head(scores, head["fused_rank"].to_numpy(), head["doc_id"].to_numpy())
            out.loc[: len(head) - 1, "score"] = scores
            for column, values in scored.pair_stats.items():
                out.loc[: len(head) - 1, column] = pd.Series(values, dtype=object).to_numpy()
            out = pd.concat([out.iloc[: len(head)].iloc[order], out.iloc[len(head):]], ignore_index=True)
            out["mode"] = [RERANKED] * len(head) + [FUSED_TAIL] * (len(frame) - len(head))
        else:
            out["mode"] = FUSION_FALLBACK
            out["degraded_reason"] = reason
        out["rank"] = np.arange(1, len(out) + 1, dtype=np.int32)
        finished = time.perf_counter()
        run_parts.append(out)
        latency_rows.append({
            "query_id": query_id,
            "warmup": position < settings.warmup_queries,
            "mode": FUSION_FALLBACK if reason else RERANKED,
            "n_pairs": len(head),
            "cache_hits": scored.cache_hits if scored is not None else 0,
            "replayed_s": scored.replayed_s if scored is not None else 0.0,
            "total_s": finished - started,
            "tokenize_s": scored.tokenize_s if scored is not None else 0.0,
            "forward_s": scored.forward_s if scored is not None else 0.0,
            "sort_s": finished - sort_started,
        })
    run = pd.concat(run_parts, ignore_index=True)[RUN_SCHEMA.names] if run_parts else \
        pd.DataFrame({name: [] for name in RUN_SCHEMA.names})
    check_permutation(candidates, run)
    return run, pd.DataFrame(latency_rows, columns=LATENCY_SCHEMA.names)


def check_permutation(candidates: pd.DataFrame, run: pd.DataFrame) -> None:
    """Fail unless, per query, the run holds exactly the candidate doc ids, ranked 1..n without gaps."""
    expected = candidates[["query_id", "doc_id"]].sort_values(["query_id", "doc_id"]).reset_index(drop=True)
    actual = run[["query_id", "doc_id"]].sort_values(["query_id", "doc_id"]).reset_index(drop=True)
    if not expected.equals(actual):
        merged = expected.merge(actual, how="outer", indicator=True)
        bad = merged[merged["_merge"] != "both"].head(3)
        raise PermutationError(f"run is not a permutation of its candidates; first differences:\n{bad}")
    ranks = run.groupby("query_id")["rank"].agg(["min", "max", "count", "nunique"])
    broken = ranks[(ranks["min"] != 1) | (ranks["max"] != ranks["count"]) | (ranks["nunique"] != ranks["count"])]
    if len(broken):
        raise PermutationError(f"ranks are not 1..n for queries {broken.index[:5].tolist()}")


def run_table(run: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(run, schema=RUN_SCHEMA, preserve_index=False)


def latency_table(latency: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(latency, schema=LATENCY_SCHEMA, preserve_index=False)


def model_seconds(latency: pd.DataFrame) -> pd.Series:
    """Per-query model time: tokenisation and forward of this run plus the replayed compute time of cache hits."""
    return latency["tokenize_s"] + latency["forward_s"] + latency["replayed_s"]


def cold_seconds(latency: pd.DataFrame) -> pd.Series:
    """Per-query latency as if nothing were cached: measured wall time plus the replayed compute time of cache hits."""
    return latency["total_s"] + latency["replayed_s"]


def summarise_latency(latency: pd.DataFrame) -> dict[str, float | int | None]:
    """Per-query latency percentiles (ms) after warm-up, throughput, fallbacks and cache hits of one system.

    Percentiles are of the cold latency (see ``cold_seconds``), so a rerun served from the cache reports what the
    model costs; ``measured_p95_ms`` is what this run actually took."""
    timed = latency[~latency["warmup"] & (latency["mode"] == RERANKED)]
    seconds = cold_seconds(timed).to_numpy()

    def percentile(q: float) -> float | None:
        return float(np.percentile(seconds, q) * 1000) if len(seconds) else None

    return {
        "queries": int(len(latency)),
        "fallbacks": int((latency["mode"] == FUSION_FALLBACK).sum()),
        "cache_hits": int(latency["cache_hits"].sum()),
        "p50_ms": percentile(50),
        "p95_ms": percentile(95),
        "p99_ms": percentile(99),
        "pairs_per_s": float(timed["n_pairs"].sum() / seconds.sum()) if seconds.sum() > 0 else None,
        "measured_p95_ms": float(np.percentile(timed["total_s"], 95) * 1000) if len(timed) else None,
    }
