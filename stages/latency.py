"""DVC stage `latency@<system>`: per-query latency measured on its own (warmed up, repeated, nothing cached)."""

import argparse

from rerankeval.pipeline import latency
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("system")
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--candidates", required=True)
parser.add_argument("--out", required=True, help="output: the measurement (JSON)")
args = parser.parse_args()
run_stage(f"latency@{args.system}",
          lambda: latency.run(args.system, args.params, args.snapshot, args.candidates, args.out))
