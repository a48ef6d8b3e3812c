"""DVC stage `report`: reports/report.md and the PNG plots, from the evaluate and compare outputs."""

import pandas as pd
import yaml

from rerankeval import plots
from rerankeval import report as md
from rerankeval.cost import (cost_per_query, depth_cost_table, latency_at_depth, pareto_front, token_summary,
                             tokens_per_second)
from rerankeval.evaluation import system_depth
from rerankeval.io import read_json, read_table, table_metadata, write_text
from rerankeval.layout import EVAL_DIR, PLOTS_DIR, REPORTS_DIR, SNAPSHOT_DIR, latency_path, load_params, run_path
from rerankeval.rerank import LATENCY_SCHEMA, RUN_SCHEMA, TIE_BREAK, summarise_latency
from rerankeval.snapshot import Snapshot


def main() -> None:
    params = load_params()
    evaluation, compare_params = params["evaluation"], params["compare"]
    primary = compare_params["release"]["primary_metric"]
    metrics_json = read_json(REPORTS_DIR / "metrics.json")
    compare = read_json(REPORTS_DIR / "compare.json")
    verdicts = read_json(REPORTS_DIR / "verdicts.json")
    snapshot = Snapshot(SNAPSHOT_DIR)
    top_n = int(params["retrieval"]["top_n"])

    curve = read_table(EVAL_DIR / "depth_curve.parquet").to_pandas()
    curve_means = curve.groupby(["system", "depth", "measure"], as_index=False)["value"].mean() \
        .rename(columns={"value": "mean"})
    plots.depth_curve(curve_means, evaluation["depth_measures"][0], PLOTS_DIR / "depth_curve.png")
    per_query = read_table(EVAL_DIR / "per_query.parquet").to_pandas()
    baseline = per_query[per_query["system"] == compare["baseline"]].set_index("query_id")[primary]
    deltas = pd.concat([
        pd.DataFrame({"challenger": system, "delta": frame.set_index("query_id")[primary] - baseline})
        for system, frame in per_query.groupby("system") if system != compare["baseline"]])
    plots.delta_distribution(deltas, primary, PLOTS_DIR / "delta_distribution.png")
    slice_rows = pd.DataFrame([
        {"challenger": c["challenger"], "slice": f"{column}={row['value']}", "delta": c["delta"], "low": c["low"],
         "high": c["high"], "too_small": row["too_small"]}
        for column, rows in compare["slices"].items() for row in rows for c in row["comparisons"]
        if c["metric"] == primary])
    if len(slice_rows):
        plots.slice_deltas(slice_rows, primary, PLOTS_DIR / "slice_deltas.png")

    systems = params["system_names"]
    runs = {system: read_table(run_path(system), RUN_SCHEMA).to_pandas() for system in systems}
    latencies = {system: read_table(latency_path(system), LATENCY_SCHEMA).to_pandas() for system in systems}
    latency = {system: summarise_latency(latencies[system]) for system in systems}
    hourly_price = float(evaluation["hourly_price_usd"])
    costs = {}
    for system in systems:
        seconds = latency_at_depth(runs[system], latencies[system], system_depth(runs[system]))
        costs[system] = {**latency[system], **token_summary(runs[system]),
                         "tokens_per_s": tokens_per_second(runs[system], latencies[system]),
                         "cost_per_1k_queries": cost_per_query(seconds, hourly_price) * 1000}
    quality_measure = evaluation["depth_measures"][0]
    quality = curve_means[curve_means["measure"] == quality_measure][["system", "depth", "mean"]] \
        .rename(columns={"mean": "quality"})
    pool = curve_means[curve_means["measure"].str.startswith("CandidateRecall@")].drop_duplicates("depth")
    quality["candidate_recall"] = quality["depth"].map(dict(zip(pool["depth"], pool["mean"])))
    depth_costs = depth_cost_table(quality[["system", "depth", "candidate_recall", "quality"]], runs, latencies,
                                   hourly_price)
    plots.depth_cost(depth_costs[depth_costs["p95_ms"].notna()], quality_measure, PLOTS_DIR / "depth_cost.png")
    # The oracle is a ceiling, not a configuration one can deploy; depths that change nothing are one point.
    deployable = [system for system in systems if params["systems"][system]["kind"] != "oracle"]
    points = depth_costs[depth_costs["system"].isin(deployable) & depth_costs["p95_ms"].notna()]
    points = points.sort_values("depth").drop_duplicates(["system", "quality", "p95_ms"], keep="first")
    points = points.assign(label=points["system"] + "@" + points["depth"].astype(str)).reset_index(drop=True)
    points["frontier"] = pareto_front(points)
    plots.pareto(points, quality_measure, PLOTS_DIR / "pareto.png")
    environments = {}
    for system in systems:
        described = table_metadata(run_path(system)).get("describe", {})
        if "environment" in described:
            environments[system] = {
                **described["environment"], "model": described["model"], "revision": described["revision"],
                "weights_sha256": (described["weights_sha256"] or "")[:12] or None, "dtype": described["dtype"],
                "peak_rss_mib": round(float(table_metadata(latency_path(system))["peak_rss_mib"]), 1)}
    context = {"dataset": params["dataset"]["name"], "split": compare["split"], "queries": compare["queries"],
               "no_relevant": evaluation["no_relevant"], "snapshot": snapshot.hashes, "retrieval": params["retrieval"],
               "tie_break": TIE_BREAK, "method": compare["method"]}
    text = md.render([
        md.header_section(context),
        md.verdict_section(verdicts),
        md.first_stage_section(metrics_json["first_stage"], top_n),
        md.systems_section(compare, metrics_json, compare_params["metrics"], evaluation["oracle_measures"], top_n),
        md.deltas_section(compare),
        md.depth_section(curve_means, evaluation["depth_measures"][0]),
        md.slices_section(compare, primary),
        md.unjudged_section(compare),
        md.regressions_section(compare, primary),
        md.cost_section(costs, hourly_price),
        md.depth_cost_section(depth_costs, quality_measure),
        md.pareto_section(points, quality_measure),
        md.environment_section(environments),
        md.all_metrics_section(metrics_json),
    ])
    write_text(REPORTS_DIR / "report.md", text)
    write_text(REPORTS_DIR / "evaluation.yaml", yaml.safe_dump(
        md.evaluation_record(params, snapshot.manifest, compare, metrics_json), sort_keys=False, allow_unicode=True))
    print(f"report: {REPORTS_DIR / 'report.md'}")


if __name__ == "__main__":
    main()
