"""Stage `latency@<system>`: the system's per-query latency measured on its own (``rerankeval.serving.measure``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.compute as pc

from ..core.errors import ConfigError
from ..core.io import read_table, table_metadata, write_json
from ..data.snapshot import Snapshot, check_provenance, retrieval_inputs
from ..retrieval.freeze import CANDIDATES_SCHEMA
from ..serving.measure import measure_latency
from ..systems import BuildContext, Query, QueryCandidates, build_system, parse_system_config
from .params import Params, load_params


def eval_queries(params: Params, snapshot_dir: str | Path, candidates_path: str | Path,
                 limit: int | None = None) -> tuple[Snapshot, pd.DataFrame, dict[str, Query]]:
    """The evaluated split's candidates (fused order) and queries; the first ``limit`` query ids when given."""
    snapshot = Snapshot(snapshot_dir)
    check_provenance(candidates_path, table_metadata(candidates_path).get("snapshot", {}), retrieval_inputs(snapshot))
    queries = snapshot.queries_of(params.dataset.eval_split).sort_values("query_id")
    if limit is not None:
        queries = queries.head(limit)
    candidates = read_table(candidates_path, CANDIDATES_SCHEMA)
    candidates = candidates.filter(pc.is_in(candidates.column("query_id"), value_set=pc.cast(
        queries["query_id"].tolist(), "string"))).to_pandas().sort_values(["query_id", "fused_rank"], kind="stable")
    labels = [column for column in snapshot.slice_columns if column in queries.columns]
    views = {row["query_id"]: Query(row["query_id"], row["text"], {column: row[column] for column in labels})
             for row in queries.to_dict("records")}
    return snapshot, candidates, views


def heads(candidates: pd.DataFrame, queries: dict[str, Query], depth: int) -> list[QueryCandidates]:
    """Each query's top ``depth`` candidates, in query id order: what one request to the system holds."""
    return [QueryCandidates(queries[query_id], frame.head(depth).reset_index(drop=True))
            for query_id, frame in candidates.groupby("query_id", sort=True)]


def run(system_name: str, params_path: str | Path, snapshot_dir: str | Path, candidates_path: str | Path,
        out_path: str | Path) -> None:
    params = load_params(params_path)
    mapping = params.systems.get(system_name)
    if mapping is None:
        raise ConfigError(f"{params_path}: no system {system_name!r} under `systems`.")
    settings = params.serving.latency
    depth = parse_system_config(system_name, mapping).depth
    snapshot, candidates, queries = eval_queries(params, snapshot_dir, candidates_path,
                                                 settings.queries + settings.warmup_queries)
    system = build_system(system_name, mapping, BuildContext(qrels=snapshot.table("qrels").to_pandas(),
                                                             systems=params.systems))
    result = {"system": system_name, "depth": depth, **measure_latency(system, heads(candidates, queries, depth),
                                                                       settings)}
    write_json(out_path, result)
    print(f"latency[{system_name}]: p95 {result['p95_ms']:.1f} ms, {result['queries']} queries x {result['repeats']} "
          f"rounds "
          f"(p95 by round {', '.join(f'{v:.1f}' for v in result['p95_ms_by_round'])}; load average "
          f"{result['load_average_1m']['before']} -> {result['load_average_1m']['after']})")
