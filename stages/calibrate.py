"""DVC stage `calibrate`: fit the generator's calibrated settings (the extractive abstention threshold) on train."""

import argparse

from rerankeval.pipeline import generate
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--candidates", required=True)
parser.add_argument("--out", required=True, help="output: the calibration (JSON)")
args = parser.parse_args()
run_stage("calibrate", lambda: generate.calibrate(args.params, args.snapshot, args.candidates, args.out))
