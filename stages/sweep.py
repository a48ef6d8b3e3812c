"""DVC stage `sweep`: policy sweeps (blend weights, routing thresholds, cascade sizes, depths) over stored scores."""

import argparse

from rerankeval.pipeline import sweep
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--candidates", required=True)
parser.add_argument("--runs", required=True, help="run path pattern with {system}")
parser.add_argument("--points", required=True, help="output: one row per policy setting (Parquet)")
args = parser.parse_args()
run_stage("sweep", lambda: sweep.run(args.params, args.snapshot, args.candidates, args.runs, args.points))
