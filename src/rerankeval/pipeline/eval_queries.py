"""The evaluated split's queries and frozen candidates as requests to a system (for the latency stage and load test)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.io import table_metadata
from ..data.snapshot import Snapshot, check_provenance, retrieval_inputs
from ..retrieval.candidates import load_candidates
from ..systems import Query, QueryCandidates
from .params import Params


def eval_queries(params: Params, snapshot_dir: str | Path, candidates_path: str | Path,
                 limit: int | None = None) -> tuple[Snapshot, pd.DataFrame, dict[str, Query]]:
    """The evaluated split's candidates (fused order) and queries; the first ``limit`` query ids when given."""
    snapshot = Snapshot(snapshot_dir)
    check_provenance(candidates_path, table_metadata(candidates_path).get("snapshot", {}), retrieval_inputs(snapshot))
    queries = snapshot.queries_of(params.dataset.eval_split).sort_values("query_id")
    if limit is not None:
        queries = queries.head(limit)
    candidates = load_candidates(candidates_path, query_ids=queries["query_id"].tolist())  # texts verified
    candidates = candidates.sort_values(["query_id", "fused_rank"], kind="stable")
    labels = [column for column in snapshot.slice_columns if column in queries.columns]
    views = {row["query_id"]: Query(row["query_id"], row["text"], {column: row[column] for column in labels})
             for row in queries.to_dict("records")}
    return snapshot, candidates, views


def heads(candidates: pd.DataFrame, queries: dict[str, Query], depth: int) -> list[QueryCandidates]:
    """Each query's top ``depth`` candidates, in query id order: what one request to the system holds."""
    return [QueryCandidates(queries[query_id], frame.head(depth).reset_index(drop=True))
            for query_id, frame in candidates.groupby("query_id", sort=True)]
