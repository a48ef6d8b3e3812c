"""DVC stage `evaluate`: per-query metrics of every system, oracle headroom, depth curves and first-stage recall."""

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rerankeval.candidates import CANDIDATES_SCHEMA, FIRST_STAGE_SCHEMA
from rerankeval.evaluation import depth_curve, means, per_query_metrics
from rerankeval.io import ContractError, read_table, sha256_file, table_metadata, write_json, write_table
from rerankeval.layout import (CANDIDATES, EVAL_DIR, FIRST_STAGE, REPORTS_DIR, SNAPSHOT_DIR, load_params,
                               run_path)
from rerankeval.eval.measures import parse_measure
from rerankeval.eval import evaluate
from rerankeval.rerank import RUN_SCHEMA
from rerankeval.snapshot import Snapshot


def first_stage_measures(top_n: int) -> list:
    return [parse_measure(name) for name in (f"Success@{top_n}", f"R@{top_n}", "nDCG@10", "RR@10")]


def main() -> None:
    params = load_params()
    evaluation, split = params["evaluation"], params["dataset"]["eval_split"]
    measures = [parse_measure(name) for name in evaluation["measures"]]
    oracle_measures = [parse_measure(name) for name in evaluation["oracle_measures"]]
    depth_measures = [parse_measure(name) for name in evaluation["depth_measures"]]
    no_relevant = evaluation["no_relevant"]

    snapshot = Snapshot(SNAPSHOT_DIR)
    qrels = snapshot.table("qrels").to_pandas()
    query_ids = snapshot.table("queries").filter(pc.field("split") == split).column("query_id").to_pylist()
    candidates_sha256 = sha256_file(CANDIDATES)
    runs = {}
    for system in params["system_names"]:
        path = run_path(system)
        recorded = table_metadata(path).get("candidates_sha256")
        if recorded != candidates_sha256:
            raise ContractError(f"{path}: reranked candidates {str(recorded)[:12]}, but {CANDIDATES} is now "
                                f"{candidates_sha256[:12]}. Fix: `dvc repro` re-runs the stale rerank stages.")
        runs[system] = read_table(path, RUN_SCHEMA).to_pandas()

    per_query = per_query_metrics(runs, qrels, query_ids, measures, oracle_measures, no_relevant=no_relevant)
    curve = depth_curve(runs, qrels, query_ids, evaluation["depths"], depth_measures,
                        lambda depth: [parse_measure(f"CandidateRecall@{depth}"), parse_measure(f"Coverage@{depth}")],
                        no_relevant=no_relevant)

    top_n = int(params["retrieval"]["top_n"])
    own = read_table(FIRST_STAGE, FIRST_STAGE_SCHEMA).to_pandas()
    fused = read_table(CANDIDATES, CANDIDATES_SCHEMA).to_pandas()[["query_id", "doc_id", "fused_rank"]]
    first_stage_runs = {name: own[own["retriever"] == name][["query_id", "doc_id", "rank"]] for name in ("bm25", "dense")}
    first_stage_runs["hybrid"] = fused.rename(columns={"fused_rank": "rank"})
    first_stage = []
    for name, run in first_stage_runs.items():
        values = evaluate(run, qrels, first_stage_measures(top_n), queries=query_ids, no_relevant=no_relevant)
        values.insert(0, "retriever", name)
        first_stage.append(values.rename_axis("query_id").reset_index())
    first_stage_table = pd.concat(first_stage, ignore_index=True)

    write_table(EVAL_DIR / "per_query.parquet", pa.Table.from_pandas(per_query, preserve_index=False),
                {"split": split, "no_relevant": no_relevant, "snapshot": snapshot.hashes})
    write_table(EVAL_DIR / "depth_curve.parquet", pa.Table.from_pandas(curve, preserve_index=False), {"split": split})
    write_table(EVAL_DIR / "first_stage.parquet", pa.Table.from_pandas(first_stage_table, preserve_index=False),
                {"split": split})
    metrics = {
        "queries": len(set(per_query["query_id"])),
        "systems": means(per_query),
        "first_stage": means(first_stage_table, key="retriever"),
    }
    write_json(REPORTS_DIR / "metrics.json", metrics)
    primary = evaluation["primary"]
    for system, values in metrics["systems"].items():
        print(f"evaluate: {system:>12}  {primary} {values[primary]:.4f}")


if __name__ == "__main__":
    main()
