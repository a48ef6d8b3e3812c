"""DVC stage `compare`: every system against the baseline, with paired CIs, corrected p-values and a verdict."""

import argparse

from rerankeval.pipeline import compare
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--eval", required=True, help="the evaluate stage's output folder")
parser.add_argument("--runs", required=True, help="run path pattern with {system}")
parser.add_argument("--latencies", required=True, help="latency path pattern with {system}")
parser.add_argument("--latency-measurements", default=None, help="latency measurement path pattern with {system}")
parser.add_argument("--loadtest", default=None, help="the load test result (JSON), read when it ran")
parser.add_argument("--compare", required=True, help="output: the comparison (JSON)")
parser.add_argument("--verdicts", required=True, help="output: the release verdicts (JSON)")
args = parser.parse_args()
run_stage("compare", lambda: compare.run(args.params, args.snapshot, args.eval, args.runs, args.latencies,
                                         args.compare, args.verdicts, args.latency_measurements, args.loadtest))
