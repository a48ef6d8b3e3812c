"""DVC stage `rerank@<system>`: one system permutes the frozen candidates of the evaluation split's queries."""

import argparse

from rerankeval.pipeline import rerank
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("system")
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--candidates", required=True)
parser.add_argument("--run", required=True, help="output: the system's run")
parser.add_argument("--latency", required=True, help="output: its per-query latency")
args = parser.parse_args()
run_stage(f"rerank@{args.system}",
          lambda: rerank.run(args.system, args.params, args.snapshot, args.candidates, args.run, args.latency))
