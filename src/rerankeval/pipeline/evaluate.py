"""Stage `evaluate`: per-query metrics of every system, oracle headroom, depth curves and first-stage recall."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from ..core.io import read_table, table_metadata, write_json, write_table
from ..data.snapshot import Snapshot
from ..eval.funnel import depth_curve, first_stage_metrics, means, per_query_metrics
from ..eval.measures import parse_measure
from ..retrieval.candidates import load_candidates
from ..retrieval.freeze import FIRST_STAGE_SCHEMA, RETRIEVERS
from .params import load_params
from .paths import DEPTH_CURVE_FILE, FIRST_STAGE_FILE, PER_QUERY_FILE
from .answers import with_answer_measures
from .runs import load_runs


def run(params_path: str | Path, snapshot_dir: str | Path, candidates_path: str | Path, first_stage_path: str | Path,
        run_pattern: str, eval_dir: str | Path, metrics_path: str | Path, context_pattern: str | None = None,
        answers_pattern: str | None = None) -> None:
    params = load_params(params_path)
    evaluation, split = params.evaluation, params.dataset.eval_split
    measures = [parse_measure(name) for name in evaluation.measures]
    oracle_measures = [parse_measure(name) for name in evaluation.oracle_measures]
    depth_measures = [parse_measure(name) for name in evaluation.depth_measures]
    no_relevant = evaluation.no_relevant

    snapshot = Snapshot(snapshot_dir)
    qrels = snapshot.table("qrels").to_pandas()
    query_ids = snapshot.queries_of(split)["query_id"].tolist()
    runs = load_runs(run_pattern, params.system_names, str(candidates_path))
    per_query = per_query_metrics(runs, qrels, query_ids, measures, oracle_measures, no_relevant=no_relevant)
    if params.rag.measures and context_pattern and answers_pattern:
        per_query = with_answer_measures(per_query, params, snapshot, context_pattern, answers_pattern)
    curve = depth_curve(runs, qrels, query_ids, evaluation.depths, depth_measures, no_relevant=no_relevant)

    own = read_table(first_stage_path, FIRST_STAGE_SCHEMA).to_pandas()
    rankings = {name: own[own["retriever"] == name][["query_id", "doc_id", "rank"]] for name in RETRIEVERS}
    fused = load_candidates(candidates_path, columns=["query_id", "doc_id", "fused_rank"], with_text=False)
    rankings["hybrid"] = fused.rename(columns={"fused_rank": "rank"})
    first_stage = first_stage_metrics(rankings, qrels, query_ids, params.retrieval.top_n, no_relevant=no_relevant)

    eval_dir = Path(eval_dir)
    write_table(eval_dir / PER_QUERY_FILE, pa.Table.from_pandas(per_query, preserve_index=False),
                {"split": split, "no_relevant": no_relevant, "snapshot": snapshot.hashes})
    write_table(eval_dir / DEPTH_CURVE_FILE, pa.Table.from_pandas(curve, preserve_index=False), {"split": split})
    write_table(eval_dir / FIRST_STAGE_FILE, pa.Table.from_pandas(first_stage, preserve_index=False),
                {"split": split})
    metrics = {"queries": len(set(per_query["query_id"])), "systems": means(per_query),
               "first_stage": means(first_stage, key="retriever"),
               "fusion": table_metadata(first_stage_path).get("fusion", {})}
    write_json(metrics_path, metrics)
    headline = str(depth_measures[0] if depth_measures else measures[0])
    for system, values in metrics["systems"].items():
        print(f"evaluate: {system:>12}  {headline} {values[headline]:.4f}")
