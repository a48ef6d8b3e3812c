"""DVC stage `compare`: every system against the baseline, with paired CIs, corrected p-values and a verdict."""

import pyarrow.compute as pc

from rerankeval.comparison import CompareSettings, compare, regression_details, relevant_doc_type
from rerankeval.io import read_table, write_json
from rerankeval.layout import EVAL_DIR, REPORTS_DIR, SNAPSHOT_DIR, latency_path, load_params, run_path
from rerankeval.rerank import LATENCY_SCHEMA, RUN_SCHEMA, summarise_latency
from rerankeval.snapshot import Snapshot
from rerankeval.verdict import ReleaseRule

def p95_ms(system: str) -> float | None:
    """p95 per-query latency after warm-up (None when no query was reranked after warm-up)."""
    return summarise_latency(read_table(latency_path(system), LATENCY_SCHEMA).to_pandas())["p95_ms"]


def main() -> None:
    params = load_params()
    settings = CompareSettings.from_params(params["compare"])
    # Slice labels are compared as strings (a YAML `value: 2` must match the label "2").
    critical = [{**spec, **({"value": str(spec["value"])} if spec.get("value") is not None else {})}
                for spec in params["dataset"].get("critical_slices") or []]
    rule = ReleaseRule.from_dict({**params["compare"]["release"], "critical_slices": critical})
    split = params["dataset"]["eval_split"]
    snapshot = Snapshot(SNAPSHOT_DIR)
    per_query = read_table(EVAL_DIR / "per_query.parquet").to_pandas()
    queries = snapshot.table("queries").filter(pc.field("split") == split).to_pandas().set_index("query_id")
    qrels = snapshot.table("qrels").to_pandas()
    slices = queries[snapshot.slice_columns].copy()
    doc_type = relevant_doc_type(qrels, snapshot.table("corpus").to_pandas().set_index("doc_id")["metadata"])
    if doc_type is not None:
        slices["relevant_doc_type"] = doc_type.reindex(slices.index)

    latency = {system: p95_ms(system) for system in params["system_names"]}
    result, verdicts = compare(per_query, slices, settings, rule, latency)
    runs = {system: read_table(run_path(system), RUN_SCHEMA).to_pandas() for system in params["system_names"]}
    result["worst_regressions"] = regression_details(result["comparisons"], runs, qrels, queries["text"].to_dict(),
                                                     settings.baseline, rule.primary_metric)
    result["split"] = split
    write_json(REPORTS_DIR / "compare.json", result)
    write_json(REPORTS_DIR / "verdicts.json", verdicts)
    for system, verdict in verdicts["verdicts"].items():
        print(f"compare: {system:>12} vs {settings.baseline}: {verdict['decision']}")


if __name__ == "__main__":
    main()
