"""How often interleaving declares a difference where there is none, on many more null pairs than the online stage's
check: the demo's real challenger-baseline pairs (``online.sensitivity.null_check``: each pair an experiment of
``online.null_impressions`` impressions, its sides' labels drawn at random per impression, or its users blind to the
grade), first at the stage's ``online.null_pairs`` (the numbers reports/online.json holds), then at ``--pairs``, where
the simulation's own error is small enough to tell the rate from alpha. Each rate's interval is set against the sign
test's exact size at those pairs (what an unbiased method's rate is: a rate above it is the method's bias, not the
test's) and against alpha. Then the bias check's own error rate (``online.sensitivity.bias_check``): team-draft and
probabilistic interleaving are unbiased by construction where both rankings fill the page (``UNBIASED``; the demo's
lists are far longer than the page), so each of ``--bias-trials`` seeds that calls one biased on some pair is a
false alarm; the check's intervals are simultaneous over the pairs, so the share
should be at most 5%. Run by hand after ``make demo``; nothing here is asserted.

    .venv/bin/python benchmarks/bench_interleaving_null.py --pairs 20000 --bias-trials 100
    .venv/bin/python benchmarks/bench_interleaving_null.py --pairs 20000 --bias-trials 100 record --commit C \\
        --command ... --conditions ... --out results/benchmarks/interleaving_null.yaml
    .venv/bin/python benchmarks/bench_interleaving_null.py --smoke    # 100 pairs of 50 impressions: checks it runs
"""

from __future__ import annotations

import argparse
import time

from scipy import stats

from rerankeval.online.interleaving import METHODS
from rerankeval.online.sensitivity import bias_check, null_check, pair_simulations
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


UNBIASED = ("team_draft", "probabilistic")
"""The methods unbiased by construction where both rankings fill the page: a coin (team-draft's per round,
probabilistic's per position, its drawn pages mirrored) makes every position A's or B's alike."""


def bias_false_alarms(simulations: dict, config, trials: int) -> tuple[dict, float]:
    """Seeds 0..trials-1 of the bias check: how many call an unbiased method (``UNBIASED``) biased on some pair."""
    started = time.perf_counter()
    alarms = dict.fromkeys(UNBIASED, 0)
    for seed in range(trials):
        found = bias_check(simulations, config.model_copy(update={"seed": seed}))
        for method in UNBIASED:
            alarms[method] += any(checked["biased"] for checked in found[method].values())
    rows = []
    for method, count in alarms.items():
        interval = stats.binomtest(count, trials).proportion_ci(0.95, method="exact")
        rows.append([method, trials, count, round(count / trials, 4), f"[{interval.low:.4f}, {interval.high:.4f}]"])
    table = {"title": f"The bias check's false alarms: seeds calling a method unbiased by construction biased on some "
                      f"of the {len(simulations)} pairs ({config.sessions_per_query} sessions of every query each)",
             "columns": ["method", "seeds", "false alarms", "rate", "95% CI (exact)"], "rows": rows}
    return table, time.perf_counter() - started


def _against(low: float, high: float, value: float) -> str:
    """Where the rate's interval lies against ``value``: "above" or "below" it, or "includes" it."""
    return "above" if low > value else "below" if high < value else "includes"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20000, help="null pairs of the large run")
    parser.add_argument("--bias-trials", type=int, default=100, help="seeds of the bias check's false-alarm run")
    parser.add_argument("--smoke", action="store_true", help="100 pairs of 50 impressions: checks the script runs")
    steps = parser.add_subparsers(dest="step")
    add_provenance_arguments(steps.add_parser("record", help="write the results YAML"))
    args = parser.parse_args()
    params = load_params()
    config = params.online
    if args.smoke:
        config = config.model_copy(update={"null_pairs": 100, "null_impressions": 50, "sessions_per_query": 100})
        args.bias_trials = 2
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
    alarms, seconds = bias_false_alarms(simulations, config, args.bias_trials)
    notes.append(f"{args.bias_trials} seeds of the bias check: {seconds:.1f} s")
    print_benchmark(args, "interleaving's false detection rate on seeded null pairs, at the stage's count and at "
                    "a count whose interval separates the rate from alpha; the bias check's false alarms", notes,
                    [table, alarms])


if __name__ == "__main__":
    main()
