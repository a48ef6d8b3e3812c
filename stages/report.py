"""DVC stage `report`: reports/report.md and the PNG plots, from the evaluate and compare outputs."""

import pandas as pd
import yaml

from rerankeval import plots
from rerankeval import report as md
from rerankeval.io import read_json, read_table, write_text
from rerankeval.layout import EVAL_DIR, PLOTS_DIR, REPORTS_DIR, SNAPSHOT_DIR, latency_path, load_params
from rerankeval.rerank import LATENCY_SCHEMA, TIE_BREAK, summarise_latency
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

    latency = {system: summarise_latency(read_table(latency_path(system), LATENCY_SCHEMA).to_pandas())
               for system in params["system_names"]}
    context = {"dataset": params["dataset"]["name"], "split": compare["split"], "queries": compare["queries"],
               "no_relevant": evaluation["no_relevant"], "snapshot": snapshot.hashes, "retrieval": params["retrieval"],
               "tie_break": TIE_BREAK, "method": compare["method"]}
    text = md.render([
        md.header_section(context),
        md.verdict_section(verdicts),
        md.first_stage_section(metrics_json["first_stage"], top_n),
        md.systems_section(compare, metrics_json, compare_params["metrics"], evaluation["oracle_measures"], top_n),
        md.deltas_section(compare),
        md.depth_section(curve_means, evaluation["depth_measures"][0], latency),
        md.slices_section(compare, primary),
        md.unjudged_section(compare),
        md.regressions_section(compare, primary),
        md.latency_section(latency),
        md.all_metrics_section(metrics_json),
    ])
    write_text(REPORTS_DIR / "report.md", text)
    write_text(REPORTS_DIR / "evaluation.yaml", yaml.safe_dump(
        md.evaluation_record(params, snapshot.manifest, compare, metrics_json), sort_keys=False, allow_unicode=True))
    print(f"report: {REPORTS_DIR / 'report.md'}")


if __name__ == "__main__":
    main()
