"""DVC stage `freeze`: BM25 + dense first stage fused with RRF; the top-N per query frozen, each passage text once."""

import argparse

from rerankeval.pipeline import freeze
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--candidates", required=True, help="output: the frozen candidates (passages by sha256)")
parser.add_argument("--passages", required=True, help="output: each distinct passage text once")
parser.add_argument("--first-stage", required=True, help="output: each retriever's own top-N")
args = parser.parse_args()
run_stage("freeze", lambda: freeze.run(args.params, args.snapshot, args.candidates, args.first_stage, args.passages))
