"""Per-query evaluation of every system from its one scoring pass: metrics, oracle headroom, depth curves, and the
first stage's own rankings. Pure functions over DataFrames; the evaluate stage does the I/O.

Derived columns are named by the measure they derive from: ``oracle:nDCG@10`` (the best reordering of the
candidates) and ``headroom:nDCG@10`` (oracle minus achieved); ``oracle_column`` and ``headroom_column`` spell them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .engine import evaluate, oracle_values
from .measures import Measure, as_measure

ORACLE_PREFIX, HEADROOM_PREFIX = "oracle:", "headroom:"


def oracle_column(measure: Measure | str) -> str:
    return ORACLE_PREFIX + str(as_measure(measure))


def headroom_column(measure: Measure | str) -> str:
    return HEADROOM_PREFIX + str(as_measure(measure))


def pool_measures(depth: int) -> list[Measure]:
    """What the reranking pool at ``depth`` holds: any relevant document (candidate recall), and which share."""
    return [Measure("CandidateRecall", depth), Measure("Coverage", depth)]


def first_stage_measures(top_n: int) -> list[Measure]:
    return [Measure("Success", top_n), Measure("R", top_n), Measure("nDCG", 10), Measure("RR", 10)]


def depth_run(run: pd.DataFrame, depth: int) -> pd.DataFrame:
    """The run as if only the top ``depth`` fused candidates had been reranked: those ordered by the system's score
    (tie-break: fused rank, then doc id), then the rest in fused order. Unscored (NaN) rows keep fused order."""
    head = (run["fused_rank"] <= depth).to_numpy()
    scores = run["score"].to_numpy(dtype=np.float64)
    scored = head & ~np.isnan(scores)
    primary = np.where(scored, -np.nan_to_num(scores, nan=0.0, neginf=-np.finfo(np.float64).max), np.inf)
    order = np.lexsort((run["doc_id"].to_numpy(), run["fused_rank"].to_numpy(), primary, ~head,
                        run["query_id"].to_numpy()))
    out = run.iloc[order][["query_id", "doc_id", "fused_rank"]].reset_index(drop=True)
    out["rank"] = out.groupby("query_id", sort=False).cumcount().to_numpy(dtype=np.int64) + 1
    return out


def system_depth(run: pd.DataFrame) -> int:
    """The deepest fused rank the system scored (the depth its scores support)."""
    scored = run.loc[run["score"].notna(), "fused_rank"]
    return int(scored.max()) if len(scored) else 0


def per_query_metrics(runs: Mapping[str, pd.DataFrame], qrels: pd.DataFrame, queries: Sequence[str],
                      measures: Sequence[Measure], oracle_measures: Sequence[Measure], *,
                      no_relevant: str) -> pd.DataFrame:
    """One row per (system, query): every measure, plus the oracle value and headroom of each oracle measure."""
    if not runs:
        raise ValueError("no system runs to evaluate")
    candidates = next(iter(runs.values()))[["query_id", "doc_id", "fused_rank"]]
    oracle = oracle_values(candidates, qrels, list(oracle_measures), queries=queries, no_relevant=no_relevant)
    frames = []
    for system, run in runs.items():
        # One pass for every measure; the oracle measures' achieved values give the headroom.
        achieved = evaluate(run[["query_id", "doc_id", "rank", "fused_rank"]], qrels,
                            list(dict.fromkeys([*measures, *oracle_measures])), queries=queries,
                            no_relevant=no_relevant)
        values = achieved[[str(measure) for measure in dict.fromkeys(measures)]].copy()
        for measure in oracle_measures:
            name = str(measure)
            values[oracle_column(measure)] = oracle[name]
            values[headroom_column(measure)] = oracle[name] - achieved[name].reindex(oracle.index)
        values.insert(0, "system", system)
        frames.append(values.rename_axis("query_id").reset_index())
    return pd.concat(frames, ignore_index=True)


def depth_curve(runs: Mapping[str, pd.DataFrame], qrels: pd.DataFrame, queries: Sequence[str],
                depths: Sequence[int], measures: Sequence[Measure], *, no_relevant: str,
                after: Mapping[str, Callable[[pd.DataFrame], pd.DataFrame]] | None = None) -> pd.DataFrame:
    """Long table (system, depth, measure, query_id, value) for each depth the system's scores support, with the
    reranking pool's measures (``pool_measures``) at that depth. ``after``: per system, a rule its rerank stage applied
    to its order after its scores (``outdated: demote``), applied to each depth's order too."""
    frames = []
    for system, run in runs.items():
        supported = system_depth(run)
        rule = (after or {}).get(system)
        for depth in depths:
            if depth > supported:
                continue
            ranked = depth_run(run, depth)
            values = evaluate(rule(ranked) if rule else ranked, qrels, [*measures, *pool_measures(depth)],
                              queries=queries, no_relevant=no_relevant)
            long = values.rename_axis("query_id").reset_index().melt(id_vars="query_id", var_name="measure")
            long.insert(0, "depth", depth)
            long.insert(0, "system", system)
            frames.append(long)
    columns = ["system", "depth", "measure", "query_id", "value"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def first_stage_metrics(rankings: Mapping[str, pd.DataFrame], qrels: pd.DataFrame, queries: Sequence[str],
                        top_n: int, *, no_relevant: str) -> pd.DataFrame:
    """One row per (retriever, query) of each first-stage ranking's own top ``top_n`` (columns query_id, doc_id,
    rank): candidate recall, coverage, nDCG@10 and RR@10."""
    frames = []
    for name, run in rankings.items():
        values = evaluate(run, qrels, first_stage_measures(top_n), queries=queries, no_relevant=no_relevant)
        values.insert(0, "retriever", name)
        frames.append(values.rename_axis("query_id").reset_index())
    return pd.concat(frames, ignore_index=True)


def means(per_query: pd.DataFrame, key: str = "system") -> dict[str, dict[str, float]]:
    """Mean of every measure column per system, rounded so reruns give byte-identical metric files."""
    numeric = per_query.drop(columns=["query_id"]).groupby(key, sort=False).mean()
    # NaN values are undefined on that query and left out of the mean; a measure undefined everywhere is null.
    return {system: {name: round(float(value), 6) if np.isfinite(value) else None for name, value in row.items()}
            for system, row in numeric.iterrows()}


def measure_rows(curve_means: pd.DataFrame, measures: Iterable[Measure]) -> pd.DataFrame:
    """The rows of a depth-curve table whose measure is one of ``measures``."""
    return curve_means[curve_means["measure"].isin({str(measure) for measure in measures})]
