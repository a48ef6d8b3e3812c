"""How often interleaving declares a difference where there is none, on many more null pairs than the online stage's
check: the demo's real challenger-baseline pairs (``online.sensitivity.null_check``: each pair an experiment of
``online.null_impressions`` impressions, its sides' labels drawn at random per impression, or its users blind to the
grade), first at the stage's ``online.null_pairs`` (the numbers reports/online.json holds), then at ``--pairs``, where
the simulation's own error is small enough to tell the rate from alpha. Each rate's interval is set against the sign
test's exact size at those pairs (what an unbiased method's rate is: a rate above it is the method's bias, not the
test's) and against alpha. Run by hand after ``make demo``; nothing here is asserted.

    .venv/bin/python benchmarks/bench_interleaving_null.py --pairs 20000
    .venv/bin/python benchmarks/bench_interleaving_null.py --pairs 20000 record --commit C --command ... \\
        --conditions ... --out results/benchmarks/interleaving_null.yaml
    .venv/bin/python benchmarks/bench_interleaving_null.py --smoke    # 100 pairs of 50 impressions: checks it runs
"""

from __future__ import annotations

import argparse
import time

from rerankeval.online.interleaving import METHODS
from rerankeval.online.sensitivity import null_check, pair_simulations
from rerankeval.pipeline.online import sizing_inputs
from rerankeval.pipeline.params import load_params
from rerankeval.report.results_data import add_provenance_arguments, print_benchmark
from rerankeval.workspace.paths import PipelinePaths

NULLS = {"labels": "sides' labels drawn at random per impression (calibration)",
         "grade_blind": "users whose clicks ignore the grade (a method's bias)"}


def null_rows(simulations: dict, config) -> tuple[list[list], float]:
    started = time.perf_counter()
    found = null_check(list(simulations.values()), config)
    seconds = time.perf_counter() - started
    rows = [[method, kind, found["pairs"], found["impressions"], found[method][kind]["detected"],
             found[method][kind]["rate"], f"[{found[method][kind]['low']:.4f}, {found[method][kind]['high']:.4f}]",
             found[method][kind]["exact_size"], _against(found[method][kind]["low"], found[method][kind]["high"],
                                                         found[method][kind]["exact_size"]),
             _against(found[method][kind]["low"], found[method][kind]["high"], config.alpha)]
            for method in METHODS for kind in NULLS]
    return rows, seconds


def _against(low: float, high: float, value: float) -> str:
    """Where the rate's interval lies against ``value``: "above" or "below" it, or "includes" it."""
    return "above" if low > value else "below" if high < value else "includes"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20000, help="null pairs of the large run")
    parser.add_argument("--smoke", action="store_true", help="100 pairs of 50 impressions: checks the script runs")
    steps = parser.add_subparsers(dest="step")
    add_provenance_arguments(steps.add_parser("record", help="write the results YAML"))
    args = parser.parse_args()
    params = load_params()
    config = params.online
    if args.smoke:
        config = config.model_copy(update={"null_pairs": 100, "null_impressions": 50})
    rankings, grades, deltas, baseline, query_ids = sizing_inputs(params, PipelinePaths.load())
    simulations = pair_simulations(rankings, grades, list(deltas), baseline, query_ids, config)
    sizes = [config.null_pairs] if args.smoke else [config.null_pairs, args.pairs]
    rows, notes = [], []
    for pairs in sizes:
        found, seconds = null_rows(simulations, config.model_copy(update={"null_pairs": pairs}))
        rows += found
        notes.append(f"{pairs} null pairs: {seconds:.1f} s")
    columns = ["method", "null", "pairs", "impressions per pair", "detected", "rate", "95% CI (exact)",
               "sign test's exact size", "CI vs exact size", f"CI vs alpha {config.alpha}"]
    table = {"title": f"False detections of the exact two-sided sign test at alpha {config.alpha}: the demo's "
                      f"{len(simulations)} challengers against {baseline}, taken in turn ({', '.join(simulations)}); "
                      + "; ".join(f"{kind}: {what}" for kind, what in NULLS.items()),
             "columns": columns, "rows": rows}
    print_benchmark(args, "interleaving's false detection rate on seeded null pairs, at the stage's count and at "
                    "a count whose interval separates the rate from alpha", notes, [table])


if __name__ == "__main__":
    main()
