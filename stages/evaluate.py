"""DVC stage `evaluate`: per-query metrics of every system, oracle headroom, depth curves and first-stage recall."""

import argparse

from rerankeval.pipeline import evaluate
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--candidates", required=True)
parser.add_argument("--first-stage", required=True)
parser.add_argument("--runs", required=True, help="run path pattern with {system}")
parser.add_argument("--out", required=True, help="output folder of the per-query tables")
parser.add_argument("--metrics", required=True, help="output: metric means (JSON)")
parser.add_argument("--contexts", help="selected-context path pattern with {system}")
parser.add_argument("--answers", help="answers path pattern with {system}")
args = parser.parse_args()
run_stage("evaluate", lambda: evaluate.run(args.params, args.snapshot, args.candidates, args.first_stage, args.runs,
                                           args.out, args.metrics, args.contexts, args.answers))
