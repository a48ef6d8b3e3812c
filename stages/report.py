"""DVC stage `report`: the Markdown report, evaluation.yaml and the plots, from the evaluate and compare outputs."""

import argparse

from rerankeval.pipeline import report
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--eval", required=True)
parser.add_argument("--runs", required=True, help="run path pattern with {system}")
parser.add_argument("--latencies", required=True, help="latency path pattern with {system}")
parser.add_argument("--metrics", required=True)
parser.add_argument("--compare", required=True)
parser.add_argument("--verdicts", required=True)
parser.add_argument("--report", required=True, help="output: report.md")
parser.add_argument("--record", required=True, help="output: evaluation.yaml")
parser.add_argument("--plots", required=True, help="output: the plots folder")
parser.add_argument("--latency-measurements", default=None, help="latency measurement path pattern with {system}")
parser.add_argument("--loadtest", default=None, help="the load test result (JSON)")
parser.add_argument("--answers", help="answers path pattern with {system} (timing_{system} beside it)")
parser.add_argument("--calibration", help="the calibrate stage's output")
parser.add_argument("--sweeps", help="the sweep stage's points (policies on the frontier)")
args = parser.parse_args()
run_stage("report", lambda: report.run(args.params, args.snapshot, args.eval, args.runs, args.latencies, args.metrics,
                                       args.compare, args.verdicts, args.report, args.record, args.plots,
                                       args.latency_measurements, args.loadtest, args.answers, args.calibration,
                                       args.sweeps))
