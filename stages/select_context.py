"""DVC stage `select@<system>` (not named select.py, which would shadow the standard library module): the context
each query's answer is generated from, chosen from the system's ranking."""

import argparse

from rerankeval.pipeline import select
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("system")
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--candidates", required=True)
parser.add_argument("--runs", required=True, help="run path pattern with {system}")
parser.add_argument("--context", required=True, help="output: the system's selected contexts")
args = parser.parse_args()
run_stage(f"select@{args.system}",
          lambda: select.run(args.system, args.params, args.snapshot, args.candidates, args.runs, args.context))
