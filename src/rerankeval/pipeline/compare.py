"""Stage `compare`: every system against the baseline, with paired CIs, corrected p-values and a verdict."""

from __future__ import annotations

from pathlib import Path

from ..core.io import read_table, write_json
from ..data.snapshot import Snapshot
from ..rerank.latency import summarise_latency
from ..serving.measure import verdict_latencies
from ..stats.comparison import compare, regression_details, relevant_doc_type
from .params import load_params
from .paths import PER_QUERY_FILE
from .runs import load_latencies, load_runs


def run(params_path: str | Path, snapshot_dir: str | Path, eval_dir: str | Path, run_pattern: str,
        latency_pattern: str, compare_path: str | Path, verdicts_path: str | Path,
        measurement_pattern: str | None = None, loadtest_path: str | Path | None = None) -> None:
    """The verdict's latency check reads each system's dedicated measurement (``measurement_pattern``, stage
    `latency`) or the load test's p95 for the system it served (``loadtest_path``); only without those, the
    timings of the quality run (``latency_pattern``), and ``verdicts.json`` says which it read."""
    params = load_params(params_path)
    settings, split = params.compare, params.dataset.eval_split
    rule = settings.release.model_copy(update={"critical_slices": params.dataset.critical_slices})
    snapshot = Snapshot(snapshot_dir)
    per_query = read_table(Path(eval_dir) / PER_QUERY_FILE).to_pandas()
    queries = snapshot.queries_of(split).set_index("query_id")
    qrels = snapshot.table("qrels").to_pandas()
    slices = queries[snapshot.slice_columns].copy()
    doc_type = relevant_doc_type(qrels, snapshot.table("corpus").to_pandas().set_index("doc_id")["metadata"])
    if doc_type is not None:
        slices["relevant_doc_type"] = doc_type.reindex(slices.index)

    warmup = params.evaluation.warmup_queries
    latency = {system: summarise_latency(frame, warmup)["p95_ms"]
               for system, frame in load_latencies(latency_pattern, params.system_names).items()}
    sources = dict.fromkeys(latency, "the quality run's timings (no dedicated measurement given)")
    if measurement_pattern is not None:
        latency, sources = verdict_latencies(measurement_pattern, loadtest_path, params.system_names)
    result, verdicts = compare(per_query, slices, settings, rule, latency)
    verdicts["latency_source"] = sources
    runs = load_runs(run_pattern, params.system_names)
    result["worst_regressions"] = regression_details(result["comparisons"], runs, qrels, queries["text"].to_dict(),
                                                     settings.baseline, rule.primary_metric)
    result["split"] = split
    write_json(compare_path, result)
    write_json(verdicts_path, verdicts)
    for system, verdict in verdicts["verdicts"].items():
        print(f"compare: {system:>12} vs {settings.baseline}: {verdict['decision']}")
