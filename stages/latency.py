"""DVC stage `latency`: each system's per-query latency measured on its own (warmed up, repeated, nothing cached),
and the load test of a served model when serving.loadtest.enabled is true."""

import argparse

from rerankeval.pipeline import latency
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--candidates", required=True)
parser.add_argument("--runs", required=True, help="run path pattern with {system} (the load test's token counts)")
parser.add_argument("--out", required=True, help="output: the folder of measurements, one JSON per system")
parser.add_argument("--loadtest", required=True, help="output: the load test result (JSON)")
args = parser.parse_args()
run_stage("latency", lambda: latency.run(args.params, args.snapshot, args.candidates, args.runs, args.out,
                                         args.loadtest))
