"""DVC stage `loadtest`: the frozen candidates replayed against a served model at several concurrency levels."""

import argparse

from rerankeval.pipeline import loadtest
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--candidates", required=True)
parser.add_argument("--runs", required=True, help="run path pattern with {system} (token counts per request)")
parser.add_argument("--out", required=True, help="output: the load test result (JSON)")
args = parser.parse_args()
run_stage("loadtest", lambda: loadtest.run(args.params, args.snapshot, args.candidates, args.out, args.runs))
