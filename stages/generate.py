"""DVC stage `generate@<system>`: answer the evaluated queries from the system's selected contexts."""

import argparse

from rerankeval.pipeline import generate
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("system")
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--candidates", required=True)
parser.add_argument("--context", required=True, help="the system's selected contexts")
parser.add_argument("--calibration", required=True, help="the calibrate stage's output")
parser.add_argument("--answers", required=True, help="output: the answers")
parser.add_argument("--timing", required=True, help="output: per-query generation time")
args = parser.parse_args()
run_stage(f"generate@{args.system}",
          lambda: generate.generate(args.system, args.params, args.snapshot, args.candidates, args.context,
                                    args.calibration, args.answers, args.timing))
